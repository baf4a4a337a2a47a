"""``patch_mcp()``: ClientSession tool calls, tool listings and resource reads against a real MCP server.

Recorded against a real server (in-process over mcp's memory streams, or a stdio
subprocess), replayed with no server at all: the replaying session's streams lead nowhere.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp.types
import pytest
from _mcp_support import NOTES, NOTES_URI, connected, make_server, offline
from rewind.instrumentors.mcp import MCPInstrumentor

import rewind
from rewind.errors import UnconsumedEventsWarning


def _mcp_error() -> type[Exception]:
    from mcp.shared import exceptions

    return getattr(exceptions, "MCPError", None) or exceptions.McpError  # 2.x name, 1.x name


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "isError", None) or getattr(result, "is_error", None))


def _text(result: Any) -> str:
    return result.content[0].text


def events(path: Path) -> list[rewind.Event]:
    """The recorded steps after the handshake (each session's ``initialize()`` is step 0)."""
    return [e for e in rewind.Trace.load(path).events if e.name != "mcp.initialize"]


async def test_records_then_replays_with_no_server_as_mcp_types(patched_mcp: None, trace_path: Path) -> None:
    calls: list[str] = []
    async with rewind.record(trace_path), connected(make_server(calls)) as session:
        tools = await session.list_tools()
        added = await session.call_tool("add", {"a": 2, "b": 3})
        notes = await session.read_resource(NOTES_URI)
    assert calls == ["add(2, 3)", "notes"] and _text(added) == "5"

    async with rewind.replay(trace_path), offline() as session:
        replayed_tools = await session.list_tools()
        replayed_added = await session.call_tool("add", {"a": 2, "b": 3})
        replayed_notes = await session.read_resource(NOTES_URI)
    assert calls == ["add(2, 3)", "notes"]  # the server did no work on replay
    assert type(replayed_tools) is mcp.types.ListToolsResult and replayed_tools == tools
    assert type(replayed_added) is mcp.types.CallToolResult and replayed_added == added
    assert type(replayed_notes) is mcp.types.ReadResourceResult and replayed_notes == notes
    assert [t.name for t in replayed_tools.tools] == ["add", "explode"]
    assert replayed_notes.contents[0].text == NOTES
    assert [(e.kind, e.name) for e in events(trace_path)] == [
        ("tool", "mcp.list_tools"),
        ("tool", "add"),
        ("memory", "mcp.read_resource"),
    ]
    add_step = events(trace_path)[1]
    assert add_step.request == {"name": "add", "arguments": {"a": 2, "b": 3}}


async def test_tool_error_result_replays_as_a_return_value(patched_mcp: None, trace_path: Path) -> None:
    async with rewind.record(trace_path), connected(make_server()) as session:
        live = await session.call_tool("explode", {"reason": "bad input"})
    assert _is_error(live)
    (event,) = events(trace_path)
    assert event.ok and event.response["isError"] is True
    async with rewind.replay(trace_path), offline() as session:
        replayed = await session.call_tool("explode", {"reason": "bad input"})  # no exception
    assert type(replayed) is mcp.types.CallToolResult and _is_error(replayed) and replayed == live


async def test_protocol_error_replays_as_the_sdks_exception(patched_mcp: None, trace_path: Path) -> None:
    error_class = _mcp_error()
    async with rewind.record(trace_path), connected(make_server()) as session:
        with pytest.raises(error_class) as live:
            await session.read_resource("notes://missing")
    async with rewind.replay(trace_path), offline() as session:
        with pytest.raises(error_class) as replayed:
            await session.read_resource("notes://missing")
    assert isinstance(replayed.value, rewind.ReplayedError)
    # code, message and data, as mcp's ErrorData (mcp 1.0/1.1 never set e.error: neither does replay)
    assert getattr(replayed.value, "error", None) == getattr(live.value, "error", None)
    assert str(replayed.value) == str(live.value)


async def test_positional_and_keyword_calls_share_an_identity(patched_mcp: None, trace_path: Path) -> None:
    async with rewind.record(trace_path), connected(make_server()) as session:
        live = await session.call_tool("add", {"a": 1, "b": 2})
        listing = await session.list_tools()
    async with rewind.replay(trace_path), offline() as session:
        assert await session.call_tool(name="add", arguments={"a": 1, "b": 2}) == live
        assert await session.list_tools() == listing


async def test_changed_arguments_diverge(patched_mcp: None, trace_path: Path) -> None:
    async with rewind.record(trace_path), connected(make_server()) as session:
        await session.call_tool("add", {"a": 1, "b": 2})
    replay = rewind.replay(trace_path)
    with pytest.warns(UnconsumedEventsWarning):
        async with replay, offline() as session:
            with pytest.raises(rewind.DivergenceError) as caught:
                await session.call_tool("add", {"a": 1, "b": 99})
    assert caught.value.step == 1  # step 0 is the handshake


async def test_cancelled_call_is_a_step_and_cancels_again(patched_mcp: None, trace_path: Path) -> None:
    """The MCP analogue of a stream aborted early: the agent gave up waiting."""
    server = make_server()

    @server.tool()
    async def slow() -> str:
        """Takes its time."""
        await anyio.sleep(1.5)  # mcp 1.x servers finish it even after the client gave up
        return "late"

    async with rewind.record(trace_path), connected(server) as session:
        with anyio.move_on_after(0.2) as scope:
            await session.call_tool("slow", {})
        assert scope.cancelled_caught
        after = await session.call_tool("add", {"a": 1, "b": 1})
    (cancelled, second) = events(trace_path)
    assert not cancelled.ok and cancelled.error.get("cancelled") is True and second.ok
    async with rewind.replay(trace_path), offline() as session:
        # The step is cancelled again at once. The replayed CancelledError is not the
        # timeout scope's own, so it leaves the scope (see docs/mcp.md).
        with anyio.move_on_after(5), pytest.raises(asyncio.CancelledError):
            await session.call_tool("slow", {})
        assert await session.call_tool("add", {"a": 1, "b": 1}) == after


async def test_transport_options_are_not_identity(patched_mcp: None, trace_path: Path) -> None:
    import inspect

    if "read_timeout_seconds" not in inspect.signature(mcp.ClientSession.call_tool).parameters:
        pytest.skip("this mcp release has no per-call options")
    from datetime import timedelta

    timeout: Any = timedelta(seconds=30)
    if "float" in str(inspect.signature(mcp.ClientSession.call_tool).parameters["read_timeout_seconds"].annotation):
        timeout = 30.0  # mcp 2.x takes seconds as a float

    async def progress(*_: Any) -> None:
        return None

    async with rewind.record(trace_path), connected(make_server()) as session:
        live = await session.call_tool(
            "add", {"a": 4, "b": 4}, read_timeout_seconds=timeout, progress_callback=progress
        )
    (event,) = events(trace_path)
    assert event.request == {"name": "add", "arguments": {"a": 4, "b": 4}}
    async with rewind.replay(trace_path), offline() as session:
        assert await session.call_tool("add", {"a": 4, "b": 4}) == live


async def test_a_session_opened_before_patching_is_covered(trace_path: Path) -> None:
    async with connected(make_server()) as session:
        unpatch = rewind.patch_mcp()
        try:
            async with rewind.record(trace_path):
                live = await session.call_tool("add", {"a": 3, "b": 4})
        finally:
            unpatch()
    assert [e.name for e in rewind.Trace.load(trace_path).events] == ["add"]  # no handshake: it was live
    with rewind.integrations.patched("mcp"):
        async with rewind.replay(trace_path), offline(initialize=False) as session:
            assert await session.call_tool("add", {"a": 3, "b": 4}) == live


async def test_passthrough_without_a_session(patched_mcp: None) -> None:
    calls: list[str] = []
    async with connected(make_server(calls)) as session:
        assert _text(await session.call_tool("add", {"a": 5, "b": 5})) == "10"
    assert calls == ["add(5, 5)"]


async def test_high_level_client_of_mcp_2(patched_mcp: None, trace_path: Path) -> None:
    client_class = getattr(mcp, "Client", None)
    if client_class is None:
        pytest.skip("mcp.Client is mcp 2.x")
    calls: list[str] = []
    async with rewind.record(trace_path), client_class(make_server(calls), mode="legacy") as client:
        live = await client.call_tool("add", {"a": 20, "b": 22})
    assert calls == ["add(20, 22)"]
    async with rewind.replay(trace_path), offline() as session:
        replayed = await session.call_tool("add", {"a": 20, "b": 22})
    assert replayed == live and _text(replayed) == "42"


STDIO_SERVER = """
import sys

sys.path.insert(0, sys.argv[1])
from _mcp_support import server_class

server = server_class()("stdio-test", log_level="CRITICAL")


@server.tool()
def shout(text: str) -> str:
    \"\"\"Upper-case the text.\"\"\"
    return text.upper()


server.run()
"""


async def test_stdio_server_process_recorded_then_replayed_without_it(
    patched_mcp: None, trace_path: Path, tmp_path: Path
) -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(STDIO_SERVER))
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(Path(__file__).parent)])
    recording = rewind.record(trace_path)
    async with recording, stdio_client(params) as (read, write), mcp.ClientSession(read, write) as session:
        await session.initialize()
        live = await session.call_tool("shout", {"text": "hello"})
    script.unlink()  # the server is gone for good
    async with rewind.replay(trace_path), offline() as session:
        replayed = await session.call_tool("shout", {"text": "hello"})
    assert replayed == live and _text(replayed) == "HELLO"


