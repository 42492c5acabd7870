#!/usr/bin/env python
"""Django's command-line utility for the memory service."""
import os
import sys


def reserve_stdout_for_mcp() -> None:
    """`mcp_server` over stdio speaks JSON-RPC on stdout: before anything starts (the embedded
    PostgreSQL, logging), keep the real stdout for the protocol and send everything else to stderr."""
    os.environ["MCP_STDOUT_FD"] = str(os.dup(1))
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def main() -> None:
    if sys.argv[1:2] == ["mcp_server"] and "--http" not in sys.argv:
        reserve_stdout_for_mcp()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_project.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
