"""LlamaIndex's FunctionAgent and ReActAgent, unmodified, on ``llama_index.llms.openai.OpenAI``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.llms.openai")


def _weather_tool(tools: Any) -> Any:
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Windy and 15C in {city}"

    return get_weather


def test_function_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    get_weather = _weather_tool(tools)

    async def main() -> str:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        agent = FunctionAgent(tools=[get_weather], llm=llm, system_prompt="You answer weather questions.")
        response = await agent.run(user_msg="What is the weather in city=Perth today?")
        return str(response)

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Windy and 15C in Perth"
    steps = battery.steps
    assert [e.kind for e in steps] == ["llm", "llm"]
    assert all(e.request["stream"] for e in steps)  # FunctionAgent streams its model calls


def test_react_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    """ReActAgent parses Thought/Action text, not native tool calls: the stub is scripted with it."""
    from llama_index.core.agent.workflow import ReActAgent
    from llama_index.llms.openai import OpenAI

    get_weather = _weather_tool(tools)
    battery.stub.add_script(
        'Thought: I need the weather tool.\nAction: get_weather\nAction Input: {"city": "Perth"}',
        "Thought: I can answer without using any more tools.\nAnswer: Perth is windy, 15C.",
    )

    async def main() -> tuple[str, list[str]]:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        agent = ReActAgent(tools=[get_weather], llm=llm)
        handler = agent.run(user_msg="What is the weather in Perth?")
        outputs = [str(event.tool_output) async for event in handler.stream_events() if hasattr(event, "tool_output")]
        return str(await handler), outputs

    answer, outputs = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Perth is windy, 15C."
    assert outputs == ["Windy and 15C in Perth"]
    assert [e.kind for e in battery.steps] == ["llm", "llm"]


def test_function_agent_on_the_responses_api(battery: Any, tools: Any) -> None:
    """``OpenAIResponses``: the same agent on OpenAI's Responses API."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAIResponses

    get_weather = _weather_tool(tools)

    async def main() -> str:
        llm = OpenAIResponses(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        agent = FunctionAgent(tools=[get_weather], llm=llm)
        return str(await agent.run(user_msg="What is the weather in city=Hobart today?"))

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Windy and 15C in Hobart"
    assert [e.name for e in battery.steps] == ["openai.responses.create"] * 2


def test_predict_and_call_runs_a_tool(battery: Any, tools: Any) -> None:
    """The LLM's own sync tool-calling helper, ``predict_and_call``, outside any agent workflow."""
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    weather = FunctionTool.from_defaults(fn=_weather_tool(tools))

    def agent() -> str:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        return str(llm.predict_and_call([weather], "What is the weather in city=Darwin today?"))

    answer = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Windy and 15C in Darwin"
    assert [e.name for e in battery.steps] == ["openai.chat.completions.create"]


def test_function_agent_with_a_rag_query_engine_tool(battery: Any, tools: Any) -> None:
    """RAG: ``VectorStoreIndex`` on ``OpenAIEmbedding``, its query engine as the agent's tool."""
    pytest.importorskip("llama_index.embeddings.openai")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import QueryEngineTool
    from llama_index.embeddings.openai import OpenAIEmbedding
    from llama_index.llms.openai import OpenAI

    documents = [
        Document(text="The Lisbon office opens at 9 and closes at 17."),
        Document(text="The Porto office is closed on Mondays."),
    ]

    async def main() -> tuple[str, list[str]]:
        base = battery.stub.openai_base_url
        llm = OpenAI(model="gpt-4o-mini", api_base=base, max_retries=0)
        embed = OpenAIEmbedding(model="text-embedding-3-small", api_base=base, max_retries=0)
        index = VectorStoreIndex.from_documents(documents, embed_model=embed)
        engine = index.as_query_engine(llm=llm, similarity_top_k=1)
        search_offices = QueryEngineTool.from_defaults(
            engine, name="search_offices", description="Answers questions about the offices."
        )
        agent = FunctionAgent(tools=[search_offices], llm=llm)
        handler = agent.run(user_msg="When does the Lisbon office open? Search offices.")
        used = []
        async for event in handler.stream_events():
            if type(event).__name__ == "ToolCallResult":
                tools(event.tool_name, str(event.tool_output))
                used.append(event.tool_name)
        return str(await handler), used

    answer, used = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == used == ["search_offices"]
    # The synthesis step saw the retrieved document (the stub echoes its prompt).
    assert answer.startswith("Based on the tool result: Echo: Context information is below.")
    assert "The Lisbon office opens at 9 and closes at 17." in answer
    embed, chat = "openai.embeddings.create", "openai.chat.completions.create"
    # the documents' embeddings (one batch), the agent, the query's embedding, synthesis, the agent
    assert [e.name for e in battery.steps] == [embed, chat, embed, chat, chat]
