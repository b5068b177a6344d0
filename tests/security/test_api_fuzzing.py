"""Schemathesis over the live schema, against the WSGI app: no input, valid or not, gets a
server error, a status the schema does not document, or a body that does not match it.

Bounded (a few examples per operation, derandomized so a run is reproducible) for a portal
admin, who may write, and for a member; both through API tokens, as automation calls it.
"""

from __future__ import annotations

import datetime as dt

import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from portal.services.api_tokens import issue_api_token
from portal.wsgi import application

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 8


@pytest.fixture
def _connection_kept_across_requests():
    """Calls into the WSGI app must not close the test's connection (and its transaction), as
    Django's test client also ensures."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.usefixtures("_connection_kept_across_requests")
@pytest.mark.parametrize("persona", ["root", "bob"])
def test_no_generated_request_breaks_the_api_or_its_schema(
    persona, request, mirrored_cluster, settings
):
    user = request.getfixturevalue(persona)
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": None, "anon": None},
    }
    secret = issue_api_token(user=user, name="fuzz", lifetime=dt.timedelta(days=1)).secret
    headers = {"Authorization": f"Bearer {secret}"}
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", application, headers=headers
    )
    failures = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
            @hypothesis.settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            def exercise(case):  # type: ignore[no-untyped-def]
                response = case.call(headers=headers)
                case.validate_response(response, checks=CHECKS)

            try:
                exercise()
            except hypothesis.errors.Unsatisfiable:
                # A ``<namespace>/<name>`` key holds a "/", which no generated path parameter
                # may: these routes get negative cases only (tests/security/test_hostile_input.py
                # sends them hostile keys by hand).
                assert mode is GenerationMode.POSITIVE and "{key}" in operation.path
            except Exception as error:  # noqa: BLE001 - collected, reported together below
                failures.append(f"{operation.label} ({mode.value}): {error}")
    assert not failures, "\n\n".join(failures)
