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
        "batch update and delete, users", "tenants stay apart", "deleteAll, deleteUsers and the deprecated deleteUser erase",
        "what this service does not have is a clear error, never a 500"]
    assert MemoryHistory.objects.filter(user_id="alice", event="DELETE").exists()
    assert not MemoryItem.objects.filter(user_id__in=["carol", "dora", "eve"]).exists()
