"""The Python SDK (clients/python) has the TypeScript SDK's surface (clients/typescript), and both follow
the service's OpenAPI schema:

- every public method of the TypeScript `MemoryClient` (read from src/client.ts) is a method of the Python
  `MemoryClient` and `AsyncMemoryClient` under its snake_case name, and the other way round;
- each Python method takes the fields its endpoint takes (the TypeScript options types are the schema's own
  request types, so a field the API gains is in the TypeScript SDK at the next `make typescript-schema`);
- each Python answer model names every field of the schema's answer (the TypeScript types are the schema's).

A method or field added to one SDK and not the other fails here, naming it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from memory_client import AsyncMemoryClient, MemoryClient, models

ROOT = Path(__file__).resolve().parent.parent
TS_CLIENT = ROOT / "clients" / "typescript" / "src" / "client.ts"

# Names that differ by more than camelCase -> snake_case: TypeScript name -> Python name (none today).
RENAMED: dict[str, str] = {}
# Python-only methods, and why TypeScript has none.
PYTHON_ONLY = {
    "close": "closes the sync client's httpx connection pool (fetch keeps no pool to close)",
    "aclose": "the async client's close",
}

# Each Python method that sends fields: its endpoint in the OpenAPI schema.
ENDPOINTS = {
    "add": ("post", "/api/v1/memories"),
    "add_batch": ("post", "/api/v1/memories/batch"),
    "get": ("get", "/api/v1/memories/{memory_id}"),
    "list": ("get", "/api/v1/memories"),
    "update": ("patch", "/api/v1/memories/{memory_id}"),
    "delete": ("delete", "/api/v1/memories/{memory_id}"),
    "merge": ("post", "/api/v1/memories/merge"),
    "history": ("get", "/api/v1/memories/{memory_id}/history"),
    "search": ("post", "/api/v1/memories/search"),
    "erase_user": ("delete", "/api/v1/users/{user_id}/memories"),
    "add_conversation": ("post", "/api/v1/conversations"),
    "job": ("get", "/api/v1/jobs/{job_id}"),
    "retry_job": ("post", "/api/v1/jobs/{job_id}/retry"),
    "context": ("post", "/api/v1/context"),
    "review_queue": ("get", "/api/v1/review"),
    "approve": ("post", "/api/v1/review/{candidate_id}/approve"),
    "reject": ("post", "/api/v1/review/{candidate_id}/reject"),
    "traits": ("get", "/api/v1/users/{user_id}/traits"),
    "trait": ("get", "/api/v1/traits/{trait_id}"),
    "reflect": ("post", "/api/v1/users/{user_id}/reflect"),
    "end_session": ("post", "/api/v1/sessions/{session_id}/end"),
    "reflection_cycle": ("get", "/api/v1/reflection-cycles/{cycle_id}"),
    "people": ("get", "/api/v1/users/{user_id}/people"),
    "person": ("get", "/api/v1/users/{user_id}/people/{person_id}"),
    "sessions": ("get", "/api/v1/users/{user_id}/sessions"),
    "session_turns": ("get", "/api/v1/users/{user_id}/sessions/{session_id}/turns"),
    "health": ("get", "/api/v1/health"),
}
# Python parameter -> schema field, where the names differ.
PARAMETER_NAMES = {"memory_ids": "ids", "cursor_url": "cursor"}
# Parameters both SDKs add that are not schema fields: `include_data` (?include=data in both), a page's link.
SDK_PARAMETERS = {"include_data", "cursor_url"}

# Python model -> the schema component it reads, and Python field -> schema field where they differ.
MODELS = {
    "Memory": "Memory", "ScoreParts": "Score", "SearchResult": "SearchResult", "SearchResponse": "SearchResponse",
    "Candidate": "Candidate", "WriteResult": "WriteResult", "Job": "Job", "HistoryEvent": "History",
    "Trait": "TraitDetail", "ContextBlock": "ContextResponse", "Erasure": "Erasure", "ReflectionCycle": "Cycle",
    "Person": "Person", "Session": "Session", "SessionTurn": "SessionTurn",
}
FIELD_NAMES = {("ContextBlock", "context"): "text", ("Erasure", "candidate"): "pending_candidate_id"}


def typescript_methods(source: str) -> set[str]:
    """The public methods of `export class MemoryClient` in the TypeScript source (constructor and private
    ones aside): a declaration at the class's indentation, `name(`, `async name(`, `async *name(`, `name<T>(`."""
    body = source.split("export class MemoryClient {", 1)[1].split("\n}\n", 1)[0]
    found = re.findall(r"^  (?!private |constructor|readonly )(?:async\s+)?(?:\*\s*)?([a-zA-Z]\w*)\s*(?:<[^(\n]*>)?\(",
                       body, re.M)
    return set(found)


