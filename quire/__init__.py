# The Celery app (quire/celery.py) is imported by every module that defines tasks (search, annotator and
# evaluation's tasks.py), so a task is always sent through the configured app; `celery -A quire` finds it
# as quire.celery. It is not imported with Django itself: commands that send no task (evaluate, export)
# start 0.25 s sooner without it (bench/eval_bench.py).


def __getattr__(name):
    if name == "celery_app":
        from .celery import app

        return app
    raise AttributeError(f"module 'quire' has no attribute {name!r}")


__all__ = ("celery_app",)
