"""A real MCP server in-process (FastMCP on mcp 1.x, MCPServer on 2.x) and client sessions for it.

mcp 1.0 and 1.1 predate FastMCP: there ``LowLevelTools`` offers the same decorators over
the SDK's low-level ``Server``.

``connected(server)`` runs the server's low-level loop over mcp's own in-memory streams
and yields an initialized ``ClientSession``; leaving it stops the server. ``offline()``
yields a session over streams nobody listens to (anything sent is refused), which is all
a replay needs.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import mcp
import mcp.types
from mcp.shared.memory import create_client_server_memory_streams

NOTES_URI = "notes://today"
NOTES = "buy milk, call Ada"


class LowLevelTools:
    """FastMCP's ``tool()``/``resource()``/``prompt()``/``run()`` over mcp 1.0/1.1's low-level ``Server``."""

    def __init__(self, name: str, **_: Any) -> None:
        from mcp.server import Server

        self._mcp_server = server = Server(name)
        self._tools: dict[str, Any] = {}
        self._resources: dict[str, Any] = {}
        self._prompts: dict[str, Any] = {}

        @server.list_tools()
        async def list_tools() -> list[Any]:
            return [
                mcp.types.Tool(
                    name=name,
                    description=fn.__doc__,
                    inputSchema={"type": "object", "properties": {p: {} for p in inspect.signature(fn).parameters}},
                )
                for name, fn in self._tools.items()
            ]

        @server.call_tool()
        async def call_tool(name: str, arguments: dict[str, Any]) -> list[Any]:
            result = self._tools[name](**arguments)  # an exception becomes an isError result
            if inspect.isawaitable(result):
                result = await result
            return [mcp.types.TextContent(type="text", text=str(result))]

        @server.read_resource()
        async def read_resource(uri: Any) -> str:
            return self._resources[str(uri)]()  # an unknown URI becomes a JSON-RPC error

        @server.list_prompts()
        async def list_prompts() -> list[Any]:
            return [
                mcp.types.Prompt(
                    name=name,
                    description=fn.__doc__,
                    arguments=[
                        mcp.types.PromptArgument(name=p, required=True) for p in inspect.signature(fn).parameters
                    ],
                )
                for name, fn in self._prompts.items()
            ]

        @server.get_prompt()
        async def get_prompt(name: str, arguments: dict[str, str] | None) -> Any:
            text = self._prompts[name](**(arguments or {}))
            message = mcp.types.PromptMessage(role="user", content=mcp.types.TextContent(type="text", text=text))
            return mcp.types.GetPromptResult(description=self._prompts[name].__doc__, messages=[message])

    def tool(self) -> Any:
        def register(fn: Any) -> Any:
            self._tools[fn.__name__] = fn
            return fn

        return register

    def prompt(self) -> Any:
        def register(fn: Any) -> Any:
            self._prompts[fn.__name__] = fn
            return fn

        return register

    def resource(self, uri: str) -> Any:
        def register(fn: Any) -> Any:
            self._resources[uri] = fn
            return fn

        return register

    def run(self) -> None:
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            async with stdio_server() as (read, write):
                await self._mcp_server.run(read, write, self._mcp_server.create_initialization_options())

        anyio.run(serve)


def server_class() -> Any:
    """The SDK's high-level server class: MCPServer (2.x), FastMCP (1.2+), or the shim."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2.x

        return MCPServer
    except ImportError:
        pass
    try:
        from mcp.server.fastmcp import FastMCP  # mcp 1.2 and later 1.x

        return FastMCP
    except ImportError:
        return LowLevelTools


def make_server(calls: list[str] | None = None) -> Any:
    """Tools ``add`` and ``explode`` (a failing tool), resource ``notes://today``."""
    # Quiet: the failing tool would otherwise log a rich traceback per call.
    server = server_class()("rewind-test", log_level="CRITICAL")
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


def read_timeout(seconds: float) -> Any:
    """A session's ``read_timeout_seconds``: seconds on mcp 2.x, a ``timedelta`` before."""
    from mcp.shared import exceptions

    return seconds if hasattr(exceptions, "MCPError") else timedelta(seconds=seconds)


@asynccontextmanager
async def connected(server: Any, **session_options: Any) -> AsyncIterator[Any]:
    """An initialized ``ClientSession`` talking to ``server`` (``session_options`` go to the
    session, ``read_timeout_seconds`` say); the server stops on exit."""
    lowlevel = _lowlevel(server)
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        client_read, client_write = client_streams
        server_read, server_write = server_streams
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: lowlevel.run(server_read, server_write, lowlevel.create_initialization_options()))
            try:
                async with mcp.ClientSession(client_read, client_write, **session_options) as session:
                    await session.initialize()
                    yield session
            finally:
                tg.cancel_scope.cancel()


@asynccontextmanager
async def offline(initialize: bool = True) -> AsyncIterator[Any]:
    """An initialized ``ClientSession`` with no server at all: the other ends of its streams
    are closed (a request sent live fails at once instead of hanging). Under a replay its
    ``initialize()`` is answered from the trace, as ``connected()``'s was recorded."""
    to_server, nowhere = anyio.create_memory_object_stream(0)  # type: ignore[var-annotated]
    silence, from_server = anyio.create_memory_object_stream(0)  # type: ignore[var-annotated]
    await nowhere.aclose()
    async with silence, from_server, to_server, mcp.ClientSession(from_server, to_server) as session:
        if initialize:
            await session.initialize()
        yield session
