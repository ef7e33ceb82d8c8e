"""Schemathesis against the API's own OpenAPI schema, with every one of its default checks: no 500, answers and
status codes as the schema says, schema-valid requests accepted and invalid ones refused, credentials that matter.
Bounded (examples per operation, no deadline), as an annotator (session and token authentication) and as staff.

Generated values leave out the NUL character: Quire refuses it in any parameter or field with a 400 and a sentence,
by design (tests/security/test_audit_two.py), which the schema cannot say of every string.
"""

from io import StringIO

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils.crypto import get_random_string
from hypothesis import HealthCheck, given, settings

from annotator.api.tokens import new_token
from annotator.models import Query

pytestmark = pytest.mark.django_db

EXAMPLES = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture
def wsgi_app():
    """Django's WSGI handler, called in-process on the test database: like Django's test client, it
    must not close the database connection at the end of each request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(client, labeling):
    """The API over a collection that can be searched and mapped (labeling: 120 embedded images; its map computed
    here), in the test's own data folder: every route answers from state this test made, whichever tests ran
    before it in this process (under ./dev test's workers the order changes)."""
    call_command("map_layout", stdout=StringIO())
    if not Query.objects.filter(id=1).exists():
        Query.objects.create(id=1, text="Flamingo feeding with its head upside down")
    user = User.objects.create_user("fuzzer", password="pw-fuzzer-1")
    staff = User.objects.create_superuser("staff-fuzzer", "staff@example.org", "pw-staff-fuzzer-1")
    client.force_login(user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schema = schemathesis.openapi.from_dict(document)
    schema.config.generation.update(allow_x00=False)  # NUL: refused by design (the module doc)
    csrf = get_random_string(32)
    return schema, {
        "session": {"Cookie": f"sessionid={client.cookies['sessionid'].value}; csrftoken={csrf}", "X-CSRFToken": csrf},
        "token": {"Authorization": f"Token {new_token(user)}"},
        # Staff reach the routes an annotator is refused (checks drawn, benchmark checks, adjudication): the
        # generated bodies then reach the code that reads them.
        "staff": {"Authorization": f"Token {new_token(staff)}"},
    }


def exercise(operation, headers, calls):
    @EXAMPLES
    @given(case=operation.as_strategy())
    def run(case):
        cache.clear()  # the anonymous rate (60 a minute) counts the checks' requests without credentials
        calls[operation.label] = calls.get(operation.label, 0) + 1
        case.call_and_validate(headers=headers)  # every default check

    run()


@pytest.mark.parametrize("auth", ["session", "token", "staff"])
def test_the_api_keeps_its_schema_and_never_fails(api_schema, wsgi_app, auth):
    schema, headers = api_schema
    schema.app = wsgi_app  # after the fixtures' own requests, which put Django's connection closing back
    operations = list(schema.get_all_operations())
    assert len(operations) >= 10
    failures, calls = [], {}
    for result in operations:
        operation = result.ok()
        try:
            exercise(operation, headers[auth], calls)
        except (Exception, BaseExceptionGroup) as error:  # every operation is run, each failing one reported
            failures.append(f"{operation.label}: {type(error).__name__}: {error}")
    assert not failures, "\n".join(failures)
    print(f"schemathesis {auth}: {sum(calls.values())} requests over {len(calls)} operations, no failure")
    assert len(calls) == len(operations) and sum(calls.values()) >= 5 * len(operations), calls
