import os
import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

# The demo never reaches the network: without this the model hub client retries for
# a minute before saying the weights are not here. It must be set before it is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.test.utils import override_settings

from annotator.demo import (
    DEMO_ADMIN,
    DEMO_ANNOTATOR,
    OVERLAP_TOP,
    TEAM,
    TEAM_PASSWORD,
    build_demo,
    build_team,
    remember_settings,
)
from annotator.models import Query
from search.facade import WARM_UP_AT_START, configured_spec, has_index, prepare_demo_model

DEFAULT_ADDRPORT = "127.0.0.1:8000"


def served_at(addrport: str) -> str:
    """HOST:PORT as the demo serves it (runserver's forms: "9000" or "0.0.0.0:9000"); CommandError saying what to
    write for anything else, before anything is built."""
    host, _, port = addrport.rpartition(":")
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535 or (":" in addrport and not host):
        raise CommandError(f"--addrport is a port (9000) or HOST:PORT (127.0.0.1:9000), not {addrport!r:.60}.")
    return f"{host or '127.0.0.1'}:{int(port)}"


class Command(BaseCommand):
    help = (
        "Build the offline demo (database, demo users, a generated collection and demo queries) "
        "and serve Quire at http://127.0.0.1:8000. Running it again reuses what exists."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-serve", action="store_true", help="build everything and exit")
        parser.add_argument("--images", type=int, default=3000, help="size of a newly generated collection")
        parser.add_argument(
            "--addrport",
            default=DEFAULT_ADDRPORT,
            metavar="[HOST:]PORT",
            help="where to serve the demo (default 127.0.0.1:8000; 9000 for another port on this machine)",
        )
        parser.add_argument(
            "--team",
            action="store_true",
            help="also make a labeling team to try (two annotators, an adjudicator, a staff lead; password "
            f"{TEAM_PASSWORD}) and an overlap sample of each query's top {OVERLAP_TOP} for the two annotators",
        )

    def handle(self, no_serve: bool, images: int, addrport: str, team: bool, **options: Any) -> None:
        address = served_at(addrport)
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write(f"Building the demo under {settings.QUIRE_DATA_DIR} ...")
        result = build_demo(settings.QUIRE_DATA_DIR, images=images)
        self.stdout.write(
            f"Demo collection: {result.images} images, {result.taxa} taxa, {result.queries} demo queries."
        )
        spec, stand_in_reason = prepare_demo_model(settings.QUIRE_DATA_DIR)
        if stand_in_reason:
            self.stdout.write(
                self.style.WARNING(
                    f"{stand_in_reason}\nThe demo uses a small RANDOM-WEIGHT model instead: "
                    "rankings are meaningless until real weights are configured."
                )
            )
        # Recorded in the data directory, where every later command and the server read it.
        path = remember_settings(settings.QUIRE_DATA_DIR, spec if spec != configured_spec() else None)
        self.stdout.write(f"The demo's settings are recorded in {path}; the environment still takes precedence.")
        call_command("embed", model=spec.name, stdout=self.stdout, stderr=self.stderr)
        if not has_index(spec):
            call_command("build_index", model=spec.name, stdout=self.stdout)
        call_command("map_layout", model=spec.name, stdout=self.stdout)  # places only images new since the last
        self.stdout.write(f"Admin login:     {DEMO_ADMIN[0]} / {DEMO_ADMIN[1]}")
        self.stdout.write(f"Annotator login: {DEMO_ANNOTATOR[0]} / {DEMO_ANNOTATOR[1]}")
        if team:
            # The sample is drawn from the ranking of the model just recorded: on a first run that is the random
            # stand-in, which this process's settings (read at start, before the file had it) do not name yet.
            with override_settings(QUIRE_CLIP_MODEL=spec.model, QUIRE_CLIP_PRETRAINED=spec.pretrained):
                added = build_team()
            self.stdout.write(f"The team (password {TEAM_PASSWORD} for each):")
            for member in TEAM:
                self.stdout.write(f"  {member.username:<12} {member.role}")
            self.stdout.write(
                f"Overlap sample: the top {OVERLAP_TOP} of each query's text ranking gets both annotators' blind "
                f"judgments ({added} images added now)."
            )
        first = Query.objects.order_by("id").first()
        start = f"http://{address}/queries/{first.pk}/" if first else f"http://{address}/"
        if no_serve:
            again = "./dev demo" + ("" if addrport == DEFAULT_ADDRPORT else f" --addrport {addrport}")
            self.stdout.write(
                f"The demo is ready. Serve it with `{again}` (or `.venv/bin/python manage.py runserver {address}`) "
                f"and open {start}; run any command against it from this folder, e.g. "
                '`.venv/bin/python manage.py search "flamingo standing on one leg"`.'
            )
            return
        self.stdout.write(self.style.SUCCESS(f"Serving Quire: open {start} (Ctrl+C stops it)."))
        sys.stdout.flush()
        # A fresh process reads the settings the demo recorded (nothing here changes settings in place).
        manage = str(settings.BASE_DIR / "manage.py")
        # It loads the index and the text encoder as it starts (search/apps.py), not on the first search.
        environment = os.environ | {WARM_UP_AT_START: "1"}
        os.execve(sys.executable, [sys.executable, manage, "runserver", address, "--noreload"], environment)
