"""`manage.py migrate_locked`, what the deployment's one-shot migrate service runs."""

import io

import pytest
from django.core.management import call_command
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def test_nothing_pending_says_so_and_releases_its_lock():
    out = io.StringIO()
    call_command("migrate_locked", stdout=out)
    assert "up to date" in out.getvalue()
    if connection.vendor == "postgresql":  # the lock is free again: another process could take it now
        from quire.management.commands.migrate_locked import LOCK_KEY

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
            assert cursor.fetchone()[0] is True
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def test_a_pending_migration_is_applied(django_db_blocker):
    call_command("migrate", "evaluation", "0003", verbosity=0)
    try:
        out = io.StringIO()
        call_command("migrate_locked", stdout=out)
        assert "Applying 1 migrations" in out.getvalue()
        assert "evaluation_scoring" in connection.introspection.table_names()
    finally:
        call_command("migrate", verbosity=0)