def test_instrumentor_contract() -> None:
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="opentelemetry_instrumentor") if e.name == "rewind_mcp"]
    assert entry.load() is MCPInstrumentor
    instrumentor = MCPInstrumentor()
    assert list(instrumentor.instrumentation_dependencies()) == ["mcp >= 0.9"]
    methods = ("call_tool", "list_tools", "read_resource")
    originals = {m: mcp.ClientSession.__dict__[m] for m in methods}
    instrumentor.instrument()
    try:
        assert all(mcp.ClientSession.__dict__[m] is not originals[m] for m in methods)
    finally:
        instrumentor.uninstrument()
    assert all(mcp.ClientSession.__dict__[m] is originals[m] for m in methods)


SPANS_PROGRAM = r"""
import asyncio, json, os, sys
sys.path.insert(0, os.environ["SUPPORT"])
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from _mcp_support import NOTES_URI, connected, make_server, offline

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
rewind.patch_mcp()
path = os.environ["TRACE"]

async def agent(session):
    await session.list_tools()
    await session.call_tool("add", {"a": 1, "b": 2})
    await session.call_tool("explode", {"reason": "r"})
    await session.read_resource(NOTES_URI)

async def main():
    async with rewind.record(path), connected(make_server()) as session:
        await agent(session)
    async with rewind.replay(path), offline() as session:
        await agent(session)

asyncio.run(main())
spans = [s for s in memory.get_finished_spans() if "rewind.kind" in (s.attributes or {})]
print(json.dumps([{"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes),
                   "status": s.status.status_code.name} for s in spans]))
"""


