"""MCP instrumentor overhead: ``ClientSession.call_tool`` recorded and replayed.

    python benchmarks/bench_mcp.py [--calls N] [--rounds R]

The ``bench_openai`` budgets, for MCP tool calls against a real server running
in-process over mcp's memory transport (no subprocess, no network):

* record overhead: ``(recorded call - plain call) / plain call`` at most 20 %; the plain
  call is the SDK's own cost, client and in-process server, patched but outside a session;
* replay: a replayed call (match, read the event back, revive a ``CallToolResult``) at
  most as slow as mcp parsing the same JSON-RPC response from wire bytes into a
  ``CallToolResult``: what its transports do with a received line (the JSON-RPC message
  parse) and what ``ClientSession.send_request`` does with its ``result`` (on mcp 2.x the
  negotiated revision's schema check, then the ``tools/call`` adapter; see
  ``_result_parser``). An earlier floor stopped at ``CallToolResult.model_validate`` and so
  left out mcp 2.x's schema check, about a third of mcp's own parse (5 of 17 us here).

Nothing observes rewind's spans here (no OpenTelemetry configured), so a recorded call
makes no span current and mcp 2.x propagates nothing, as without rewind. (Under an
application provider rewind's span is current and mcp injects it into the request's
``_meta``, which the server extracts: ~45 us a call of mcp's own work, on both sides of
such a comparison.)

CPU time per call in microseconds, 15 rounds of 400 calls. Each round runs one block of
each side back to back; ratios are taken per round and the median round is reported.
Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from _stainless_bench import arguments, median

RECORD_BUDGET = 0.20
REPLAY_BUDGET = 1.0
ARGUMENTS = {"origin": "SFO", "destination": "JFK", "date": "2026-12-02", "seats": 1}


def _server() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x

    server = Server("bench", log_level="ERROR")

    @server.tool()
    def search_flights(origin: str, destination: str, date: str, seats: int) -> str:
        """Search flights."""
        return f"RW100 {origin}-{destination} {date} x{seats}; RW200 {origin}-{destination} {date} x{seats}"

    return server


@asynccontextmanager
async def _connected(server: Any) -> AsyncIterator[Any]:
    import mcp
    from mcp.shared.memory import create_client_server_memory_streams

    lowlevel = getattr(server, "_lowlevel_server", None) or server._mcp_server
    streams = create_client_server_memory_streams()
    async with streams as (client_streams, server_streams), anyio.create_task_group() as tg:
        tg.start_soon(lambda: lowlevel.run(*server_streams, lowlevel.create_initialization_options()))
        async with mcp.ClientSession(*client_streams) as session:
            await session.initialize()
            yield session
        tg.cancel_scope.cancel()


def _message_parser() -> Callable[[bytes], Any]:
    """How the client transports turn a received line into a JSON-RPC message."""
    import mcp.types

    adapter = getattr(mcp.types, "jsonrpc_message_adapter", None)
    if adapter is not None:  # mcp 2.x
        return lambda data: adapter.validate_json(data, by_name=False)
    return lambda data: mcp.types.JSONRPCMessage.model_validate_json(data).root  # mcp 1.x


def _result_parser(session: Any) -> Callable[[Any], Any]:
    """How ``ClientSession.send_request`` turns the message's ``result`` into a ``CallToolResult``.

    mcp 1.x: ``CallToolResult.model_validate``. mcp 2.x first validates the result against
    the negotiated protocol revision's schema (``mcp_types.methods.validate_server_result``,
    which validates and dumps it), then parses it with the session's ``tools/call`` adapter.
    (``call_tool`` then also checks structured content against the tool's output schema:
    that is validation, not parsing, and is left out of the floor.)
    """
    import mcp.types

    adapter = getattr(session, "_call_tool_adapter", None)
    try:
        from mcp_types.methods import validate_server_result
    except ImportError:  # mcp 1.x
        validate_server_result = None
    if adapter is None or validate_server_result is None:
        return mcp.types.CallToolResult.model_validate
    version = getattr(session, "_negotiated_version", None) or "2025-11-25"

    def parse(raw: Any) -> Any:
        validate_server_result("tools/call", version, raw)
        return adapter.validate_python(raw, by_name=False)

    return parse


async def _block_us(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        await call()
    return (time.thread_time() - start) / calls * 1e6


async def _measure(args: Any) -> dict[str, list[float]]:

    import rewind

    samples: dict[str, list[float]] = {"plain": [], "recorded": [], "wire": [], "replayed": []}
    unpatch = rewind.patch_mcp()
    try:
        async with _connected(_server()) as session:

            async def call() -> Any:
                return await session.call_tool("search_flights", ARGUMENTS)

            result = await call()
            for _ in range(50):  # warm imports and caches
                await call()
            wire = json.dumps(
                {"jsonrpc": "2.0", "id": 7, "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}
            ).encode()

            parse_message, parse_result = _message_parser(), _result_parser(session)
            assert parse_result(parse_message(wire).result) == result  # the floor yields what the agent gets

            async def wire_parse() -> Any:
                return parse_result(parse_message(wire).result)

            with tempfile.TemporaryDirectory() as tmp:
                for round_ in range(args.rounds):
                    path = Path(tmp) / f"bench-{round_}.rewind"
                    samples["plain"].append(await _block_us(call, args.calls))
                    async with rewind.record(path):
                        samples["recorded"].append(await _block_us(call, args.calls))
                    samples["wire"].append(await _block_us(wire_parse, args.calls))
                    async with rewind.replay(path):
                        samples["replayed"].append(await _block_us(call, args.calls))
    finally:
        unpatch()
    return samples


def main(argv: list[str] | None = None) -> int:
    # An MCP call is ~600 us of an in-process server whose cost wanders from block to block
    # (+/- 6% on the record ratio with 9 rounds of 200); longer blocks and more rounds keep
    # the median steady. The overhead itself is the same either way (~17%).
    args = arguments("MCP instrumentor overhead", argv, calls=400, rounds=15)
    samples = asyncio.run(_measure(args))
    record_overhead = median([r / p - 1 for p, r in zip(samples["plain"], samples["recorded"])])
    replay_ratio = median([r / w for w, r in zip(samples["wire"], samples["replayed"])])
    rows = [
        ("plain call_tool (in-process server)", median(samples["plain"]), ""),
        ("mcp parse from wire bytes", median(samples["wire"]), ""),
        (
            "recorded call_tool",
            median(samples["recorded"]),
            f"overhead {record_overhead:+.1%} (budget <= {RECORD_BUDGET:.0%})",
        ),
        (
            "replayed call_tool",
            median(samples["replayed"]),
            f"{replay_ratio:.2f}x wire parse (budget <= {REPLAY_BUDGET:.2f}x)",
        ),
    ]
    print(f"mcp instrumentor, CPU time per call, median of {args.rounds} rounds of {args.calls} calls:")
    for label, value, note in rows:
        print(f"  {label:36s} {value:9.1f} us  {note}")
    ok = record_overhead <= RECORD_BUDGET and replay_ratio <= REPLAY_BUDGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
