from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.api.tokens import current_token, new_token, revoke_token


class Command(BaseCommand):
    help = (
        "Print USERNAME's API key for scripts (Authorization: Token <key>), making one if needed. "
        "--new replaces it, --revoke removes it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--new", action="store_true", help="replace the key (the old one stops working)")
        group.add_argument("--revoke", action="store_true", help="remove the key")

    def handle(self, username: str, new: bool, revoke: bool, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user is called {username!r}; create one with `manage.py createsuperuser`.")
        if not user.is_active:
            raise CommandError(f"{username} is deactivated: an API key would not work for them.")
        if revoke:
            removed = revoke_token(user)
            self.stdout.write(f"{username}'s API key was revoked." if removed else f"{username} had no API key.")
            return
        key = (None if new else current_token(user)) or new_token(user)
        self.stdout.write(key)
