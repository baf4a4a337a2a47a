"""A replayed MCP agent needs no server: no process launched, no connection opened.

Each agent below runs the same code when recorded and when replayed, transport included:
recorded against a real server (a stdio subprocess, a streamable HTTP or SSE server on
loopback, in-process), replayed with the server gone (a command that does not exist, a
port nobody answers).
"""

from __future__ import annotations

import socket
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp.types
import pytest
from _mcp_support import connected, make_server, offline

import rewind

SUPPORT = str(Path(__file__).parent)


def _mcp_error() -> type[Exception]:
    from mcp.shared import exceptions

    return getattr(exceptions, "MCPError", None) or exceptions.McpError  # 2.x name, 1.x name


async def agent(session: Any) -> dict[str, Any]:
    """What an agent does with a fresh session: the handshake, then a listing and a call."""
    handshake = await session.initialize()
    return {
        "handshake": handshake,
        "tools": await session.list_tools(),
        "added": await session.call_tool("add", {"a": 2, "b": 3}),
    }


def steps(path: Path) -> list[tuple[str, str]]:
    return [(e.kind, e.name) for e in rewind.Trace.load(path).events]


# -------------------------------------------------------------------------- stdio

STDIO_SERVER = """
import pathlib, sys

pathlib.Path(sys.argv[2]).write_text("started")  # proof that this process ran
sys.path.insert(0, sys.argv[1])
from _mcp_support import make_server

make_server().run()
"""


async def _stdio_agent(params: Any) -> dict[str, Any]:
    from mcp.client.stdio import stdio_client

    async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as session:
        return await agent(session)


async def test_stdio_replay_launches_no_process(patched_mcp: None, trace_path: Path, tmp_path: Path) -> None:
    from mcp.client.stdio import StdioServerParameters

    script, marker = tmp_path / "server.py", tmp_path / "started"
    script.write_text(textwrap.dedent(STDIO_SERVER))
    params = StdioServerParameters(command=sys.executable, args=[str(script), SUPPORT, str(marker)])
    async with rewind.record(trace_path):
        live = await _stdio_agent(params)
    assert marker.exists() and type(live["added"].content[0]) is mcp.types.TextContent
    assert steps(trace_path) == [("tool", "mcp.initialize"), ("tool", "mcp.list_tools"), ("tool", "add")]
    marker.unlink()

    # The server command is still installed: replay does not start it.
    with anyio.fail_after(10):
        async with rewind.replay(trace_path):
            assert await _stdio_agent(params) == live
    assert not marker.exists()

    # The server command does not exist at all (CI without the server).
    gone = StdioServerParameters(command=str(tmp_path / "no-such-mcp-server"), args=[])
    async with rewind.replay(trace_path):
        replayed = await _stdio_agent(gone)
    assert replayed == live and type(replayed["handshake"]) is mcp.types.InitializeResult
    info = getattr(replayed["handshake"], "server_info", None) or replayed["handshake"].serverInfo  # 2.x, 1.x
    assert info.name == "rewind-test"


async def test_stdio_client_reexported_by_mcp_is_offline_too(patched_mcp: None, trace_path: Path) -> None:
    """``from mcp import stdio_client`` is the same function, hooked under that name as well."""
    async with rewind.record(trace_path), connected(make_server()) as session:
        live = await session.call_tool("add", {"a": 1, "b": 1})
    gone = mcp.StdioServerParameters(command="/nonexistent/mcp-server", args=[])
    replay = rewind.replay(trace_path)
    async with replay, mcp.stdio_client(gone) as (read, write), mcp.ClientSession(read, write) as session:
        await session.initialize()
        assert await session.call_tool("add", {"a": 1, "b": 1}) == live


async def test_without_a_replay_the_transport_is_the_sdks_own(patched_mcp: None, tmp_path: Path) -> None:
    """No session (and recording): the real command runs, so a missing one fails as it always did."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    gone = StdioServerParameters(command=str(tmp_path / "no-such-mcp-server"), args=[])
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with stdio_client(gone) as (read, write), mcp.ClientSession(read, write) as session:
            await session.initialize()
    assert not isinstance(caught.value, TimeoutError)
    script, marker = tmp_path / "server.py", tmp_path / "started"
    script.write_text(textwrap.dedent(STDIO_SERVER))
    params = StdioServerParameters(command=sys.executable, args=[str(script), SUPPORT, str(marker)])
    live = await _stdio_agent(params)
    assert marker.exists() and live["added"].content[0].text == "5"


# ------------------------------------------------------------------ unhooked requests


async def test_an_unrecorded_request_fails_at_once_with_a_clear_error(patched_mcp: None, trace_path: Path) -> None:
    """A request rewind does not hook (a raw ``send_request``) gets a JSON-RPC error from the
    offline transport instead of waiting for a server that is not there."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async with rewind.record(trace_path), connected(make_server()) as session:
        await session.list_tools()
    gone = StdioServerParameters(command="/nonexistent/mcp-server", args=[])
    replay = rewind.replay(trace_path)
    async with replay, stdio_client(gone) as (read, write), mcp.ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        with anyio.fail_after(5), pytest.raises(_mcp_error()) as caught:
            await session.send_request(mcp.types.PingRequest(method="ping"), mcp.types.EmptyResult)
    assert "not recorded by rewind: ping" in str(caught.value)
    assert getattr(caught.value, "error", None) is None or caught.value.error.code == -32601


