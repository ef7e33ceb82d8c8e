#!/bin/sh
# The image's entry point: one role per container (docker/compose.yml), or any command.
#   web       gunicorn on quire.wsgi, static files through WhiteNoise
#   worker    a Celery worker (QUIRE_WORKER_QUEUES, default all three: celery,embed,models)
#   beat      Celery beat (the reaper that queues again the chunks of dead workers)
#   migrate   apply migrations once, under a lock (manage.py migrate_locked)
#   manage    manage.py with the remaining arguments, e.g. `manage createsuperuser`
set -eu
role=${1:-web}
[ $# -gt 0 ] && shift
case "$role" in
  web)
    # Threads serve while other requests wait on the database; workers use the cores.
    # Each worker loads the index and the text encoder before its first request (quire/gunicorn_hooks.py).
    exec gunicorn quire.wsgi --config python:quire.gunicorn_hooks \
      --bind "0.0.0.0:${PORT:-8000}" \
      --workers "${GUNICORN_WORKERS:-4}" \
      --threads "${GUNICORN_THREADS:-4}" \
      --timeout "${GUNICORN_TIMEOUT:-120}" \
      --max-requests 2000 --max-requests-jitter 200 \
      --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
      --access-logfile - "$@"
    ;;
  worker)
    exec celery -A quire worker --loglevel "${LOG_LEVEL:-INFO}" \
      --queues "${QUIRE_WORKER_QUEUES:-celery,embed,models}" \
      --concurrency "${CELERY_CONCURRENCY:-2}" "$@"
    ;;
  beat)
    # The schedule is one interval task: nothing worth keeping across restarts.
    exec celery -A quire beat --loglevel "${LOG_LEVEL:-INFO}" --schedule /tmp/celerybeat-schedule "$@"
    ;;
  migrate)
    exec python manage.py migrate_locked "$@"
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
