from django.apps import AppConfig


class QuireConfig(AppConfig):
    """Project-wide commands (migrate_locked) and, in the embedded mode's server, beat (common/beat.py)."""

    name = "quire"

    def ready(self) -> None:
        from common import beat  # settings are read: Django allows it from ready() on

        beat.start()
