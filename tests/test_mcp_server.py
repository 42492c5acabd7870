"""The MCP server, driven by the official `mcp` client over both transports."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from memories.api.mcp_server import body_problem, http_config
from memories.keys import api_key_create
from memories.models import MemoryHistory, MemoryItem
from tests.conftest import run_async

TOOLS = {"add_memory", "search_memories", "get_context", "list_memories", "delete_memory", "list_people",
         "get_person", "end_session"}


def _payload(result) -> dict:
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


async def _scenario(session: ClientSession, user: str) -> None:
    """Every tool once, then bad arguments: each an MCP error, and the server keeps answering."""
    await session.initialize()
    assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS

    saved = _payload(await session.call_tool("add_memory", {"user_id": user, "text": "Alex keeps bees in Porto."}))
    assert saved["operation"] == "ADD"
    memory_id = saved["memory"]["id"]
    extracted = _payload(await session.call_tool("add_memory", {"user_id": user, "session_id": "chat-1", "messages": [
        {"role": "user", "content": "I'm a vegetarian since 2019."},
        {"role": "assistant", "content": "Got it."}]}))
    assert extracted["status"] == "done" and any(op["operation"] == "ADD" for op in extracted["operations"])
    ended = _payload(await session.call_tool("end_session", {"user_id": user, "session_id": "chat-1"}))
    assert ended["trigger"] == "session_end" and ended["queued"] is True
    again = _payload(await session.call_tool("end_session", {"user_id": user, "session_id": "chat-1"}))
    assert again["cycle_id"] == ended["cycle_id"] and again["queued"] is False  # at most one per session

    found = _payload(await session.call_tool("search_memories", {"user_id": user, "query": "bees Porto", "limit": 3}))
    assert found["results"][0]["id"] == memory_id and "semantic" in found["results"][0]["scores"]
    assert found["results"][0]["matched_keywords"] == ["bees", "Porto"] and found["degraded"] == []
    assert found["results"][0]["preview"] == "Alex keeps bees in Porto." and "turns" not in found["results"][0]
    assert found["total_count"] >= 1 and found["groups"][0]["memory_ids"][0] == memory_id
    keyed = _payload(await session.call_tool("search_memories", {
        "user_id": user, "query": "what does Alex keep?", "keywords": ["bees"], "mode": "keyword",
        "time_range_days": 7, "include_turns": True}))
    assert [r["id"] for r in keyed["results"]] == [memory_id] and keyed["results"][0]["turns"] == []
    turns = _payload(await session.call_tool("search_memories", {"user_id": user, "query": "vegetarian",
                                                                 "include_turns": True}))
    assert turns["results"][0]["turns"][0]["content"] == "I'm a vegetarian since 2019."
    context = _payload(await session.call_tool("get_context", {"user_id": user, "query": "Where are the bees?"}))
    assert "bees" in context["context"]
    listed = _payload(await session.call_tool("list_memories", {"user_id": user, "limit": 1}))
    assert len(listed["results"]) == 1 and listed["next_before"]
    rest = _payload(await session.call_tool("list_memories", {"user_id": user, "before": listed["next_before"]}))
    assert {m["id"] for m in listed["results"] + rest["results"]} >= {memory_id}

    told = _payload(await session.call_tool("add_memory", {"user_id": user, "session_id": "chat-2", "messages": [
        {"role": "user", "content": "My mum Sheila lives in Leeds."}]}))
    assert told["status"] == "done"
    people = _payload(await session.call_tool("list_people", {"user_id": user}))
    assert people["user_id"] == user and people["people"][0]["kind"] == "user"
    mum = next(p for p in people["people"] if p["relation"] == "mother")
    assert mum["name"] == "Sheila" and mum["kind"] == "person" and mum["relation_word"] == "mum"
    assert [e["value"] for e in mum["edges"] if e["predicate"] == "lives_in"] == ["Leeds"]
    only = _payload(await session.call_tool("list_people", {"user_id": user, "kind": "person"}))
    assert mum["id"] in {p["id"] for p in only["people"]} and {p["kind"] for p in only["people"]} == {"person"}
    page = _payload(await session.call_tool("get_person", {"user_id": user, "person_id": mum["id"]}))
    assert page["id"] == mum["id"] and page["status"] == "active" and page["relation"] == "mother"
    assert ("lives_in", "Leeds") in {(e["predicate"], e["value"]) for e in page["edges_history"]}
    assert {"facts_history", "history", "connected"} <= set(page)

    resource = await session.read_resource(f"memory://{memory_id}")
    assert json.loads(resource.contents[0].text)["text"] == "Alex keeps bees in Porto."

    deleted = _payload(await session.call_tool("delete_memory", {"memory_id": memory_id}))
    assert deleted["operation"] == "DELETE"

    for name, arguments, named in [
        ("search_memories", {"user_id": user, "query": "x", "limit": 0}, "limit"),
        ("search_memories", {"query": "x"}, "user_id"),
        ("search_memories", {"user_id": user, "query": "x", "keywords": ["x"], "mode": "semantic"}, "keywords"),
        ("search_memories", {"user_id": user, "query": "x", "time_range_days": 0}, "time_range_days"),
        ("add_memory", {"user_id": user, "text": "x" * 100_000}, "text"),
        ("add_memory", {"user_id": "bad\u200bid", "text": "hello"}, "user_id"),
        ("delete_memory", {"memory_id": "not-a-uuid"}, "not found"),
        ("get_person", {"user_id": user, "person_id": "not-a-uuid"}, "not found"),
        ("get_person", {"user_id": "someone-else", "person_id": mum["id"]}, "not found"),
        ("list_people", {"user_id": user, "kind": "robot"}, "kind"),
        ("list_people", {"user_id": "bad\u200bid"}, "user_id"),
        ("list_memories", {"user_id": user, "before": "yesterday-ish"}, "before"),
        ("end_session", {"user_id": user, "session_id": "never-held"}, "no session"),
        ("end_session", {"user_id": user, "session_id": "bad\u200bid"}, "session_id"),
        ("no_such_tool", {}, "no_such_tool"),
    ]:
        result = await session.call_tool(name, arguments)
        assert result.isError, (name, arguments)
        assert named in result.content[0].text, result.content[0].text
    still = _payload(await session.call_tool("search_memories", {"user_id": user, "query": "vegetarian"}))
    assert still["results"], "the server still answers after the errors"


@pytest.fixture
def key(transactional_db):
    return api_key_create(tenant_name="acme").raw_key


def test_stdio_as_a_desktop_agent_spawns_it(key):
    from django.db import connection

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_project.test_settings",
           "EMBEDDED_DB_NAME": connection.settings_dict["NAME"]}
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp_server", "--key", key],
                                   env=env, cwd=str(root))

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await _scenario(session, "stdio-user")

    run_async(run)
    assert MemoryHistory.objects.filter(user_id="stdio-user", event="DELETE", actor__startswith="api:key-").exists()


def test_stdio_refuses_to_start_without_a_valid_key(transactional_db):
    import subprocess

    from django.db import connection

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_project.test_settings",
           "EMBEDDED_DB_NAME": connection.settings_dict["NAME"]}
    done = subprocess.run([sys.executable, "manage.py", "mcp_server", "--key", "mk_wrong"], env=env,
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "valid, unrevoked API key" in done.stderr and done.stdout == ""


@pytest.fixture
def http_server(transactional_db):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(http_config(port=port))  # as manage.py mcp_server --http serves it
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)


def test_streamable_http_with_the_key_in_each_request(http_server, key):
    async def run() -> None:
        async with streamablehttp_client(http_server, headers={"Authorization": f"Bearer {key}"}) as (read, write, _), \
                ClientSession(read, write) as session:
            await _scenario(session, "http-user")

    run_async(run)
    assert MemoryItem.objects.filter(user_id="http-user").exists()


def test_streamable_http_limits_bad_keys_as_the_rest_api_does(http_server, key, settings):
    """One check for every door (keys.authenticate_header): an address that keeps sending bad keys is
    refused with a 429 before its next key is looked up, a good key included, until the window passes."""
    settings.RATE_LIMIT_BAD_KEY_REQUESTS = 3
    codes = [httpx.post(http_server, headers={"Authorization": "Bearer mk_wrong",
                                              "Accept": "application/json, text/event-stream"},
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code for _ in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    refused = httpx.post(http_server, headers={"Authorization": "Bearer mk_wrong"}, json={})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1


def test_streamable_http_without_a_valid_key_is_a_401_and_tenants_stay_apart(http_server, key):
    for headers in ({}, {"Authorization": "Bearer mk_wrong"}, {"Authorization": key}):
        answer = httpx.post(http_server, headers={**headers, "Accept": "application/json, text/event-stream"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401 and "Bearer" in answer.json()["detail"]

    other = api_key_create(tenant_name="globex").raw_key

    async def run() -> tuple[dict, bool, dict, bool]:
        async with streamablehttp_client(http_server, headers={"Authorization": f"Bearer {key}"}) as (r, w, _), \
                ClientSession(r, w) as mine:
            await mine.initialize()
            saved = _payload(await mine.call_tool("add_memory", {"user_id": "u", "text": "Acme's secret plan."}))
            _payload(await mine.call_tool("add_memory", {"user_id": "u", "messages": [
                {"role": "user", "content": "My mum Sheila lives in Leeds."}]}))
            mum = next(p for p in _payload(await mine.call_tool("list_people", {"user_id": "u"}))["people"]
                       if p["relation"] == "mother")
        async with streamablehttp_client(http_server, headers={"Authorization": f"Bearer {other}"}) as (r, w, _), \
                ClientSession(r, w) as theirs:
            await theirs.initialize()
            found = _payload(await theirs.call_tool("search_memories", {"user_id": "u", "query": "secret plan"}))
            deleted = await theirs.call_tool("delete_memory", {"memory_id": saved["memory"]["id"]})
            people = _payload(await theirs.call_tool("list_people", {"user_id": "u"}))
            person = await theirs.call_tool("get_person", {"user_id": "u", "person_id": mum["id"]})
        return found, deleted.isError, people, person.isError

    found, refused, people, person_refused = run_async(run)
    assert found["results"] == [] and refused
    assert people["people"] == [] and person_refused


def test_a_tool_answer_is_bounded_like_the_rest_apis(http_server, key, settings):
    """list_memories past API_MAX_RESPONSE_BYTES is a tool error saying how to ask for less."""
    from memories.models import Tenant
    from memories.writing import MemorySpec, memory_create_batch

    memory_create_batch(tenant=Tenant.objects.get(name="acme"), actor="test", specs=[
        MemorySpec(user_id="big", text=f"memory {i} " + "x" * 400) for i in range(30)])
    settings.API_MAX_RESPONSE_BYTES = 8000  # two memories as sent (text and structuredContent): 4.8 kB

    async def run():
        async with streamablehttp_client(http_server, headers={"Authorization": f"Bearer {key}"}) as (r, w, _), \
                ClientSession(r, w) as session:
            await session.initialize()
            return (await session.call_tool("list_memories", {"user_id": "big", "limit": 30}),
                    await session.call_tool("list_memories", {"user_id": "big", "limit": 2}))

    big, small = run_async(run)
    assert big.isError and "API_MAX_RESPONSE_BYTES" in big.content[0].text
    assert len(_payload(small)["results"]) == 2


def test_the_answer_cap_counts_the_bytes_sent(http_server, key, settings):
    """Issue 43: the cap measured json.dumps of the answer, but FastMCP sends it twice (indented text,
    escaped again, and structuredContent): 4.85 MB went out against 4 MB. Under every limit tried, an
    answer that is not an error fits in its limit as the HTTP body that carries it."""
    from memories.models import Tenant
    from memories.writing import MemorySpec, memory_create_batch

    memory_create_batch(tenant=Tenant.objects.get(name="acme"), actor="test", specs=[
        MemorySpec(user_id="wide", text=f"memory {i}: " + "she said \"sushi\" " * 30) for i in range(12)])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {"user_id": "wide", "limit": 12}}}
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    settings.API_MAX_RESPONSE_BYTES = 0
    whole = httpx.post(http_server, headers=headers, json=call)
    sent = len(whole.content)
    answer = json.loads(whole.json()["result"]["content"][0]["text"])
    assert len(answer["results"]) == 12 and len(json.dumps(answer).encode()) < sent * 0.9
    for limit in (sent - 1, (sent + len(json.dumps(answer).encode())) // 2, len(json.dumps(answer).encode()) + 1):
        settings.API_MAX_RESPONSE_BYTES = limit
        reply = httpx.post(http_server, headers=headers, json=call)
        assert reply.json()["result"]["isError"] and "API_MAX_RESPONSE_BYTES" in reply.text, limit
    settings.API_MAX_RESPONSE_BYTES = sent
    assert not httpx.post(http_server, headers=headers, json=call).json()["result"]["isError"]


MALFORMED = [b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000, b"[" * 70,
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_memories","arguments":'
             b'{"user_id":"u","query":' + b"[" * 2000 + b"]" * 2000 + b"}}}",
             b"", b"{", b"[]", b"[1]", b"null", b"1", b'"x"', b"{}", b"\xff\xfe", b'{"jsonrpc":"2.0"}',
             b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', b'{"jsonrpc":"2.0","id":1}',
             b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}', b'{"jsonrpc":"2.0","id":1,"method":1}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":1}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":1}}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":'
             b'{"user_id":[1],"text":{}}}}', b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
             b'{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":1}}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_memories","arguments":'
             b'{"user_id":"u","limit":1e400}}}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":'
             b'{"user_id":"\\u0000","text":"x"}}}',
             b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_memory","arguments":'
             b'{"memory_id":"\\ud800"}}}',  # a lone surrogate quoted back in the tool error was a 500
             b'{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"memory://\\ud800"}}']


def test_malformed_json_rpc_bodies_are_a_4xx_or_an_error_reply_never_a_5xx(http_server, key):
    """Issue 55: three malformed MCP bodies answered HTTP 500, the nested ones (the SDK's parser raised
    RecursionError). Nesting is bounded before the SDK reads the body; every other body is a 4xx, a
    202 (a notification or a response, per the protocol), or a JSON-RPC error reply."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    answers = [(body[:60], httpx.post(http_server, headers=headers, content=body, timeout=60))
               for body in MALFORMED]
    assert all(answer.status_code < 500 for _, answer in answers), [(b, a.status_code) for b, a in answers]
    nested = [answer for _, answer in answers[:4]]
    assert all(a.status_code == 400 and "JSON_MAX_DEPTH" in a.json()["error"]["message"] for a in nested)
    ok = httpx.post(http_server, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert ok.status_code == 200 and ok.json()["result"]["tools"]


@pytest.mark.parametrize(("body", "status"), [(b"[]", None), (b"[" * 64 + b"]" * 64, None), (b"[" * 65, 400),
                                              (b'["' + b"[" * 100 + b'"]', None), (None, 413)])
def test_what_an_mcp_body_may_not_be(body, status):
    found = body_problem(body)
    assert (found[0] if found else None) == status


def test_the_mcp_transport_trusts_forwarding_headers_only_from_trusted_proxies(http_server, key, settings):
    """Issue 55: uvicorn rewrote the client from X-Forwarded-For sent from loopback, so bad keys from
    one client spoofing a new address each time were never limited. Without TRUSTED_PROXIES the header
    is ignored (one client, limited); with loopback trusted, each named client has its own count."""
    settings.RATE_LIMIT_BAD_KEY_REQUESTS = 3

    def codes() -> list[int]:
        return [httpx.post(http_server, headers={"Authorization": "Bearer mk_wrong",
                                                 "X-Forwarded-For": f"203.0.113.{i}",
                                                 "Accept": "application/json, text/event-stream"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code for i in range(5)]

    settings.TRUSTED_PROXIES = []
    assert codes() == [401, 401, 401, 429, 429]
    settings.TRUSTED_PROXIES = ["127.0.0.1/32"]
    assert codes() == [401] * 5
