"""Finding 3: no anonymous CPU burn, scripts use tokens, the API is throttled, logins are limited."""

import base64
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import MD5PasswordHasher
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()  # throttles count in the cache
    yield
    cache.clear()


@pytest.fixture
def ann():
    return get_user_model().objects.create_user("ann", password="pw-ann-1")


def test_http_basic_is_not_accepted_and_hashes_nothing(client, ann, monkeypatch):
    hashed = []
    original = MD5PasswordHasher.verify
    monkeypatch.setattr(MD5PasswordHasher, "verify", lambda self, *a: hashed.append(1) or original(self, *a))
    for user, password in (("ann", "pw-ann-1"), ("nobody", "guess")):
        header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        response = client.get("/api/queries/", HTTP_AUTHORIZATION=header)
        assert response.status_code in (401, 403)
    assert hashed == []


def test_scripts_use_a_token_that_can_be_replaced_and_revoked(client, ann):
    out = StringIO()
    call_command("api_token", "ann", stdout=out)
    key = out.getvalue().strip()
    assert len(key) == 40
    assert client.get("/api/queries/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    out = StringIO()
    call_command("api_token", "ann", "--new", stdout=out)
    assert client.get("/api/queries/", HTTP_AUTHORIZATION=f"Token {key}").status_code in (401, 403)
    call_command("api_token", "ann", "--revoke", stdout=StringIO())
    assert client.get("/api/queries/", HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}").status_code in (401, 403)
    with pytest.raises(CommandError, match="No user is called 'bob'"):
        call_command("api_token", "bob")


def test_a_user_makes_and_revokes_their_key_on_a_page(client, ann):
    client.force_login(ann)
    assert "You have no API key" in client.get("/accounts/token/").content.decode()
    client.post("/accounts/token/", {"action": "new"})
    page = client.get("/accounts/token/").content.decode()
    assert 'id="api-key"' in page and ann.auth_token.key in page
    client.post("/accounts/token/", {"action": "revoke"})
    assert "You have no API key" in client.get("/accounts/token/").content.decode()


def test_api_requests_are_throttled_per_user(client, ann, monkeypatch):
    monkeypatch.setattr(UserRateThrottle, "rate", "3/minute", raising=False)
    client.force_login(ann)
    answers = [client.get("/api/queries/").status_code for _ in range(5)]
    assert answers == [200, 200, 200, 429, 429]


def test_anonymous_api_requests_are_throttled_before_they_are_refused(client, monkeypatch):
    # DRF checks permissions before throttles: before the fix an anonymous flood got 403 forever.
    monkeypatch.setattr(AnonRateThrottle, "rate", "3/minute", raising=False)
    answers = [client.get("/api/queries/").status_code for _ in range(5)]
    assert answers == [401, 401, 401, 429, 429]  # 401 with WWW-Authenticate: Token (what to send)
    assert client.get("/api/schema/").status_code == 429


def test_wrong_passwords_lock_out_that_user_at_that_address_only(client, ann, settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        assert client.post("/accounts/login/", {"username": "ann", "password": "wrong"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "ann", "password": "wrong"}).status_code == 429
    locked = client.post("/accounts/login/", {"username": "ann", "password": "pw-ann-1"})
    assert locked.status_code == 429 and "failed to log in too many times" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # A colleague at the same address (a lab's NAT) who never failed still logs in.
    bob = get_user_model().objects.create_user("bob", password="pw-bob-1")
    assert client.post("/accounts/login/", {"username": "bob", "password": "pw-bob-1"}).status_code == 302
    assert client.session["_auth_user_id"] == str(bob.pk)


def _count_hashes(monkeypatch) -> list:
    hashed = []
    original = MD5PasswordHasher.verify
    monkeypatch.setattr(MD5PasswordHasher, "verify", lambda self, *a: hashed.append(1) or original(self, *a))
    monkeypatch.setattr(MD5PasswordHasher, "harden_runtime", lambda self, *a: hashed.append(1))
    return hashed


def test_an_address_trying_many_user_names_is_refused_before_hashing(client, ann, settings, monkeypatch):
    settings.AXES_ENABLED = True
    settings.QUIRE_LOGIN_ADDRESS_FAILURE_LIMIT = 4
    hashed = _count_hashes(monkeypatch)
    for name in ("ann", "bob", "cy", "dee"):  # four users, each failing once: no per-user lockout
        assert client.post("/accounts/login/", {"username": name, "password": "guess"}).status_code == 200
    hashes_so_far = len(hashed)
    refused = client.post("/accounts/login/", {"username": "ann", "password": "pw-ann-1"})
    assert refused.status_code == 429
    assert "This address has failed to log in too many times" in refused.content.decode()
    assert len(hashed) == hashes_so_far  # refused before any password was checked
    assert client.post("/admin/login/", {"username": "ann", "password": "pw-ann-1"}).status_code == 429


def test_a_burst_of_attempts_from_one_address_is_refused_before_hashing(client, ann, settings, monkeypatch):
    settings.QUIRE_LOGIN_ATTEMPTS_PER_MINUTE = 3
    hashed = _count_hashes(monkeypatch)
    answers = [client.post("/accounts/login/", {"username": "ann", "password": "x"}).status_code for _ in range(5)]
    assert answers == [200, 200, 200, 429, 429]
    assert len(hashed) == 3
    refused = client.post("/accounts/login/", {"username": "ann", "password": "pw-ann-1"})
    assert "tried to log in too often" in refused.content.decode() and "Wait a minute" in refused.content.decode()
    # Another address is not affected.
    assert (
        client.post("/accounts/login/", {"username": "ann", "password": "pw-ann-1"}, REMOTE_ADDR="10.0.0.9").status_code
        == 302
    )


def test_colleagues_signing_in_behind_one_address_are_not_refused(client, settings):
    """The per-minute limit counted successful sign-ins too: a lab's 21st colleague behind one NAT got 429."""
    settings.QUIRE_LOGIN_ATTEMPTS_PER_MINUTE = 3
    for n in range(6):
        get_user_model().objects.create_user(f"colleague{n}", password=f"pw-colleague-{n}")
    for n in range(6):
        signed_in = Client()
        answer = signed_in.post("/accounts/login/", {"username": f"colleague{n}", "password": f"pw-colleague-{n}"})
        assert answer.status_code == 302, f"colleague {n} was refused"
    wrong = [client.post("/accounts/login/", {"username": "colleague0", "password": "x"}).status_code for _ in range(5)]
    assert wrong == [200, 200, 200, 429, 429]  # guessing is still limited