def snake(name: str) -> str:
    return RENAMED.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def python_methods(cls: type) -> set[str]:
    return {name for name, value in inspect.getmembers(cls) if not name.startswith("_") and callable(value)}


@pytest.mark.parametrize(("source", "expected"), [
    ("export class MemoryClient {\n  add(userId: string): Promise<X> {\n    return this.helper(1);\n  }\n}\n",
     {"add"}),
    ("export class MemoryClient {\n  async *iterMemories(filters = {}) {}\n  async nextPage<T>(page: Page<T>) {}\n}\n",
     {"iterMemories", "nextPage"}),
    ("export class MemoryClient {\n  constructor(url: string) {}\n  private async send<T>(call: Call) {}\n"
     "  readonly root: string;\n  private url(call: Call): URL {}\n}\nfunction outside() {}\n", set()),
])
def test_the_typescript_methods_are_read_from_the_source(source, expected):
    assert typescript_methods(source) == expected


def test_the_python_clients_have_every_typescript_method_and_no_other():
    typescript = {snake(name): name for name in typescript_methods(TS_CLIENT.read_text())}
    assert len(typescript) > 25, "src/client.ts no longer reads as expected"
    for client in (MemoryClient, AsyncMemoryClient):
        python = python_methods(client) - set(PYTHON_ONLY)
        missing = sorted(f"{typescript[name]} (as {name})" for name in set(typescript) - python)
        extra = sorted(python - set(typescript))
        assert not missing, f"{client.__name__} lacks the TypeScript SDK's {missing}"
        assert not extra, f"{client.__name__} has {extra}, which the TypeScript MemoryClient lacks"
    assert python_methods(MemoryClient) - {"close"} == python_methods(AsyncMemoryClient) - {"aclose"}


@pytest.fixture(scope="module")
def schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _endpoint_fields(schema: dict, method: str, path: str) -> set[str]:
    operation = schema["paths"][path][method]
    fields = {p["name"] for p in operation.get("parameters", [])}
    reference = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    if "$ref" in reference:
        fields |= set(schema["components"]["schemas"][reference["$ref"].rsplit("/", 1)[1]]["properties"])
    return fields


def test_each_python_method_takes_its_endpoints_fields(schema):
    """A field the API takes (the TypeScript SDK's options carry it) is a parameter of the Python method,
    and a Python parameter is a field of the API (or one of the SDKs' own conveniences)."""
    assert set(ENDPOINTS) <= python_methods(MemoryClient)
    for name, (method, path) in ENDPOINTS.items():
        assert path in schema["paths"] and method in schema["paths"][path], f"{name}: no {method} {path}"
        parameters = {PARAMETER_NAMES.get(p, p) for p in inspect.signature(getattr(MemoryClient, name)).parameters
                      if p != "self" and p not in SDK_PARAMETERS}
        fields = _endpoint_fields(schema, method, path) - {PARAMETER_NAMES[p] for p in SDK_PARAMETERS
                                                           if p in PARAMETER_NAMES}
        assert parameters == fields, (f"MemoryClient.{name}: lacks {sorted(fields - parameters)}, "
                                      f"has {sorted(parameters - fields)} that {method.upper()} {path} does not take")


def test_each_python_model_names_every_field_of_its_answer(schema):
    """The TypeScript SDK's answer types are the schema's: every field there is a field of the Python model
    (which keeps the rest in `raw` too)."""
    import dataclasses

    for model, component in MODELS.items():
        named = {f.name for f in dataclasses.fields(getattr(models, model))}
        fields = {FIELD_NAMES.get((model, f), f) for f in schema["components"]["schemas"][component]["properties"]}
        assert fields <= named, (f"memory_client.models.{model} lacks {sorted(fields - named)} of the schema's "
                                 f"{component}: add them (with a default) in clients/python/memory_client/models.py")
