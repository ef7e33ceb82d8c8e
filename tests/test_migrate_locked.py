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
    from django.db.migrations.loader import MigrationLoader

    names = sorted(name for app, name in MigrationLoader(connection).graph.nodes if app == "evaluation")
    call_command("migrate", "evaluation", names[-2], verbosity=0)  # the newest evaluation migration undone
    try:
        out = io.StringIO()
        call_command("migrate_locked", stdout=out)
        assert "Applying 1 migrations" in out.getvalue()
        assert f"Applying evaluation.{names[-1]}" in out.getvalue()
    finally:
        call_command("migrate", verbosity=0)
