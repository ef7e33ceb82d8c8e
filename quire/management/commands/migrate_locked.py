from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# Any constant both sides agree on: the PostgreSQL advisory lock that one `migrate` at a time holds.
LOCK_KEY = 0x5155_4952  # "QUIR"


class Command(BaseCommand):
    help = (
        "Apply pending migrations, one process at a time: containers started together (docker/) wait for "
        "the first instead of migrating at once. Says so and exits quickly when nothing is pending."
    )

    def handle(self, **options: Any) -> None:
        locked = connection.vendor == "postgresql"
        if locked:  # SQLite is one file written by one process: nothing to guard
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        try:
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
            if not pending:
                self.stdout.write("The database is up to date: no migration to apply.")
                return
            self.stdout.write(f"Applying {len(pending)} migrations ...")
            call_command("migrate", interactive=False, verbosity=options["verbosity"], stdout=self.stdout)
        finally:
            if locked:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
