import os
import sys
from typing import Any

from django.core.management.base import CommandParser

# The demo never reaches the network: without this the model hub client retries for
# a minute before saying the weights are not here. It must be set before it is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.management.base import BaseCommand  # noqa: E402

from annotator.demo import DEMO_ADMIN, DEMO_ANNOTATOR, build_demo, remember_settings  # noqa: E402
from annotator.models import Query  # noqa: E402
from search.facade import WARM_UP_AT_START, configured_spec, has_index, prepare_demo_model  # noqa: E402


class Command(BaseCommand):
    help = (
        "Build the offline demo (database, demo users, a generated collection and demo queries) "
        "and serve Quire at http://127.0.0.1:8000. Running it again reuses what exists."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-serve", action="store_true", help="build everything and exit")
        parser.add_argument("--images", type=int, default=3000, help="size of a newly generated collection")
        parser.add_argument("--addrport", default="127.0.0.1:8000")

    def handle(self, no_serve: bool, images: int, addrport: str, **options: Any) -> None:
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
        first = Query.objects.order_by("id").first()
        start = f"http://{addrport}/queries/{first.pk}/" if first else f"http://{addrport}/"
        if no_serve:
            self.stdout.write(
                f"The demo is ready. Serve it with `./dev demo` (or `.venv/bin/python manage.py runserver`) and "
                f"open {start}; run any command against it from this folder, e.g. "
                '`.venv/bin/python manage.py search "flamingo standing on one leg"`.'
            )
            return
        self.stdout.write(self.style.SUCCESS(f"Serving Quire: open {start} (Ctrl+C stops it)."))
        sys.stdout.flush()
        # A fresh process reads the settings the demo recorded (nothing here changes settings in place).
        manage = str(settings.BASE_DIR / "manage.py")
        # It loads the index and the text encoder as it starts (search/apps.py), not on the first search.
        environment = os.environ | {WARM_UP_AT_START: "1"}
        os.execve(sys.executable, [sys.executable, manage, "runserver", addrport, "--noreload"], environment)
