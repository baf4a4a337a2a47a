"""MCP-tool agents: a real MCP server's tools called by an agent, replayed without the server.

Two forms: the OpenAI Agents SDK's own MCP support (a stdio server in a subprocess), and a
plain tool loop over mcp's ``ClientSession`` and the openai SDK (an in-memory server).
``rewind.patch_mcp()`` records the listings and tool calls; on replay they come from the
trace, so the server's tools never run again.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver")  # mcp 2.x

import mcp
from mcp.server.mcpserver import MCPServer

SERVER = textwrap.dedent(
    '''
    import sys

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("weather")
    with open(sys.argv[1], "a") as log:  # each launch of the server leaves a line
        log.write("launched\\n")


    @server.tool()
    def get_forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        with open(sys.argv[1], "a") as log:  # the test reads which calls really ran
            log.write(city + "\\n")
        return f"Thunder in {city}"


    server.run("stdio")
    '''
)


def test_openai_agents_sdk_with_a_stdio_mcp_server(battery: Any, tmp_path: Path) -> None:
    pytest.importorskip("agents")
    import agents
    from agents import Agent, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    script, log = tmp_path / "weather_server.py", tmp_path / "calls.log"
    script.write_text(SERVER)
    log.touch()
    agents.set_tracing_disabled(True)
    agents.set_default_openai_client(AsyncOpenAI(base_url=battery.stub.openai_base_url, max_retries=0))

    async def main() -> str:
        params = {"command": sys.executable, "args": [str(script), str(log)]}
        async with MCPServerStdio(params=params, name="weather") as server:
            assistant = Agent(name="Assistant", instructions="Use the tools.", mcp_servers=[server])
            result = await Runner.run(assistant, "What is the forecast in city=Oslo tomorrow?")
            return str(result.final_output)

    answer = battery.run(lambda: asyncio.run(main()), providers=("openai", "mcp"))
    assert answer == "Based on the tool result: Thunder in Oslo"
    # The server was launched once and its tool ran once, at record time: under the replay
    # the stdio transport launched nothing and every MCP answer came from the trace.
    assert log.read_text().split() == ["launched", "Oslo"]
    steps = [(e.kind, e.name) for e in battery.steps]
    assert ("tool", "get_forecast") in steps and ("tool", "mcp.list_tools") in steps
    assert [name for kind, name in steps if kind == "llm"] == ["openai.responses.create"] * 2


async def _tool_loop(session: mcp.ClientSession, question: str) -> list[str]:
    """A minimal MCP agent: offer the server's tools to the model, run what it calls."""
    from openai import AsyncOpenAI

    listing = await session.list_tools()
    offered = [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in listing.tools
    ]
    client = AsyncOpenAI(max_retries=0)
    messages: list[Any] = [{"role": "user", "content": question}]
    transcript = []
    while True:
        reply = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=offered)
        message = reply.choices[0].message
        if not message.tool_calls:
            transcript.append(str(message.content))
            return transcript
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = await session.call_tool(call.function.name, json.loads(call.function.arguments))
            text = "".join(getattr(block, "text", "") for block in result.content)
            transcript.append(f"{call.function.name} -> {text}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


@asynccontextmanager
async def _nowhere() -> AsyncIterator[mcp.ClientSession]:
    """The agent's client over a server command that does not exist: under a replay
    ``patch_mcp()`` makes its transport offline and serves its handshake from the trace."""
    gone = mcp.StdioServerParameters(command="/nonexistent/travel-mcp-server", args=[])
    async with mcp.Client(gone) as client:
        yield client.session


def test_tool_loop_over_client_session_replays_without_a_server(battery: Any, tools: Any) -> None:
    server = MCPServer("travel", log_level="ERROR")

    @server.tool()
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Mist in {city}"

    @server.tool()
    def search_hotels(city: str) -> str:
        """Hotels in a city."""
        tools("search_hotels", city)
        return f"Hotel Miramar in {city}"

    @asynccontextmanager
    async def live() -> AsyncIterator[mcp.ClientSession]:
        async with mcp.Client(server) as client:
            yield client.session

    # The recording talks to the real server; the replay gets a session with no server behind it.
    connections: list[Callable[[], AbstractAsyncContextManager[mcp.ClientSession]]] = [live, _nowhere]

    async def main() -> list[str]:
        async with connections.pop(0)() as session:
            return await _tool_loop(session, "What is the weather in city=Faro, then find hotels?")

    transcript = battery.run(lambda: asyncio.run(main()), providers=("openai", "mcp"))
    assert transcript == [
        "get_weather -> Mist in Faro",
        "search_hotels -> Hotel Miramar in Faro",
        "Based on the tool result: Mist in Faro; Hotel Miramar in Faro",
    ]
    assert battery.live_tools == ["get_weather", "search_hotels"]
    assert tools.names() == []  # the server's tools did not run on replay: there was no server
    assert [(e.kind, e.name) for e in battery.steps] == [
        ("tool", "mcp.discover"),  # mcp.Client's connect-time handshake (mode="auto")
        ("tool", "mcp.list_tools"),
        ("llm", "openai.chat.completions.create"),
        ("tool", "get_weather"),
        ("llm", "openai.chat.completions.create"),
        ("tool", "search_hotels"),
        ("llm", "openai.chat.completions.create"),
    ]
