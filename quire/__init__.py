# The Celery app (quire/celery.py) is imported by common/background.py, which sends every task by name through
# it (settings.QUIRE_CELERY_APP), so a task is always sent through the configured app; `celery -A quire` finds
# it as quire.celery. It is not imported with Django itself: commands that send no task (evaluate, export)
# start 0.25 s sooner without it (bench/eval_bench.py).


from typing import Any


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from .celery import app  # Celery and kombu: only for what queues a job (above)

        return app
    raise AttributeError(f"module 'quire' has no attribute {name!r}")


__all__ = ("celery_app",)
