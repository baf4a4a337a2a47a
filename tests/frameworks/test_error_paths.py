"""Each framework's error path, replayed offline as it ran live.

The provider answers 429, 500 (529: Anthropic's overload) or 401; the framework does what it
does with that (re-raises as its own class, retries, falls back) and the agent reports what
it saw: the exception's class, ``str``, status, and the HTTP request and response it
carries (frameworks and user handlers read ``e.response.request`` and ``e.request.url``).
``Battery.run`` records it against the stub server, stops the server, replays, and the two
reports must be equal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

STATUSES = {"openai": (429, 500, 401), "anthropic": (429, 529, 401)}


def describe(exc: BaseException, _outer: frozenset[int] = frozenset()) -> dict[str, Any]:
    """What an error handler can read of ``exc`` and of the errors it wraps (a chain that
    comes back to an error already described, as crewai's retries make, ends there)."""
    seen: dict[str, Any] = {"class": f"{type(exc).__module__}.{type(exc).__qualname__}", "str": str(exc)}
    for name in ("status_code", "code", "body"):
        value = getattr(exc, name, None)
        if isinstance(value, (str, int, dict, list)):
            seen[name] = value
    request = getattr(exc, "request", None)
    if request is not None and hasattr(request, "url"):
        seen["request"] = (request.method, str(request.url))
    response = getattr(exc, "response", None)
    if response is not None and hasattr(response, "status_code"):
        seen["response"] = (
            response.status_code,
            response.headers.get("retry-after"),
            response.text,
            (response.request.method, str(response.request.url)),
        )
    # The error a framework re-raised from (``raise ... from e``). ``__context__`` is not read:
    # the SDKs raise their status errors ``from None``, hiding the httpx error inside.
    if exc.__cause__ is not None:
        cause = exc.__cause__
        seen["cause"] = "<cycle>" if id(cause) in _outer | {id(exc)} else describe(cause, _outer | {id(exc)})
    return seen


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raised", describe(exc))


# -- one model call per framework -------------------------------------------------------------


def langchain_openai(battery: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return str(ChatOpenAI(model="gpt-4o-mini", max_retries=0).invoke("hello").content)


def langchain_anthropic(battery: Any) -> Any:
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model="claude-sonnet-4-6", base_url=battery.stub.anthropic_base_url, max_retries=0)
    return str(model.invoke("hello").content)


def openai_agents(battery: Any) -> Any:
    import agents
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    agents.set_default_openai_client(AsyncOpenAI(base_url=battery.stub.openai_base_url, max_retries=0))
    return agents.Runner.run_sync(agents.Agent(name="Assistant"), "hello").final_output


def pydantic_ai(battery: Any) -> Any:
    from pydantic_ai import Agent

    return Agent("openai:gpt-4o-mini").run_sync("hello").output


def instructor_openai(battery: Any) -> Any:
    import instructor
    from openai import OpenAI
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    client = instructor.from_openai(OpenAI(base_url=battery.stub.openai_base_url, max_retries=0))
    return client.chat.completions.create(
        model="gpt-4o-mini", response_model=Answer, max_retries=1, messages=[{"role": "user", "content": "hello"}]
    ).model_dump()


def langgraph_react(battery: Any) -> Any:
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    model = ChatOpenAI(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
    state = create_react_agent(model, tools=[]).invoke({"messages": [("user", "hello")]})
    return str(state["messages"][-1].content)


def smolagents_litellm(battery: Any) -> Any:
    from smolagents import LiteLLMModel, ToolCallingAgent

    # retry=False: smolagents' own rate-limit retry waits a minute between attempts.
    model = LiteLLMModel(
        model_id="openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, api_key="sk-battery", retry=False
    )
    return str(ToolCallingAgent(tools=[], model=model, max_steps=1, verbosity_level=0).run("hello"))


def smolagents_openai(battery: Any) -> Any:
    from smolagents import OpenAIServerModel, ToolCallingAgent

    model = OpenAIServerModel(
        model_id="gpt-4o-mini",
        api_base=battery.stub.openai_base_url,
        api_key="sk-battery",
        client_kwargs={"max_retries": 0},
        retry=False,
    )
    return str(ToolCallingAgent(tools=[], model=model, max_steps=1, verbosity_level=0).run("hello"))


def dspy_predict(battery: Any) -> Any:
    import dspy

    lm = dspy.LM("openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, cache=False, num_retries=0)
    with dspy.context(lm=lm):
        return dspy.Predict("question -> answer")(question="hello").answer


def autogen_assistant(battery: Any) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def main() -> Any:
        client = OpenAIChatCompletionClient(
            model="gpt-4o-mini-2024-07-18", base_url=battery.stub.openai_base_url, max_retries=0
        )
        try:
            result = await AssistantAgent("assistant", model_client=client).run(task="hello")
            return str(result.messages[-1].content)
        finally:
            await client.close()

    return asyncio.run(main())


def haystack_agent(battery: Any) -> Any:
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage

    generator = OpenAIChatGenerator(model="gpt-4o-mini", api_base_url=battery.stub.openai_base_url, max_retries=0)
    assistant = Agent(chat_generator=generator)
    assistant.warm_up()
    return assistant.run(messages=[ChatMessage.from_user("hello")])["messages"][-1].text


def llamaindex_agent(battery: Any) -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    async def main() -> str:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        return str(await FunctionAgent(tools=[], llm=llm).run(user_msg="hello"))

    return asyncio.run(main())


def crewai_crew(battery: Any) -> Any:
    from crewai import LLM, Agent, Crew, Task

    llm = LLM(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
    agent = Agent(role="Greeter", goal="Greet people", backstory="You say hello.", llm=llm, verbose=False)
    task = Task(description="Say hello.", expected_output="A greeting.", agent=agent)
    return str(Crew(agents=[agent], tasks=[task], verbose=False).kickoff())


FRAMEWORKS: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    # name: (module to import, provider, one call)
    "langchain-openai": ("langchain_openai", "openai", langchain_openai),
    "langchain-anthropic": ("langchain_anthropic", "anthropic", langchain_anthropic),
    "openai-agents": ("agents", "openai", openai_agents),
    "pydantic-ai": ("pydantic_ai", "openai", pydantic_ai),
    "instructor": ("instructor", "openai", instructor_openai),
    "langgraph": ("langgraph", "openai", langgraph_react),
    "smolagents-litellm": ("smolagents", "openai", smolagents_litellm),
    "smolagents-openai": ("smolagents", "openai", smolagents_openai),
    "dspy": ("dspy", "openai", dspy_predict),
    "autogen": ("autogen_ext.models.openai", "openai", autogen_assistant),
    "haystack": ("haystack", "openai", haystack_agent),
    # groups of their own (frameworks/llamaindex.txt, frameworks/crewai.txt)
    "llamaindex": ("llama_index.llms.openai", "openai", llamaindex_agent),
    "crewai": ("crewai", "openai", crewai_crew),
}
#: What rewind hooks for a framework when not only its provider's SDK: litellm-based ones are
#: recorded at litellm's own layer (it reaches the stub through the openai SDK underneath).
PATCHES = {"smolagents-litellm": ("litellm", "openai"), "dspy": ("litellm", "openai")}


@pytest.mark.parametrize(
    ("framework", "status"),
    [(name, status) for name, (_, provider, _) in FRAMEWORKS.items() for status in STATUSES[provider]],
)
def test_a_provider_error_replays_through_the_framework(battery: Any, framework: str, status: int) -> None:
    module, provider, call = FRAMEWORKS[framework]
    pytest.importorskip(module)

    def agent() -> Any:
        return outcome(lambda: call(battery))

    # Three in a row: a framework that builds its client with the SDK's default two retries
    # (pydantic-ai) meets the failure too, not only the SDK's retry loop inside one step.
    battery.stub.fail_next(status, n=3, headers={"retry-after": "0"})
    kind, seen = battery.run(agent, providers=PATCHES.get(framework, (provider,)))
    assert battery.steps[0].ok is False  # the provider's failure is a recorded step
    if kind == "raised":  # the framework re-raised it (as its own class, or the SDK's)
        assert str(status) in repr(seen)
    else:  # the framework retried past it (the OpenAI Agents SDK does, on 429 and 5xx)
        assert status != 401 and battery.steps[-1].ok


def test_langchain_retries_past_a_rate_limit(battery: Any) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    def agent() -> str:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).with_retry(
            stop_after_attempt=2, wait_exponential_jitter=False
        )
        return str(model.invoke("hello").content)

    battery.stub.fail_next(429)
    assert battery.run(agent) == "Echo: hello"
    assert [e.ok for e in battery.steps] == [False, True]


def test_langchain_falls_back_after_a_server_error(battery: Any) -> None:
    pytest.importorskip("langchain_anthropic")
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import ChatOpenAI

    def agent() -> str:
        primary = ChatAnthropic(model="claude-sonnet-4-6", base_url=battery.stub.anthropic_base_url, max_retries=0)
        fallback = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        return str(primary.with_fallbacks([fallback]).invoke("hello").content)

    battery.stub.fail_next(529)
    assert battery.run(agent, providers=("anthropic", "openai")) == "Echo: hello"
    assert [(e.name, e.ok) for e in battery.steps] == [
        ("anthropic.messages.create", False),
        ("openai.chat.completions.create", True),
    ]


def test_pydantic_ai_fallback_model_after_a_rate_limit(battery: Any) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.fallback import FallbackModel

    def agent() -> str:
        model = FallbackModel("anthropic:claude-sonnet-4-6", "openai:gpt-4o-mini")
        return str(Agent(model).run_sync("hello").output)

    # pydantic-ai's Anthropic client retries twice itself (inside one step): three 429s exhaust it.
    battery.stub.fail_next(429, n=3, headers={"retry-after": "0"})
    assert battery.run(agent, providers=("anthropic", "openai")).endswith("hello")
    assert [e.ok for e in battery.steps] == [False, True]
    assert [e.name.split(".")[0] for e in battery.steps] == ["anthropic", "openai"]


def test_an_async_framework_error(battery: Any) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    async def main() -> Any:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        try:
            return await model.ainvoke("hello")
        except Exception as exc:
            return describe(exc)

    battery.stub.fail_next(500)
    seen = battery.run(lambda: asyncio.run(main()))
    assert "500" in repr(seen)