def test_spans_follow_genai_and_mcp_conventions(run_python: Any, tmp_path: Path) -> None:
    result = run_python(
        SPANS_PROGRAM, env={"TRACE": str(tmp_path / "run.rewind"), "SUPPORT": str(Path(__file__).parent)}
    )
    assert result.returncode == 0, result.stderr
    spans = json.loads(result.stdout.strip().splitlines()[-1])
    assert [s["name"] for s in spans] == [
        "initialize",
        "tools/list",
        "execute_tool add",
        "execute_tool explode",
        f"resources/read {NOTES_URI}",
    ] * 2
    for group in (spans[:5], spans[5:]):
        handshake, listing, add, explode, read = group
        assert handshake["attributes"]["mcp.method.name"] == "initialize"
        assert add["attributes"]["gen_ai.operation.name"] == "execute_tool"
        assert add["attributes"]["gen_ai.tool.name"] == "add" and add["kind"] == "CLIENT"
        assert add["attributes"]["mcp.method.name"] == "tools/call"
        assert explode["attributes"]["error.type"] == "tool_error" and explode["status"] != "ERROR"
        assert listing["attributes"]["mcp.method.name"] == "tools/list"
        assert read["attributes"]["gen_ai.operation.name"] == "retrieval"
        assert read["attributes"]["mcp.resource.uri"] == NOTES_URI and read["attributes"]["rewind.kind"] == "memory"
    assert all(s["attributes"].get("rewind.replayed") is True for s in spans[5:])


ZERO_CODE_AGENT = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from _mcp_support import connected, make_server

calls = []


async def main():
    async with connected(make_server(calls)) as session:
        result = await session.call_tool("add", {"a": 40, "b": 2})
        print("ANSWER:", result.content[0].text, "SERVER CALLS:", len(calls))


asyncio.run(main())
"""


def test_opentelemetry_instrument_records_and_replays_with_no_code_change(tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess
    from importlib.metadata import entry_points

    tool = Path(sys.executable).parent / "opentelemetry-instrument"
    if not tool.exists() and shutil.which("opentelemetry-instrument") is None:
        pytest.skip("opentelemetry-instrument is not installed")
    agent = tmp_path / "agent.py"
    agent.write_text(ZERO_CODE_AGENT)
    trace = tmp_path / "run.rewind"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")
    # Only the MCP instrumentor: importing every other provider SDK costs seconds per run.
    others = [e.name for e in entry_points(group="opentelemetry_instrumentor") if e.name != "rewind_mcp"]
    env["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = ",".join(others)

    def run(**more: str) -> str:
        command = [str(tool) if tool.exists() else "opentelemetry-instrument", sys.executable, str(agent)]
        done = subprocess.run(
            [*command, str(Path(__file__).parent)],
            env={**env, **more},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "ANSWER: 42 SERVER CALLS: 1" in run(REWIND_RECORD=str(trace))
    assert [(e.kind, e.name) for e in rewind.Trace.load(trace).events] == [("tool", "mcp.initialize"), ("tool", "add")]
    assert "ANSWER: 42 SERVER CALLS: 0" in run(REWIND_REPLAY=str(trace))  # answered from the trace
