"""``rewind mutate`` on MCP steps: each fault is what mcp's ``ClientSession`` gives the agent live.

A tool that fails is a ``CallToolResult`` with ``isError`` (the server reports it; the
client raises nothing); a request that times out or meets a server-side failure raises
the SDK's JSON-RPC error (``MCPError`` on 2.x, ``McpError`` before) with its code; an
empty retrieval is an empty result of the same type. Compared with the same failures
recorded live against a real server and replayed.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp.types
import pytest
from _mcp_support import NOTES_URI, connected, make_server, offline, read_timeout

import rewind
from rewind.errors import ReviveFallbackWarning
from rewind.what_if import plan

pytestmark = pytest.mark.usefixtures("patched_mcp")


def _exceptions() -> Any:
    from mcp.shared import exceptions

    return exceptions


def _mcp_2() -> bool:
    return hasattr(_exceptions(), "MCPError")


def _is_error(result: Any) -> Any:
    return getattr(result, "isError", None) or getattr(result, "is_error", None)  # 1.x, 2.x


def _unwrapped(exc: BaseException) -> BaseException:
    """The error itself, out of the task groups it crossed (the session runs in one)."""
    while len(getattr(exc, "exceptions", ())) == 1:  # a (Base)ExceptionGroup of one
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


async def _agent(session: Any) -> tuple[Any, Any, Any]:
    """List the tools, add, read the notes: three steps after the handshake."""
    tools = await session.list_tools()
    added = await session.call_tool("add", {"a": 2, "b": 3})
    notes = await session.read_resource(NOTES_URI)
    return tools, added, notes


def _golden(path: Path) -> None:
    async def run() -> None:
        async with connected(make_server()) as session:
            await _agent(session)

    with rewind.record(path):
        anyio.run(run)


def _under(path: Path, fault: str, step_name: str) -> Any:
    """What the agent gets, offline, with ``fault`` injected at the step named ``step_name``."""
    (step,) = [e.seq for e in rewind.Trace.load(path).events if e.name == step_name]
    (mutation,) = plan(path, faults=[fault], steps=[step])

    async def run() -> Any:
        async with offline() as session:
            return await _agent(session)

    with warnings.catch_warnings(), mutation.session():
        warnings.simplefilter("ignore", rewind.UnconsumedEventsWarning)
        warnings.simplefilter("error", ReviveFallbackWarning)  # results revive as mcp's types
        return anyio.run(run)


def _slow_server() -> Any:
    server = make_server()

    @server.tool()
    async def nap(seconds: float) -> str:
        """Answers after ``seconds``."""
        await anyio.sleep(seconds)
        return "awake"

    return server


def _replayed_live_error(path: Path, failing: Any) -> BaseException:
    """``failing(session)`` run live against a real server and recorded, then replayed offline: its error."""

    async def live() -> None:
        async with connected(_slow_server(), read_timeout_seconds=read_timeout(0.2)) as session:
            await failing(session)

    with rewind.record(path):
        try:
            anyio.run(live)
        except Exception:
            pass  # recorded
        else:
            pytest.fail("the live call did not fail")

    async def replay() -> None:
        async with offline() as session:
            await failing(session)

    with rewind.replay(path), pytest.raises(Exception) as replayed:
        anyio.run(replay)
    return _unwrapped(replayed.value)


def test_a_tool_error_is_a_result_the_agent_reads_not_an_exception(tmp_path: Path) -> None:
    _golden(tmp_path / "golden.rewind")
    _tools, added, notes = _under(tmp_path / "golden.rewind", "tool_error", "add")

    async def explode() -> Any:
        async with connected(make_server()) as session:
            return await session.call_tool("explode", {"reason": "x"})

    live = anyio.run(explode)
    assert type(added) is type(live) is mcp.types.CallToolResult
    assert _is_error(added) is _is_error(live) is True
    assert added.content[0].text.startswith("Error executing tool add: fault injected by rewind")
    assert notes.contents  # the steps after it are served as recorded


def test_a_timeout_is_the_error_a_session_raises_when_the_server_is_too_slow(tmp_path: Path) -> None:
    _golden(tmp_path / "golden.rewind")
    with pytest.raises(Exception) as raised:
        _under(tmp_path / "golden.rewind", "timeout", "add")
    injected = _unwrapped(raised.value)

    async def too_slow(session: Any) -> None:
        await session.call_tool("nap", {"seconds": 5})

    replayed = _replayed_live_error(tmp_path / "live.rewind", too_slow)
    assert type(injected) is type(replayed) and isinstance(replayed, rewind.ReplayedError)
    error = getattr(injected, "error", None)
    assert (error and error.code) == (getattr(replayed, "error", None) and replayed.error.code)
    if _mcp_2():  # "Request 'tools/call' timed out"; 1.x words it with the seconds it waited
        assert str(injected) == str(replayed)


@pytest.mark.parametrize("step_name", ["add", "mcp.read_resource", "mcp.list_tools"])
def test_a_server_error_is_the_sessions_json_rpc_error(tmp_path: Path, step_name: str) -> None:
    _golden(tmp_path / "golden.rewind")
    with pytest.raises(Exception) as raised:
        _under(tmp_path / "golden.rewind", "server_error", step_name)
    injected = _unwrapped(raised.value)

    async def missing(session: Any) -> None:
        await session.read_resource("notes://missing")

    replayed = _replayed_live_error(tmp_path / "live.rewind", missing)
    assert type(injected) is type(replayed) and isinstance(replayed, rewind.ReplayedError)
    error = getattr(injected, "error", None)
    if error is not None:  # mcp 1.0/1.1 never set e.error
        assert error.code == mcp.types.INTERNAL_ERROR and error.message == "Internal error"


def test_an_empty_retrieval_is_an_empty_result_of_the_same_type(tmp_path: Path) -> None:
    _golden(tmp_path / "golden.rewind")
    _tools, added, notes = _under(tmp_path / "golden.rewind", "empty_retrieval", "mcp.read_resource")
    assert type(notes) is mcp.types.ReadResourceResult and notes.contents == []
    assert added.content[0].text == "5"


def test_each_mcp_step_is_offered_the_faults_that_can_happen_to_it(tmp_path: Path) -> None:
    _golden(tmp_path / "golden.rewind")
    offered: dict[str, set[str]] = {}
    for mutation in plan(tmp_path / "golden.rewind"):
        offered.setdefault(mutation.name, set()).add(mutation.fault)
    assert offered == {
        "mcp.initialize": {"server_error", "timeout"},
        "mcp.list_tools": {"server_error", "timeout"},  # a session request, not a tool
        "add": {"server_error", "timeout", "tool_error"},
        "mcp.read_resource": {"server_error", "timeout", "empty_retrieval"},
    }
