"""Serve the MCP tools (memories/api/mcp_server.py): over stdio for a desktop agent that spawns
it (`--key`), or over streamable HTTP at http://HOST:PORT/mcp (`--http`; each request brings its key)."""

from __future__ import annotations

import os
import sys
from io import TextIOWrapper

import anyio
from django.core.management.base import BaseCommand, CommandError

from memories.api.mcp_server import build_server, http_config
from memories.keys import api_key_authenticate


class Command(BaseCommand):
    help = "Serve the memory tools over MCP: stdio (--key KEY) or streamable HTTP (--http)."

    def add_arguments(self, parser):
        parser.add_argument("--key", default=os.environ.get("MEMORY_API_KEY", ""),
                            help="the tenant's API key for stdio (default: $MEMORY_API_KEY)")
        parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8001)

    def handle(self, *args, key: str, http: bool, host: str, port: int, **options):
        if http:
            import uvicorn  # only the HTTP transport serves with uvicorn

            self.stderr.write(f"MCP over streamable HTTP at http://{host}:{port}/mcp (Authorization: Bearer KEY)")
            uvicorn.Server(http_config(host=host, port=port)).run()
            return
        if not key or api_key_authenticate(key) is None:
            raise CommandError("--key (or MEMORY_API_KEY) must be a valid, unrevoked API key")
        anyio.run(self._serve_stdio, key)

    async def _serve_stdio(self, key: str) -> None:
        from mcp.server.stdio import stdio_server  # only the stdio transport reads stdin

        # manage.py kept the real stdout for the protocol (MCP_STDOUT_FD); fd 1 now goes to stderr.
        fd = int(os.environ.get("MCP_STDOUT_FD", "1"))
        protocol_out = anyio.wrap_file(TextIOWrapper(os.fdopen(fd, "wb", buffering=0), encoding="utf-8",
                                                     write_through=True))
        protocol_in = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
        server = build_server(raw_key=key)
        async with stdio_server(stdin=protocol_in, stdout=protocol_out) as (read_stream, write_stream):
            await server._mcp_server.run(read_stream, write_stream, server._mcp_server.create_initialization_options())
