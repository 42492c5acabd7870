"""The TypeScript SDK (clients/typescript) against the live service, and its types against the
service's OpenAPI schema. The scenarios are tests/node/sdk_scenario.mjs; the type checks
tests/node/typed_usage.ts."""

from __future__ import annotations

import subprocess

import pytest

from memories.keys import api_key_create
from memories.models import KeyRole, MemoryHistory
from tests.node_scenarios import ROOT, SCENARIOS, SDK, build_typescript_sdk, run_scenario


@pytest.fixture
def keys(transactional_db):
    return {"AGENT_KEY": api_key_create(tenant_name="acme").raw_key,
            "REVIEWER_KEY": api_key_create(tenant_name="acme", role=KeyRole.REVIEWER).raw_key,
            "OTHER_KEY": api_key_create(tenant_name="globex").raw_key}


def test_the_typescript_sdk_covers_the_api(live_server, keys):
    build_typescript_sdk()
    checks = run_scenario("sdk_scenario.mjs", "api", env={"MEMORY_URL": live_server.url, **keys})
    assert checks == [
        "each error answer has its class", "retry delays", "save, read and list with cursor pages",
        "search with its filters and score parts", "update, conflict and history",
        "conversations, jobs, session end and reflection", "context block", "the people in a user's life",
        "merge, delete and erase",
        "errors say what to fix", "health and readiness", "reviewers work the queue",
        "tenants stay apart, and the /api/v1 form of the URL works",
        "no server is a transport error after the retries", "the CommonJS build is the same client"]
    assert MemoryHistory.objects.filter(user_id="alice", event="SUPERSEDE").exists()
    assert MemoryHistory.objects.filter(user_id="dan", event="APPROVE").exists()


def test_429_is_retried_after_the_wait_the_service_names(live_server, keys, settings, redis_url):
    settings.RATE_LIMIT_WINDOW_SECONDS, settings.RATE_LIMIT_KEY_REQUESTS = 1, 2
    build_typescript_sdk()
    checks = run_scenario("sdk_scenario.mjs", "ratelimit", env={"MEMORY_URL": live_server.url, **keys})
    assert checks == ["429 is retried after the wait the service names", "then RateLimited carries retryAfter"]


def _tsc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SDK / "node_modules" / ".bin" / "tsc"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=240)


def test_the_sdk_types_are_the_services_openapi_schema(tmp_path):
    """src/schema.ts is what openapi-typescript makes of the schema the service generates now: a
    serializer that changes without `make typescript-schema` fails here, and the SDK must then compile
    against the new types (build_typescript_sdk)."""
    from django.core.management import call_command

    schema_json, generated = tmp_path / "openapi.json", tmp_path / "schema.ts"
    call_command("spectacular", "--format", "openapi-json", "--file", str(schema_json))
    done = subprocess.run(["npm", "run", "--silent", "schema", "--", str(schema_json), "-o", str(generated)],
                          cwd=SDK, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    checked_in = (SDK / "src" / "schema.ts").read_text()
    assert types_of(generated.read_text()) == types_of(checked_in), (
        "clients/typescript/src/schema.ts differs from the service's OpenAPI schema: run `make typescript-schema`, "
        "then check the SDK still compiles and says what changed")


def types_of(declarations: str) -> list[str]:
    """The declarations without their doc comments: a docstring edited in a view is not drift (make
    typescript-schema refreshes the comments too), a field, type or path is."""
    import re

    without_docs = re.sub(r"/\*\*.*?\*/", "", declarations, flags=re.S)
    return [line.strip() for line in without_docs.splitlines() if line.strip()]


@pytest.mark.parametrize("old, new, drifted", [
    ("text: string;", "text: string;", False),
    ("/** @description old words */\ntext: string;", "/** @description new words */\ntext: string;", False),
    ("text: string;", "text: string | null;", True),
    ("text: string;", "text?: string;", True),
    ("text: string;", "text: string;\ntags: string[];", True),
])
def test_what_counts_as_drift(old, new, drifted):
    assert (types_of(old) != types_of(new)) is drifted


def test_an_editor_gets_the_types_right(tmp_path):
    """tests/node/typed_usage.ts compiles against the built declarations, and each misuse marked
    @ts-expect-error in it is an error (a wrong field, enum value or answer type; were the types
    loosened to `any`, those lines would compile and tsc would fail)."""
    build_typescript_sdk()
    done = _tsc("-p", str(SCENARIOS / "tsconfig.json"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_typescript_turn_runs_as_written(live_server, keys):
    build_typescript_sdk()
    checks = run_scenario("readme_turn.mjs", env={"MEMORY_URL": live_server.url, "MEMORY_API_KEY": keys["AGENT_KEY"]})
    assert checks == ["the README's turn runs as written"]
    from reflection.models import ReflectionCycle

    assert ReflectionCycle.objects.filter(user_id="gus", trigger="session_end", session_id="chat-1").exists()
