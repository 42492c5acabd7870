"""Reflection's MCP tool (registered into memories' MCP server from the app config)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.fastmcp import Context

from memories.api.auth import ApiClient
from memories.api.mcp_server import valid_arguments
from reflection.api import SessionEndSerializer, SessionIdSerializer
from reflection.moments import session_end_request


def end_session_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def end_session(ctx: Context, session_id: str, user_id: str) -> dict:
        """Say the conversation `session_id` with the user ended: the service reflects on what the user
        said in it (traits grow from habits and preferences). Once per session; calling it again returns
        the same cycle."""
        def work(caller: ApiClient) -> dict:
            data = valid_arguments(SessionEndSerializer, {"user_id": user_id})
            session = valid_arguments(SessionIdSerializer, {"session_id": session_id})["session_id"]
            cycle, queued = session_end_request(tenant=caller.tenant, user_id=data["user_id"], session_id=session)
            return {"cycle_id": cycle.pk, "status": cycle.status, "trigger": cycle.trigger, "queued": queued}
        return await call(ctx, work)
    return end_session

