"""Schemathesis against the project's own OpenAPI schema: every operation,
with a valid API key. No 5xx, and every documented response matches its schema."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import response_schema_conformance

from memory_project.wsgi import application
from tests.figures import record

pytestmark = pytest.mark.slow
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application)
CALLS = {"requests": 0, "server_errors": 0}


def not_a_server_error(ctx, response, case):
    CALLS["requests"] += 1
    if response.status_code >= 500:
        CALLS["server_errors"] += 1
        raise AssertionError(f"{case.method} {case.path} -> {response.status_code}: {response.text[:500]}")


@pytest.fixture
def bearer(db):
    # Called straight through WSGI, Django would close the test transaction's
    # connection after each request; its test client disconnects this too.
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from memories.keys import api_key_create
    from memories.writing import MemorySpec, memory_create

    issued = api_key_create(tenant_name="fuzz")
    memory_create(tenant=issued.api_key.tenant, spec=MemorySpec(user_id="alice", text="Alice likes fuzzing."),
                  actor="t")
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield {"Authorization": f"Bearer {issued.raw_key}"}
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors_and_responses_match_the_schema(case, bearer):
    case.call_and_validate(headers=bearer, checks=[not_a_server_error, response_schema_conformance])


@pytest.fixture(scope="module", autouse=True)
def _record_fuzz_figures():
    """Figures after every fuzz case of this module ran, whatever the test order
    (a test that read CALLS passed or failed by where it was scheduled)."""
    yield
    record("fuzz: API requests sent", CALLS["requests"])
    record("fuzz: 5xx responses", CALLS["server_errors"])
