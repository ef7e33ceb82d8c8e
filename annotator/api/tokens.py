"""API tokens for scripts: `Authorization: Token <key>` (DRF's token model: one key per user)."""

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token


def new_token(user: User) -> str:
    """Give `user` a new key (replacing any earlier one, which stops working) and return it."""
    Token.objects.filter(user=user).delete()
    key: str = Token.objects.create(user=user).key
    return key


def revoke_token(user: User) -> bool:
    """Remove the user's key; returns whether there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


def current_token(user: User) -> str | None:
    return Token.objects.filter(user=user).values_list("key", flat=True).first()
