"""LangGraph agents, unmodified, on langchain-openai against the stub server."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

# Module level: LangGraph reads the node functions' type hints at graph build time.
from langgraph.graph import END, START, MessagesState, StateGraph


def _weather_tool(tools: Any) -> Any:
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"It is sunny and 21C in {city}."

    return get_weather


def test_react_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    get_weather = _weather_tool(tools)

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        graph = create_react_agent(model, [get_weather])
        state = graph.invoke({"messages": [("user", "What is the weather in Oslo?")]})
        return [str(m.content) for m in state["messages"]]

    with pytest.warns(DeprecationWarning):  # LangGraph 1.x moved it to langchain.agents
        messages = battery.run(agent)
    assert battery.live_tools == ["get_weather"]
    assert tools.names() == ["get_weather"]  # the tool is agent code: it ran again on replay
    assert "sunny" in messages[-1]
    assert [e.kind for e in battery.steps] == ["llm", "llm"]


def test_create_agent_of_langchain_1(battery: Any, tools: Any) -> None:
    """LangGraph 1.x's documented entry point: ``langchain.agents.create_agent`` (a LangGraph graph)."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    get_weather = _weather_tool(tools)

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)  # OPENAI_BASE_URL points at the stub
        graph = create_agent(model, tools=[get_weather], system_prompt="You are a terse weather bot.")
        state = graph.invoke({"messages": [{"role": "user", "content": "What is the weather in Lima?"}]})
        return [str(m.content) for m in state["messages"]]

    messages = battery.run(agent)
    assert battery.live_tools == ["get_weather"]
    assert messages[-1] == "Based on the tool result: It is sunny and 21C in What is the weather in Lima?."
    assert [e.kind for e in battery.steps] == ["llm", "llm"]


def test_parallel_tool_calls_run_concurrently_and_replay(battery: Any, tools: Any) -> None:
    """One model turn asks for two tools; LangGraph's ToolNode runs them at the same time.

    Only the model calls are recorded (the tools are agent code), and they stay sequential:
    ToolNode appends the tool results in the order of the model's tool calls, whichever tool
    finishes first, so the next request is the same on every run and strict matching holds.
    ``match="parallel"`` replays it too (asserted below).
    """
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode

    # Both tools wait for each other: the run only finishes if they really run at once.
    meeting = threading.Barrier(2, timeout=10)

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        meeting.wait()
        tools("get_weather", city)
        return f"sunny in {city}"

    @tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        meeting.wait()
        tools("get_time", city)
        return f"noon in {city}"

    battery.stub.add_script(
        {
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Rome"}},
                {"name": "get_time", "arguments": {"city": "Rome"}},
            ]
        }
    )

    def agent() -> list[str]:
        # The graph as LangGraph's docs build it by hand: a model node, a ToolNode, a loop.
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools([get_weather, get_time])

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def route(state: MessagesState) -> str:
            return "tools" if state["messages"][-1].tool_calls else END

        builder = StateGraph(MessagesState)
        builder.add_node("model", call_model)
        builder.add_node("tools", ToolNode([get_weather, get_time]))
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", route, ["tools", END])
        builder.add_edge("tools", "model")
        state = builder.compile().invoke({"messages": [("user", "Weather and time in Rome?")]})
        return [str(m.content) for m in state["messages"]]

    messages = battery.run(agent)
    assert sorted(battery.live_tools) == ["get_time", "get_weather"]
    assert sorted(tools.names()) == ["get_time", "get_weather"]
    assert messages[-1] == "Based on the tool result: sunny in Rome; noon in Rome"
    assert [e.kind for e in battery.steps] == ["llm", "llm"]

    import rewind
    from rewind.setup.integrations import patched

    with patched("openai"), rewind.replay(battery.trace, match="parallel"):
        assert agent() == messages


