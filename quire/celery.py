"""Celery application.

With CELERY_BROKER_URL unset (the embedded mode used by the demo and by a
laptop), tasks run eagerly in the calling process: no Redis is needed and a
job still goes through the same task code. With it set, tasks go through the
broker to separate `celery -A quire worker` processes.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")

app = Celery("quire")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
