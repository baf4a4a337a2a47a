"""A real MCP server in-process (FastMCP on mcp 1.x, MCPServer on 2.x) and client sessions for it.

``connected(server)`` runs the server's low-level loop over mcp's own in-memory streams
and yields an initialized ``ClientSession``; leaving it stops the server. ``offline()``
yields a session over streams nobody listens to (anything sent is refused), which is all
a replay needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp
from mcp.shared.memory import create_client_server_memory_streams

NOTES_URI = "notes://today"
NOTES = "buy milk, call Ada"


def _server_class() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2.x

        return MCPServer
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # mcp 1.x

        return FastMCP


def make_server(calls: list[str] | None = None) -> Any:
    """Tools ``add`` and ``explode`` (a failing tool), resource ``notes://today``."""
    # Quiet: the failing tool would otherwise log a rich traceback per call.
    server = _server_class()("rewind-test", log_level="CRITICAL")
    seen = calls if calls is not None else []

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append(f"add({a}, {b})")
        return a + b

    @server.tool()
    def explode(reason: str) -> str:
        """Always fails."""
        seen.append(f"explode({reason})")
        raise ValueError(f"exploded: {reason}")

    @server.resource(NOTES_URI)
    def notes() -> str:
        """Today's notes."""
        seen.append("notes")
        return NOTES

    return server


def _lowlevel(server: Any) -> Any:
    for attr in ("_lowlevel_server", "_mcp_server"):  # 2.x, 1.x
        inner = getattr(server, attr, None)
        if inner is not None:
            return inner
    return server


@asynccontextmanager
async def connected(server: Any) -> AsyncIterator[Any]:
    """An initialized ``ClientSession`` talking to ``server``; the server stops on exit."""
    lowlevel = _lowlevel(server)
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        client_read, client_write = client_streams
        server_read, server_write = server_streams
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: lowlevel.run(server_read, server_write, lowlevel.create_initialization_options()))
            try:
                async with mcp.ClientSession(client_read, client_write) as session:
                    await session.initialize()
                    yield session
            finally:
                tg.cancel_scope.cancel()


@asynccontextmanager
async def offline() -> AsyncIterator[Any]:
    """A ``ClientSession`` with no server at all: the other ends of its streams are closed."""
    to_server, nowhere = anyio.create_memory_object_stream[Any](0)
    silence, from_server = anyio.create_memory_object_stream[Any](0)
    await nowhere.aclose()  # a request sent live fails at once instead of hanging
    async with silence, from_server, to_server, mcp.ClientSession(from_server, to_server) as session:
        yield session
