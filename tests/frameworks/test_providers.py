"""One agent per native provider SDK, unmodified, against the stub server in that provider's wire format.

Each agent is the tool loop the provider's own docs teach: send the tools, run the ones the
model calls, send the results back, stop at the first answer without tool calls.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

QUESTION = "What is the weather in city=Cairo today?"
ANSWER = "Based on the tool result: Dry and 35C in Cairo"

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city."}},
    "required": ["city"],
}
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": WEATHER_SCHEMA,
        },
    }
]


def _get_weather(tools: Any) -> Callable[..., str]:
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city.
        """
        tools("get_weather", city)
        return f"Dry and 35C in {city}"

    return get_weather


def _openai_shaped_loop(create: Callable[..., Any], tools: Any, model: str) -> list[str]:
    """The OpenAI-style tool loop, as written against any OpenAI-compatible SDK."""
    run_tool = {"get_weather": _get_weather(tools)}
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    seen: list[str] = []
    for _ in range(4):
        message = create(model=model, messages=messages, tools=OPENAI_TOOLS).choices[0].message
        if not message.tool_calls:
            seen.append(str(message.content))
            return seen
        messages.append(message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else message)
        for call in message.tool_calls:
            result = run_tool[call.function.name](**json.loads(call.function.arguments))
            seen.append(f"{call.function.name} -> {result}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the agent did not finish")


def _assert_agent_run(battery: Any, tools: Any, seen: list[str], step: str) -> None:
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert seen == ["get_weather -> Dry and 35C in Cairo", ANSWER]
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", step)] * 2


def test_litellm_completion_agent_loop(battery: Any, tools: Any) -> None:
    litellm = pytest.importorskip("litellm")

    def agent() -> list[str]:
        def create(**kwargs: Any) -> Any:
            return litellm.completion(api_base=battery.stub.openai_base_url, **kwargs)

        return _openai_shaped_loop(create, tools, "openai/gpt-4o-mini")

    seen = battery.run(agent, providers=("litellm", "openai"))
    _assert_agent_run(battery, tools, seen, "litellm.completion")


def test_groq_agent_loop(battery: Any, tools: Any) -> None:
    groq = pytest.importorskip("groq")

    def agent() -> list[str]:
        client = groq.Groq(base_url=battery.stub.url, max_retries=0)  # GROQ_API_KEY from the environment
        return _openai_shaped_loop(client.chat.completions.create, tools, "llama-3.3-70b-versatile")

    seen = battery.run(agent, providers=("groq",))
    _assert_agent_run(battery, tools, seen, "groq.chat.completions.create")


def test_together_agent_loop(battery: Any, tools: Any) -> None:
    together = pytest.importorskip("together")

    def agent() -> list[str]:
        client = together.Together(base_url=battery.stub.url, max_retries=0)
        return _openai_shaped_loop(client.chat.completions.create, tools, "meta-llama/Llama-3.3-70B-Instruct-Turbo")

    seen = battery.run(agent, providers=("together",))
    _assert_agent_run(battery, tools, seen, "together.chat.completions.create")


def test_fireworks_agent_loop(battery: Any, tools: Any) -> None:
    fireworks = pytest.importorskip("fireworks")

    def agent() -> list[str]:
        client = fireworks.Fireworks(base_url=battery.stub.url, max_retries=0)
        return _openai_shaped_loop(
            client.chat.completions.create, tools, "accounts/fireworks/models/llama-v3p3-70b-instruct"
        )

    seen = battery.run(agent, providers=("fireworks",))
    _assert_agent_run(battery, tools, seen, "fireworks.chat.completions.create")


def test_mistral_agent_loop(battery: Any, tools: Any) -> None:
    pytest.importorskip("mistralai")
    try:
        from mistralai.client import Mistral  # mistralai 2.x and later
    except ImportError:  # pragma: no cover - mistralai 1.x
        from mistralai import Mistral

    run_tool = {"get_weather": _get_weather(tools)}

    def agent() -> list[str]:
        client = Mistral(api_key="battery", server_url=battery.stub.mistral_base_url)
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        seen: list[str] = []
        while True:
            response = client.chat.complete(model="mistral-small-latest", messages=messages, tools=OPENAI_TOOLS)
            message = response.choices[0].message
            if not message.tool_calls:
                return [*seen, str(message.content)]
            messages.append(message)
            for call in message.tool_calls:
                args = call.function.arguments
                result = run_tool[call.function.name](**(json.loads(args) if isinstance(args, str) else args))
                seen.append(f"{call.function.name} -> {result}")
                messages.append(
                    {"role": "tool", "name": call.function.name, "content": result, "tool_call_id": call.id}
                )

    seen = battery.run(agent, providers=("mistral",))
    _assert_agent_run(battery, tools, seen, "mistral.chat.complete")


