"""JavaScript agents' clients, unchanged, against the live service (versions: tests/node/package-lock.json):
Mem0's npm client `mem0ai`, Mem0's Vercel AI SDK provider `@mem0/vercel-ai-provider` (with a scripted
OpenAI-compatible model, tests/fake_openai.py), and the official MCP TypeScript SDK's client over
streamable HTTP. Each scenario is one node script (tests/node/*_scenario.mjs) reporting its checks."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn

from memories.api.mcp_server import http_app
from memories.keys import api_key_create
from memories.models import MemoryHistory, MemoryItem
from tests.fake_openai import chat_reply
from tests.node_scenarios import run_scenario


@pytest.fixture
def keys(transactional_db):
    return {"AGENT_KEY": api_key_create(tenant_name="acme", can_erase=True).raw_key,
            "OTHER_KEY": api_key_create(tenant_name="globex").raw_key}


def test_mem0_npm_client(live_server, keys):
    checks = run_scenario("mem0_scenario.mjs", env={"MEMORY_URL": live_server.url, **keys})
    assert checks == [
        "construction pings with the key", "add extracts, search finds with score on a 0-1 scale",
        "verbatim add, get, update, history and delete", "getAll filters and pages",
        "batch update and delete, users", "tenants stay apart",
        "deleteAll, deleteUsers and the deprecated deleteUser erase",
        "what this service does not have is a clear error, never a 500"]
    assert MemoryHistory.objects.filter(user_id="alice", event="DELETE").exists()
    assert not MemoryItem.objects.filter(user_id__in=["carol", "dora", "eve"]).exists()


def test_mem0_vercel_ai_provider_with_a_scripted_model(live_server, keys, fake_openai):
    fake_openai.script("/v1/chat/completions", chat_reply("Noted!"), chat_reply("How about a mushroom risotto?"),
                       chat_reply("Lentil curry, then."))
    checks = run_scenario("vercel_scenario.mjs", env={"MEMORY_URL": live_server.url, "MODEL_URL": fake_openai.base_url,
                                                      **keys})
    assert checks == ["a turn adds what the user said", "the next turn's prompt carries the memories",
                      "a streamed turn gets the memories too", "the standalone helpers reach the service"]
    chats = [payload for path, payload in fake_openai.requests if path == "/v1/chat/completions"]
    assert len(chats) == 3
    second, streamed = chats[1]["messages"], chats[2]
    assert second[0]["role"] == "system" and "Porto" in second[0]["content"], second[0]
    assert second[-1]["role"] == "user" and "cook tonight" in str(second[-1]["content"])
    assert streamed["stream"] is True and streamed["messages"][0]["role"] == "system"
    assert "vegetarian" in streamed["messages"][0]["content"].lower()
    assert MemoryItem.objects.filter(user_id="vera", text__icontains="vegetarian").exists()


@pytest.fixture
def mcp_url(transactional_db):
    """The MCP server's streamable HTTP app (as `make mcp` serves it) on a free port, in this process."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(http_app(port=port), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)


def test_mcp_typescript_sdk_over_streamable_http(mcp_url, keys):
    checks = run_scenario("mcp_scenario.mjs", "tools", env={"MCP_URL": mcp_url, **keys})
    assert checks == ["the tools and the resource template are listed", "every tool once", "the memory resource",
                      "bad arguments are tool errors naming the field, and the server keeps answering",
                      "tenants stay apart", "delete"]
    assert MemoryHistory.objects.filter(user_id="node-user", event="DELETE", actor__startswith="api:key-").exists()


def test_mcp_typescript_sdk_meets_the_bad_key_limit(mcp_url, keys, settings):
    settings.RATE_LIMIT_BAD_KEY_REQUESTS = 3
    checks = run_scenario("mcp_scenario.mjs", "bad-keys", env={"MCP_URL": mcp_url, **keys})
    assert checks == ["no key or a wrong one is a 401 the client reports",
                      "an address that keeps sending bad keys is refused with 429; a live key still connects"]
