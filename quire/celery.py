"""Celery application.

With CELERY_BROKER_URL unset (the embedded mode used by the demo and by a
laptop), tasks run eagerly in the calling process: no Redis is needed and a
job still goes through the same task code. With it set, tasks go through the
broker to separate `celery -A quire worker` processes.
"""

import os

from celery import Celery
from django.conf import settings
from kombu import Queue  # type: ignore[attr-defined]  # kombu exports it without naming it in __all__

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")

app = Celery("quire")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in settings.QUIRE_TASK_QUEUES]
app.autodiscover_tasks()
