"""langchain-anthropic tool calling, unmodified, against the stub's Anthropic Messages API."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_anthropic")


def test_chat_anthropic_bind_tools_loop(battery: Any, tools: Any) -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Foggy in {city}"

    def agent() -> list[str]:
        # The tool loop of LangChain's tool-calling guide.
        model = ChatAnthropic(
            model="claude-sonnet-4-6", base_url=battery.stub.anthropic_base_url, max_retries=0
        ).bind_tools([get_weather])
        messages: list[Any] = [HumanMessage("What is the weather in city=Lisbon today?")]
        reply = model.invoke(messages)
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
        messages.append(model.invoke(messages))
        return [str(m.content) for m in messages]

    messages = battery.run(agent, providers=("anthropic",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert tools.calls == [("get_weather", "Lisbon")]
    assert messages[-1] == "Based on the tool result: Foggy in Lisbon"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "anthropic.messages.create")] * 2


def test_chat_anthropic_in_a_langgraph_agent_streaming(battery: Any, tools: Any) -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langchain_core.tools import tool

    @tool
    def search_hotels(city: str) -> str:
        """Hotels in a city."""
        tools("search_hotels", city)
        return f"Hotel Central in {city}"

    def agent() -> list[str]:
        model = ChatAnthropic(model="claude-sonnet-4-6", streaming=True, max_retries=0)  # ANTHROPIC_BASE_URL
        graph = create_agent(model, tools=[search_hotels])
        tokens = []
        for chunk, _ in graph.stream(
            {"messages": [{"role": "user", "content": "find hotels in city=Porto"}]}, stream_mode="messages"
        ):
            if chunk.type == "AIMessageChunk" and chunk.text:
                tokens.append(chunk.text)
        return tokens

    tokens = battery.run(agent, providers=("anthropic",))
    assert battery.live_tools == ["search_hotels"]
    assert "".join(tokens) == "Based on the tool result: Hotel Central in Porto"
    assert len(battery.steps) == 2


def test_extended_thinking_blocks_replay_with_their_signatures(battery: Any) -> None:
    from langchain_anthropic import ChatAnthropic

    battery.stub.add_script({"thinking": "The user wants a haiku; keep it short.", "text": "Old pond, frog leaps in."})

    def agent() -> list[dict[str, Any]]:
        model = ChatAnthropic(
            model="claude-sonnet-4-6", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024}
        )
        reply = model.invoke("Write a haiku.")
        return [dict(block) for block in reply.content]  # type: ignore[arg-type]

    blocks = battery.run(agent, providers=("anthropic",))
    assert [b["type"] for b in blocks] == ["thinking", "text"]
    assert blocks[0]["signature"]  # needed to send the block back in a later turn
    assert blocks[1]["text"] == "Old pond, frog leaps in."


def test_astream_events_of_a_chain(battery: Any) -> None:
    import asyncio

    from langchain_anthropic import ChatAnthropic
    from langchain_core.output_parsers import StrOutputParser

    async def main() -> list[str]:
        model = ChatAnthropic(model="claude-sonnet-4-6", base_url=battery.stub.anthropic_base_url, max_retries=0)
        chain = model | StrOutputParser()
        return [
            event["data"]["chunk"]
            async for event in chain.astream_events("stream these words please", version="v2")
            if event["event"] == "on_parser_stream"
        ]

    chunks = battery.run(lambda: asyncio.run(main()), providers=("anthropic",))
    assert "".join(chunks) == "Echo: stream these words please"
    assert len(chunks) > 3
