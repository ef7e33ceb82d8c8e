import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each test runs a command or a kernel tool as its own process

SERVICES = (
    "import django; from django.conf import settings; "
    "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER, settings.DEBUG)"
)
HTTPS = (
    "import django; from django.conf import settings; "
    "print(settings.SECURE_SSL_REDIRECT, settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, "
    "settings.SECURE_HSTS_SECONDS, getattr(settings, 'SECURE_PROXY_SSL_HEADER', None))"
)


def settings_of(program=SERVICES, **env):
    """Run `program` (it prints settings) in a fresh interpreter with exactly this environment; return
    (exit code, output)."""
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
        SECRET_KEY=PRODUCTION["SECRET_KEY"],
        DATABASE_URL="postgres://u:p@db.example:5432/quire",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
    )
    assert (code, output.split()) == (0, ["django.db.backends.postgresql", "False", "False"])


PRODUCTION = {
    "SECRET_KEY": "k5Vq2mH9pXr7Lw3sTz8bNc4dFg6jY1aE0uRiOoPlKhJgQwSxZe",
    "ALLOWED_HOSTS": "quire.example.org",
}


def manage(tmp_path, *arguments, **env):
    # Nothing of the test run's own environment (the browser tests set DJANGO_ALLOW_ASYNC_UNSAFE).
    unset = {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    base = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        env={**base, "DJANGO_SETTINGS_MODULE": "quire.settings", "QUIRE_DATA_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
    )


def test_check_deploy_is_clean_with_the_documented_production_environment(tmp_path):
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_defaults_are_secure_and_each_can_be_turned_off(tmp_path):
    production = {"QUIRE_DATA_DIR": str(tmp_path), **PRODUCTION}
    code, output = settings_of(HTTPS, **production, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")
    assert (code, output.split()) == (0, ["True", "True", "True", "31536000", "('HTTP_X_FORWARDED_PROTO',", "'https')"])
    code, output = settings_of(HTTPS, **production, SECURE_SSL_REDIRECT="0")
    assert (code, output.split()[:2]) == (0, ["False", "True"])


def test_a_short_or_plain_secret_key_is_refused_in_one_line(tmp_path):
    for key in ("short", "a" * 60):
        result = manage(tmp_path, "check", SECRET_KEY=key, ALLOWED_HOSTS="quire.example.org")
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [
            "manage.py: SECRET_KEY is too short or too plain: use at least 50 random characters, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`."
        ]


def test_there_is_no_emailed_password_reset(client):
    assert client.get("/accounts/password_reset/").status_code == 404


CACHE = "from django.conf import settings; print(settings.CACHES['default']['BACKEND'].rsplit('.', 1)[1])"


def test_the_cache_is_shared_redis_when_there_is_a_broker_or_a_cache_url(tmp_path):
    common = {"QUIRE_DATA_DIR": str(tmp_path), "DEBUG": "1"}
    assert settings_of(CACHE, **common)[1].split() == ["LocMemCache"]  # the demo: this process's memory
    assert settings_of(CACHE, CELERY_BROKER_URL="redis://redis:6379/0", **common)[1].split() == ["ForgivingRedisCache"]
    assert settings_of(CACHE, CACHE_URL="redis://cache:6379/1", **common)[1].split() == ["ForgivingRedisCache"]
    code, output = settings_of(CACHE, CACHE_URL="memcached://cache:11211", **common)
    assert code != 0 and "CACHE_URL must be a redis:// URL (got memcached://...)" in output


def test_every_setting_is_in_the_deployment_env_example():
    """docker/.env.example lists every variable quire/settings.py reads (set, or commented with its use)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    source = (root / "quire" / "settings.py").read_text()
    read = set(
        re.findall(
            r'(?:os\.environ\.get|env_or_file|env_bool|env_list|env_int|env_float|env_choice)\("([A-Z_]+)"', source
        )
    )
    example = (root / "docker" / ".env.example").read_text()
    listed = set(re.findall(r"^#? ?([A-Z_]+)=", example, flags=re.MULTILINE))
    # Set by docker/compose.yml itself, or by the image.
    by_compose = {"DATABASE_URL", "CELERY_BROKER_URL", "QUIRE_DATA_DIR", "QUIRE_STATIC_ROOT"}
    assert len(read) > 40 and read - listed - by_compose == set()


def test_a_setting_of_the_wrong_type_stops_start_up_with_one_sentence(tmp_path):
    """A typo in a number or a switch names the variable and what it must be (quire/env.py), as manage.py prints it."""
    common = {"QUIRE_DATA_DIR": str(tmp_path), "DEBUG": "1"}
    for variable, value, said in [
        ("QUIRE_EMBED_BATCH_SIZE", "64x", "QUIRE_EMBED_BATCH_SIZE is '64x': set it to a whole number of 1 or more."),
        ("QUIRE_EMBED_BATCH_SIZE", "0", "QUIRE_EMBED_BATCH_SIZE is '0': set it to a whole number of 1 or more."),
        ("QUIRE_LMM_TIMEOUT", "nan", "QUIRE_LMM_TIMEOUT is 'nan': set it to a number of 0.1 or more."),
        ("QUIRE_MAP_SAMPLE", "²", "QUIRE_MAP_SAMPLE is '²': set it to a whole number of 1 or more."),
        ("DEBUG", "maybe", "DEBUG is 'maybe': set it to 1 or 0 (true/false, yes/no, on/off)."),
        ("QUIRE_SEARCH_DEVICE", "gpu", "QUIRE_SEARCH_DEVICE is 'gpu': set it to auto, cpu or cuda."),
    ]:
        code, output = settings_of(**{**common, variable: value})
        assert code != 0 and said in output, (variable, value, output)
    code, output = settings_of(HTTPS, **{**common, "SECURE_HSTS_SECONDS": " 60 "})
    assert code == 0, output


def test_the_typed_readers_read_what_they_should(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from quire.env import env_bool, env_float, env_int

    monkeypatch.setenv("Q_INT", "12")
    monkeypatch.setenv("Q_FLOAT", "2.5")
    monkeypatch.setenv("Q_OFF", "Off")
    monkeypatch.setenv("Q_BLANK", "  ")
    assert env_int("Q_INT", 1, least=1, most=12) == 12 and env_float("Q_FLOAT", 1.0, least=0) == 2.5
    assert env_bool("Q_OFF", True) is False and env_bool("Q_BLANK", True) is True and env_int("Q_UNSET", 7) == 7
    with pytest.raises(ImproperlyConfigured, match="from 1 to 11"):
        env_int("Q_INT", 1, least=1, most=11)
    with pytest.raises(ImproperlyConfigured, match="a whole number"):
        env_int("Q_FLOAT", 1)
