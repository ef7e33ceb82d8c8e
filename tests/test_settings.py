import os
import subprocess
import sys


def settings_of(**env):
    """Import quire.settings in a fresh interpreter with exactly this environment; return (code, output)."""
    program = (
        "import django; from django.conf import settings; "
        "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER, settings.DEBUG)"
    )
    base = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG"}
    }
    completed = subprocess.run(
        [sys.executable, "-c", program],
        env={**base, "DJANGO_SETTINGS_MODULE": "quire.settings", **env},
        capture_output=True,
        text=True,
    )
    return completed.returncode, completed.stdout + completed.stderr


def test_secret_key_is_required_when_debug_is_off(tmp_path):
    code, output = settings_of(QUIRE_DATA_DIR=str(tmp_path))
    assert code != 0
    assert "SECRET_KEY is not set" in output


def test_embedded_defaults_sqlite_and_no_broker(tmp_path):
    code, output = settings_of(QUIRE_DATA_DIR=str(tmp_path), DEBUG="1")
    assert (code, output.split()) == (0, ["django.db.backends.sqlite3", "True", "True"])


def test_database_url_and_broker_url_switch_to_services(tmp_path):
    code, output = settings_of(
        QUIRE_DATA_DIR=str(tmp_path),
        SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://u:p@db.example:5432/quire",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
    )
    assert (code, output.split()) == (0, ["django.db.backends.postgresql", "False", "False"])