def test_cohere_v2_agent_loop(battery: Any, tools: Any) -> None:
    cohere = pytest.importorskip("cohere")
    run_tool = {"get_weather": _get_weather(tools)}

    def agent() -> list[str]:
        co = cohere.ClientV2(base_url=battery.stub.cohere_base_url, max_retries=0)  # CO_API_KEY from the environment
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        seen: list[str] = []
        while True:
            response = co.chat(model="command-a-03-2025", messages=messages, tools=OPENAI_TOOLS)
            if not response.message.tool_calls:
                return [*seen, response.message.content[0].text]
            messages.append(response.message)
            for call in response.message.tool_calls:
                result = run_tool[call.function.name](**json.loads(call.function.arguments))
                seen.append(f"{call.function.name} -> {result}")
                document = {"type": "document", "document": {"data": json.dumps({"weather": result})}}
                messages.append({"role": "tool", "tool_call_id": call.id, "content": [document]})

    seen = battery.run(agent, providers=("cohere",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert seen[0] == "get_weather -> Dry and 35C in Cairo"
    assert seen[1] == ANSWER.replace("Dry and 35C in Cairo", json.dumps({"weather": "Dry and 35C in Cairo"})), seen[1]
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "cohere.v2.chat")] * 2


def test_gemini_automatic_function_calling(battery: Any, tools: Any) -> None:
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import types

    get_weather = _get_weather(tools)

    def agent() -> tuple[str, list[str]]:
        client = genai.Client(http_options={"base_url": battery.stub.gemini_base_url})  # GEMINI_API_KEY
        response = client.models.generate_content(
            model="gemini-2.5-flash",
            contents=QUESTION,
            config=types.GenerateContentConfig(tools=[get_weather]),  # the SDK calls the tool itself
        )
        history = [
            part.function_response.name
            for content in response.automatic_function_calling_history or []
            for part in content.parts or []
            if part.function_response
        ]
        return str(response.text), history

    answer, history = battery.run(agent, providers=("gemini",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert history == ["get_weather"]
    assert answer == ANSWER, answer
    assert [e.name for e in battery.steps] == ["gemini.models.generate_content"] * 2


def test_bedrock_converse_through_langchain_aws(battery: Any, tools: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_aws")
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_aws import ChatBedrockConverse
    from langchain_core.tools import tool

    for name, value in {
        "AWS_ACCESS_KEY_ID": "battery",
        "AWS_SECRET_ACCESS_KEY": "battery",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    get_weather = tool(_get_weather(tools))

    def agent() -> list[str]:
        model = ChatBedrockConverse(
            model="anthropic.claude-3-haiku-20240307-v1:0",
            region_name="us-east-1",
            endpoint_url=battery.stub.bedrock_endpoint_url,
        )
        graph = create_agent(model, tools=[get_weather])
        state = graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})
        return [str(m.content) for m in state["messages"]]

    messages = battery.run(agent, providers=("bedrock",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert messages[-1] == ANSWER, messages[-1]
    assert [e.name for e in battery.steps] == ["bedrock.converse"] * 2


def test_xai_grpc_agent_loop(tmp_path: Any, tools: Any) -> None:
    """xAI speaks gRPC, not HTTP: the in-process gRPC server of the main suite stands in for the stub."""
    pytest.importorskip("xai_sdk")
    pytest.importorskip("grpc")
    import importlib.util
    from pathlib import Path

    import xai_sdk
    from xai_sdk.chat import tool, tool_result, user

    import rewind

    where = Path(__file__).resolve().parents[1] / "instrumentors" / "_xai_server.py"
    spec = importlib.util.spec_from_file_location("_battery_xai_server", where)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def search(query: str) -> str:
        tools("search", query)
        return f"3 hits for {query}"

    def agent(address: str) -> list[str]:
        client = xai_sdk.Client(api_key="xai-battery", api_host=address, use_insecure_channel=True)
        search_tool = tool("search", "Web search.", {"type": "object", "properties": {"query": {"type": "string"}}})
        chat = client.chat.create(model="grok-4", tools=[search_tool])
        chat.append(user("grok news"))
        seen: list[str] = []
        while True:
            response = chat.sample()
            if not response.tool_calls:
                return [*seen, response.content]
            chat.append(response)
            for call in response.tool_calls:
                result = search(**json.loads(call.function.arguments))
                seen.append(f"{call.function.name} -> {result}")
                chat.append(tool_result(result))

    trace = tmp_path / "xai.rewind"
    server = module.XAIStubServer().start()
    unpatch = rewind.auto_patch("xai")
    try:
        with rewind.record(trace):
            live = agent(server.address)
        live_tools = tools.names()
        tools.clear()
        address = server.address
        server.stop()  # nothing listens any more: a replay that went live fails loudly
        with rewind.replay(trace):
            replayed = agent(address)
    finally:
        unpatch()
        server.stop()
    assert replayed == live
    assert live_tools == tools.names() == ["search"]
    assert live == ["search -> 3 hits for grok news", "Based on the tool: 3 hits for grok news"]
    assert [(e.kind, e.name) for e in rewind.Trace.load(trace).events] == [("llm", "xai.chat.completion")] * 2


async def _openai_shaped_stream_loop(create: Callable[..., Any], tools: Any, model: str, **extra: Any) -> list[str]:
    """The same loop, async and streamed: tool-call deltas are stitched together by index."""
    run_tool = {"get_weather": _get_weather(tools)}
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    seen: list[str] = []
    for _ in range(4):
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        async for chunk in await create(model=model, messages=messages, tools=OPENAI_TOOLS, stream=True, **extra):
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            text.append(delta.content or "")
            for part in delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += part.id or ""
                call["name"] += part.function.name or "" if part.function else ""
                call["arguments"] += part.function.arguments or "" if part.function else ""
        if not calls:
            seen.append("".join(text))
            return seen
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls.values()
                ],
            }
        )
        for c in calls.values():
            result = run_tool[c["name"]](**json.loads(c["arguments"]))
            seen.append(f"{c['name']} -> {result}")
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    raise AssertionError("the agent did not finish")


def _assert_streamed(battery: Any, tools: Any, seen: list[str], step: str) -> None:
    _assert_agent_run(battery, tools, seen, step)
    assert all(e.request.get("stream") for e in battery.steps)


def test_litellm_acompletion_streamed_agent_loop(battery: Any, tools: Any) -> None:
    litellm = pytest.importorskip("litellm")

    def agent() -> list[str]:
        async def create(**kwargs: Any) -> Any:
            return await litellm.acompletion(api_base=battery.stub.openai_base_url, **kwargs)

        return asyncio.run(_openai_shaped_stream_loop(create, tools, "openai/gpt-4o-mini"))

    seen = battery.run(agent, providers=("litellm", "openai"))
    _assert_streamed(battery, tools, seen, "litellm.completion")  # one name, sync or async


@pytest.mark.parametrize(
    ("module", "client", "model"),
    [
        ("groq", "AsyncGroq", "llama-3.3-70b-versatile"),
        ("together", "AsyncTogether", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
        ("fireworks", "AsyncFireworks", "accounts/fireworks/models/llama-v3p3-70b-instruct"),
    ],
)
def test_openai_compatible_async_streamed_agent_loop(
    battery: Any, tools: Any, module: str, client: str, model: str
) -> None:
    sdk = pytest.importorskip(module)

    def agent() -> list[str]:
        async def main() -> list[str]:
            async with getattr(sdk, client)(base_url=battery.stub.url, max_retries=0) as api:
                return await _openai_shaped_stream_loop(api.chat.completions.create, tools, model)

        return asyncio.run(main())

    seen = battery.run(agent, providers=(module,))
    _assert_streamed(battery, tools, seen, f"{module}.chat.completions.create")


def test_mistral_async_streamed_agent_loop(battery: Any, tools: Any) -> None:
    pytest.importorskip("mistralai")
    try:
        from mistralai.client import Mistral
    except ImportError:  # pragma: no cover - mistralai 1.x
        from mistralai import Mistral

    run_tool = {"get_weather": _get_weather(tools)}

    async def main() -> list[str]:
        client = Mistral(api_key="battery", server_url=battery.stub.mistral_base_url)
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        seen: list[str] = []
        while True:
            text: list[str] = []
            calls: list[Any] = []
            stream = await client.chat.stream_async(model="mistral-small-latest", messages=messages, tools=OPENAI_TOOLS)
            async for event in stream:
                delta = event.data.choices[0].delta
                text.append(delta.content if isinstance(delta.content, str) else "")
                calls.extend(delta.tool_calls or [])  # Mistral sends a tool call whole, in one delta
            if not calls:
                return [*seen, "".join(text)]
            messages.append({"role": "assistant", "content": "", "tool_calls": [c.model_dump() for c in calls]})
            for call in calls:
                args = call.function.arguments
                result = run_tool[call.function.name](**(json.loads(args) if isinstance(args, str) else args))
                seen.append(f"{call.function.name} -> {result}")
                messages.append(
                    {"role": "tool", "name": call.function.name, "content": result, "tool_call_id": call.id}
                )

    seen = battery.run(lambda: asyncio.run(main()), providers=("mistral",))
    _assert_agent_run(battery, tools, seen, "mistral.chat.stream")


def test_cohere_v2_streamed_agent_loop(battery: Any, tools: Any) -> None:
    cohere = pytest.importorskip("cohere")
    run_tool = {"get_weather": _get_weather(tools)}

    def agent() -> list[str]:
        co = cohere.ClientV2(base_url=battery.stub.cohere_base_url, max_retries=0)
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        seen: list[str] = []
        while True:
            text: list[str] = []
            plan: list[str] = []
            calls: dict[int, dict[str, str]] = {}
            for event in co.chat_stream(model="command-a-03-2025", messages=messages, tools=OPENAI_TOOLS):
                if event.type == "content-delta":
                    text.append(event.delta.message.content.text)
                elif event.type == "tool-plan-delta":
                    plan.append(event.delta.message.tool_plan)
                elif event.type == "tool-call-start":
                    tc = event.delta.message.tool_calls
                    calls[event.index] = {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                elif event.type == "tool-call-delta":
                    calls[event.index]["arguments"] += event.delta.message.tool_calls.function.arguments
            if not calls:
                return [*seen, "".join(text)]
            messages.append(
                {
                    "role": "assistant",
                    "tool_plan": "".join(plan),
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in calls.values()
                    ],
                }
            )
            for c in calls.values():
                result = run_tool[c["name"]](**json.loads(c["arguments"]))
                seen.append(f"{c['name']} -> {result}")
                document = {"type": "document", "document": {"data": json.dumps({"weather": result})}}
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": [document]})

    seen = battery.run(agent, providers=("cohere",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert seen[0] == "get_weather -> Dry and 35C in Cairo"
    assert seen[1] == ANSWER.replace("Dry and 35C in Cairo", json.dumps({"weather": "Dry and 35C in Cairo"}))
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "cohere.v2.chat_stream")] * 2


def test_gemini_async_chat_with_automatic_function_calling(battery: Any, tools: Any) -> None:
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import types

    get_weather = _get_weather(tools)

    async def main() -> list[str]:
        client = genai.Client(http_options={"base_url": battery.stub.gemini_base_url})
        chat = client.aio.chats.create(
            model="gemini-2.5-flash", config=types.GenerateContentConfig(tools=[get_weather])
        )
        response = await chat.send_message(QUESTION)
        return [str(response.text), *(str(c.role) for c in chat.get_history())]

    seen = battery.run(lambda: asyncio.run(main()), providers=("gemini",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert seen[0] == ANSWER
    assert seen[1:] == ["user", "model", "user", "model"]
    assert [e.name for e in battery.steps] == ["gemini.models.generate_content"] * 2


def test_bedrock_converse_stream_through_langchain_aws(
    battery: Any, tools: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_aws")
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_aws import ChatBedrockConverse
    from langchain_core.tools import tool

    for name, value in {"AWS_ACCESS_KEY_ID": "battery", "AWS_SECRET_ACCESS_KEY": "battery"}.items():
        monkeypatch.setenv(name, value)
    get_weather = tool(_get_weather(tools))

    def agent() -> list[str]:
        model = ChatBedrockConverse(
            model="anthropic.claude-3-haiku-20240307-v1:0",
            region_name="us-east-1",
            endpoint_url=battery.stub.bedrock_endpoint_url,
        )
        graph = create_agent(model, tools=[get_weather])
        tokens: list[str] = []
        for chunk, _ in graph.stream({"messages": [{"role": "user", "content": QUESTION}]}, stream_mode="messages"):
            if chunk.type == "AIMessageChunk":
                tokens.append(chunk.text)
        return tokens

    tokens = battery.run(agent, providers=("bedrock",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert "".join(tokens) == ANSWER
    assert len([t for t in tokens if t]) > 3
    assert [e.name for e in battery.steps] == ["bedrock.converse_stream"] * 2


@pytest.mark.parametrize(
    ("model", "base"),
    [
        ("anthropic/claude-3-5-haiku-latest", "anthropic_base_url"),
        ("mistral/mistral-small-latest", "mistral_base_url"),
        ("gemini/gemini-2.5-flash", "gemini_base_url"),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_litellm_routes_to_native_backends(battery: Any, tools: Any, model: str, base: str, stream: bool) -> None:
    """litellm speaking each backend's own wire format (its own HTTP code, no provider SDK underneath)."""
    litellm = pytest.importorskip("litellm")
    api_base = getattr(battery.stub, base) + ("/v1" if base == "mistral_base_url" else "")

    def agent() -> list[str]:
        if not stream:
            return _openai_shaped_loop(lambda **kw: litellm.completion(api_base=api_base, **kw), tools, model)

        async def create(**kwargs: Any) -> Any:
            return await litellm.acompletion(api_base=api_base, **kwargs)

        return asyncio.run(_openai_shaped_stream_loop(create, tools, model))

    seen = battery.run(agent, providers=("litellm",))
    _assert_agent_run(battery, tools, seen, "litellm.completion")
    assert [bool(e.request.get("stream")) for e in battery.steps] == [stream, stream]


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke_model", "invoke_model_with_response_stream"])
def test_bedrock_invoke_model_through_langchain_aws_chat_bedrock(
    battery: Any, tools: Any, monkeypatch: pytest.MonkeyPatch, streaming: bool
) -> None:
    """``ChatBedrock`` (not Converse): Anthropic Messages bodies through ``invoke_model``."""
    pytest.importorskip("langchain_aws")
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_aws import ChatBedrock
    from langchain_core.tools import tool

    for name, value in {"AWS_ACCESS_KEY_ID": "battery", "AWS_SECRET_ACCESS_KEY": "battery"}.items():
        monkeypatch.setenv(name, value)
    get_weather = tool(_get_weather(tools))

    def agent() -> list[str]:
        model = ChatBedrock(
            model_id="anthropic.claude-3-haiku-20240307-v1:0",
            region_name="us-east-1",
            endpoint_url=battery.stub.bedrock_endpoint_url,
            streaming=streaming,
        )
        graph = create_agent(model, tools=[get_weather])
        state = graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})
        return [str(m.text) for m in state["messages"]]

    messages = battery.run(agent, providers=("bedrock",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert messages[-1] == ANSWER
    name = "bedrock.invoke_model_with_response_stream" if streaming else "bedrock.invoke_model"
    assert [e.name for e in battery.steps] == [name] * 2


def test_gemini_streamed_manual_function_calling(battery: Any, tools: Any) -> None:
    """``generate_content_stream`` with function declarations: the caller runs the tool and sends it back."""
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import types

    run_tool = {"get_weather": _get_weather(tools)}
    declaration = types.FunctionDeclaration(
        name="get_weather", description="The current weather in a city.", parameters_json_schema=WEATHER_SCHEMA
    )
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])

    def agent() -> list[str]:
        client = genai.Client(http_options={"base_url": battery.stub.gemini_base_url})
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=QUESTION)])]
        seen: list[str] = []
        while True:
            text: list[str] = []
            calls: list[Any] = []
            parts: list[Any] = []
            for chunk in client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents, config=config
            ):
                for part in chunk.candidates[0].content.parts or []:
                    parts.append(part)
                    if part.function_call:
                        calls.append(part.function_call)
                    elif part.text:
                        text.append(part.text)
            if not calls:
                return [*seen, "".join(text)]
            contents.append(types.Content(role="model", parts=parts))
            for call in calls:
                result = run_tool[call.name](**call.args)
                seen.append(f"{call.name} -> {result}")
                contents.append(
                    types.Content(
                        role="user",
                        parts=[types.Part.from_function_response(name=call.name, response={"result": result})],
                    )
                )

    seen = battery.run(agent, providers=("gemini",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert seen[0] == "get_weather -> Dry and 35C in Cairo"
    assert seen[1] == ANSWER
    assert [e.name for e in battery.steps] == ["gemini.models.generate_content_stream"] * 2