# ------------------------------------------------------------- streamable HTTP / SSE


@contextmanager
def http_server(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port, in a thread; yields its base URL."""
    uvicorn = pytest.importorskip("uvicorn")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@contextmanager
def silent_port() -> Iterator[tuple[str, socket.socket]]:
    """A loopback port that listens but never answers: a connection attempt would queue there."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", sock


def _http_transport(kind: str) -> tuple[Any, str, str]:
    """(client transport function, server app factory name, endpoint path) of ``kind``."""
    if kind == "sse":
        from mcp.client.sse import sse_client

        return sse_client, "sse_app", "/sse"
    streamable = pytest.importorskip("mcp.client.streamable_http")
    function = getattr(streamable, "streamable_http_client", None) or streamable.streamablehttp_client
    return function, "streamable_http_app", "/mcp"


async def _http_agent(transport: Any, url: str, *, replaying: bool = False) -> dict[str, Any]:
    # mcp 1.x's streamable HTTP transport yields a get_session_id callback as well.
    async with transport(url) as streams, mcp.ClientSession(streams[0], streams[1]) as session:
        result = await agent(session)
        if replaying:
            # The SDK's own transport would try the (silent) server and wait: the offline one
            # refuses an unrecorded request at once.
            with anyio.fail_after(5), pytest.raises(_mcp_error(), match="not recorded by rewind: ping"):
                await session.send_request(mcp.types.PingRequest(method="ping"), mcp.types.EmptyResult)
        return result


@pytest.mark.parametrize("kind", ["streamable_http", "sse"])
async def test_http_replay_opens_no_connection(patched_mcp: None, trace_path: Path, kind: str) -> None:
    transport, app_factory, path = _http_transport(kind)
    server = make_server()
    if not hasattr(server, app_factory):
        pytest.skip(f"this mcp release's server has no {app_factory}()")
    with http_server(getattr(server, app_factory)()) as base:
        async with rewind.record(trace_path):
            live = await _http_agent(transport, base + path)
    assert live["added"].content[0].text == "5"
    # The server is stopped; replay against a port that would queue any connection attempt.
    with silent_port() as (silent, sock):
        with anyio.fail_after(10):
            async with rewind.replay(trace_path):
                replayed = await _http_agent(transport, silent + path, replaying=True)
        with pytest.raises(BlockingIOError):
            sock.accept()  # nobody tried to connect
    assert replayed == live


async def test_mcp_2_client_by_url_and_by_command(patched_mcp: None, trace_path: Path, tmp_path: Path) -> None:
    """mcp 2.x ``Client(url)`` / ``Client(StdioServerParameters)``: its connect-time probe
    (``server/discover``) and handshake are steps, its transport is offline."""
    client_class = getattr(mcp, "Client", None)
    if client_class is None:
        pytest.skip("mcp.Client is mcp 2.x")
    pytest.importorskip("uvicorn")

    async def use(client: Any) -> tuple[Any, ...]:
        async with client:
            listing = await client.list_tools()
            added = await client.call_tool("add", {"a": 20, "b": 22})
            return listing, added, client.session.protocol_version

    with http_server(make_server().streamable_http_app()) as base:
        async with rewind.record(trace_path):
            live = await use(client_class(base + "/mcp"))
    recorded = steps(trace_path)
    assert ("tool", "mcp.discover") in recorded and recorded[-1] == ("tool", "add")
    with silent_port() as (silent, sock):
        async with rewind.replay(trace_path):
            assert await use(client_class(silent + "/mcp")) == live
        with pytest.raises(BlockingIOError):
            sock.accept()

    # Built before the replay starts (its transport decides when entered), over a server
    # command that does not exist.
    client = client_class(mcp.StdioServerParameters(command=str(tmp_path / "no-such-mcp-server"), args=[]))
    async with rewind.replay(trace_path):
        assert await use(client) == live


# -------------------------------------------------------------- every other request


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # mcp 2.x, on set_logging_level
async def test_every_client_request_is_a_step(patched_mcp: None, trace_path: Path) -> None:
    """Prompts, resource listings, ping and logging level are recorded and replayed too:
    nothing reaches the (absent) server, and a server error replays as the same error."""
    server = make_server()
    if not hasattr(server, "prompt"):
        pytest.skip("this release's test server has no prompts")

    @server.prompt()
    def review(code: str) -> str:
        """Review some code."""
        return f"Please review: {code}"

    async def requests(session: Any) -> list[Any]:
        out: list[Any] = []
        for call in (
            lambda: session.send_ping(),
            lambda: session.list_prompts(),
            lambda: session.get_prompt("review", {"code": "x = 1"}),
            lambda: session.list_resources(),
            lambda: session.list_resource_templates(),
            lambda: session.set_logging_level("info"),
        ):
            try:
                out.append(await call())
            except Exception as exc:  # the server may not support one: that replays too
                out.append((type(exc).__name__, str(exc)))
        return out

    async with rewind.record(trace_path), connected(server) as session:
        live = await requests(session)
    assert live[2].messages[0].content.text == "Please review: x = 1"
    methods = ("send_ping", "list_prompts", "get_prompt", "list_resources", "list_resource_templates")
    expected = [f"mcp.{m.removeprefix('send_')}" for m in methods if hasattr(mcp.ClientSession, m)]
    assert [name for _, name in steps(trace_path)] == ["mcp.initialize", *expected, "mcp.set_logging_level"]
    kinds = {name: kind for kind, name in steps(trace_path)}
    assert kinds["mcp.get_prompt"] == kinds["mcp.list_resources"] == "memory" and kinds["mcp.ping"] == "tool"
    async with rewind.replay(trace_path), offline() as session:
        replayed = await requests(session)
    assert replayed == live
    assert type(replayed[2]) is mcp.types.GetPromptResult


async def test_handshake_state_is_installed_on_replay(patched_mcp: None, trace_path: Path) -> None:
    """What ``initialize()`` leaves on the session (negotiated version, server capabilities)
    is there after a replayed handshake as well."""
    async with rewind.record(trace_path), connected(make_server()) as session:
        live = _handshake_state(session)
    async with rewind.replay(trace_path), offline() as session:
        assert _handshake_state(session) == live


def _handshake_state(session: Any) -> tuple[Any, ...]:
    capabilities = getattr(session, "server_capabilities", None)
    if capabilities is None and callable(getattr(session, "get_server_capabilities", None)):
        capabilities = session.get_server_capabilities()
    return getattr(session, "protocol_version", None), capabilities


async def test_a_fork_replays_the_handshake_and_still_opens_the_session(patched_mcp: None, trace_path: Path) -> None:
    """A fork serves its prefix (handshake included) from the trace, then runs live on the same
    session: the server has seen the handshake, so the live calls work. Its transport is the
    SDK's own (it needs the server)."""
    calls: list[str] = []
    server = make_server(calls)
    async with rewind.record(trace_path), connected(server) as session:
        await session.list_tools()
        await session.call_tool("add", {"a": 2, "b": 3})
    calls.clear()
    async with rewind.fork(trace_path, at=2), connected(server) as session:
        await session.list_tools()  # served
        changed = await session.call_tool("add", {"a": 10, "b": 5})  # live
    assert calls == ["add(10, 5)"] and changed.content[0].text == "15"


async def test_a_transport_imported_before_patching_is_offline_too(trace_path: Path, tmp_path: Path) -> None:
    """``from mcp.client.stdio import stdio_client`` at the top of an agent (or framework)
    module, before ``patch_mcp()``: that name is covered as well, and restored on unpatch."""
    from mcp.client.stdio import StdioServerParameters, stdio_client  # imported unpatched

    async def run(params: Any) -> Any:
        async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("add", {"a": 4, "b": 5})

    unpatch = rewind.patch_mcp()
    try:
        async with rewind.record(trace_path), connected(make_server()) as session:
            live = await session.call_tool("add", {"a": 4, "b": 5})
        gone = StdioServerParameters(command=str(tmp_path / "no-such-mcp-server"), args=[])
        async with rewind.replay(trace_path):
            assert await run(gone) == live
    finally:
        unpatch()
    # Unpatched, the same name is the SDK's own again: the missing command fails as ever.
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with rewind.replay(trace_path):
            await run(gone)
    assert not isinstance(caught.value, TimeoutError)


def test_transport_hooks_are_restored_exactly() -> None:
    import mcp.client.stdio
    from rewind.instrumentors.mcp import MCPInstrumentor

    module_level = (mcp.client.stdio.__dict__["stdio_client"], mcp.__dict__["stdio_client"])
    generator = mcp.client.stdio.stdio_client.__wrapped__
    (cell,) = [c for c in mcp.client.stdio.stdio_client.__closure__ if c.cell_contents is generator]
    instrumentor = MCPInstrumentor()
    instrumentor.instrument()
    try:
        assert mcp.client.stdio.__dict__["stdio_client"] is not module_level[0]
        assert mcp.__dict__["stdio_client"] is not module_level[1]
        assert cell.cell_contents is not generator
    finally:
        instrumentor.uninstrument()
    assert (mcp.client.stdio.__dict__["stdio_client"], mcp.__dict__["stdio_client"]) == module_level
    assert cell.cell_contents is generator