def test_stream_mode_messages_streams_tokens(battery: Any, tools: Any) -> None:
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    get_weather = _weather_tool(tools)

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", streaming=True, max_retries=0)
        graph = create_react_agent(model, [get_weather])
        tokens: list[str] = []
        for chunk, metadata in graph.stream(
            {"messages": [("user", "What is the weather in Quito?")]}, stream_mode="messages"
        ):
            if metadata["langgraph_node"] == "agent" and chunk.content:
                tokens.append(str(chunk.content))
        return tokens

    with pytest.warns(DeprecationWarning):
        tokens = battery.run(agent)
    assert battery.live_tools == ["get_weather"]
    assert len(tokens) > 3  # word by word, not one message
    assert "".join(tokens).startswith("Based on the tool result: It is sunny")
    steps = battery.steps
    assert [e.kind for e in steps] == ["llm", "llm"]
    assert all(e.request["stream"] for e in steps)  # recorded as streams, replayed as streams


def test_human_in_the_loop_interrupt_and_resume(battery: Any, tools: Any) -> None:
    """A checkpointed graph pauses in a tool with ``interrupt()`` and resumes with ``Command``."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command, interrupt

    @tool
    def book_hotel(city: str) -> str:
        """Book a hotel in a city."""
        approval = interrupt({"question": f"Book a hotel in {city}?"})
        tools("book_hotel", approval)
        return f"Booked in {city}" if approval == "yes" else "Not booked"

    def agent() -> tuple[str, str]:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        graph = create_agent(model, tools=[book_hotel], checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "trip-1"}}
        paused = graph.invoke({"messages": [("user", "book hotel in city=Bled please")]}, config)
        question = paused["__interrupt__"][0].value["question"]
        done = graph.invoke(Command(resume="yes"), config)
        return question, str(done["messages"][-1].content)

    question, answer = battery.run(agent)
    assert question == "Book a hotel in Bled?"
    assert answer == "Based on the tool result: Booked in Bled"
    # The tool ran twice per run (LangGraph re-runs an interrupted node on resume) but
    # logged once, after the interrupt; the model was asked twice in all.
    assert battery.live_tools == tools.names() == ["book_hotel"]
    assert len(battery.steps) == 2


def test_parallel_sub_agent_tools_need_match_parallel(battery: Any, tools: Any) -> None:
    """Two tools of one model turn that each ask a model (agents as tools), on ToolNode's threads.

    Their model calls begin on two threads after a lookup of varying length, so which one
    begins first changes from run to run (with no lookup it is up to the thread scheduler:
    stable in practice, guaranteed by nothing). This trace needs ``match="parallel"``.
    LangGraph runs sync tools on a pool that copies the caller's context, so the calls reach
    the session without ``patch_thread_pool()``.
    """
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    def ask(question: str) -> str:
        time.sleep(random.uniform(0, 0.05))  # a lookup of varying latency first
        return str(ChatOpenAI(model="gpt-4o-mini", max_retries=0).invoke(question).content)

    @tool
    def ask_historian(city: str) -> str:
        """Ask the historian about a city."""
        tools("ask_historian", city)
        return ask(f"history of {city}")

    @tool
    def ask_chef(city: str) -> str:
        """Ask the chef about a city."""
        tools("ask_chef", city)
        return ask(f"food of {city}")

    battery.stub.add_script(
        {
            "tool_calls": [
                {"name": "ask_historian", "arguments": {"city": "Fez"}},
                {"name": "ask_chef", "arguments": {"city": "Fez"}},
            ]
        }
    )

    def agent() -> str:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools([ask_historian, ask_chef])

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def route(state: MessagesState) -> str:
            return "tools" if state["messages"][-1].tool_calls else END

        from langgraph.prebuilt import ToolNode

        builder = StateGraph(MessagesState)
        builder.add_node("model", call_model)
        builder.add_node("tools", ToolNode([ask_historian, ask_chef]))
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", route, ["tools", END])
        builder.add_edge("tools", "model")
        state = builder.compile().invoke({"messages": [("user", "Tell me about Fez.")]})
        return str(state["messages"][-1].content)

    answer = battery.run(agent, match="parallel")
    assert answer == "Based on the tool result: Echo: history of Fez; Echo: food of Fez"
    assert sorted(battery.live_tools) == ["ask_chef", "ask_historian"]
    assert len(battery.steps) == 4  # the turn, two sub-agent calls, the answer
