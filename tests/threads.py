"""Threads released together, each on its own database connection: the concurrency tests' one way to race."""

import threading

from django.db import connection


def run_per_image(groups: list[list]) -> list:
    """Run every callable of every group in its own thread; the callables of a group (one image's writers)
    wait at their own barrier and are let go together. Returns what each returned or raised, flattened."""
    results: list = []
    threads = []
    for group in groups:
        barrier = threading.Barrier(len(group))
        for job in group:
            slot = len(results)
            results.append(None)

            def run(job=job, slot=slot, barrier=barrier):
                try:
                    barrier.wait(timeout=60)
                    results[slot] = job()
                except Exception as error:  # reported by the test, not lost in the thread
                    results[slot] = error
                finally:
                    connection.close()

            threads.append(threading.Thread(target=run))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results
