"""litellm completion/embedding, sync and async: record against the stub, stop it, replay offline.

Every test runs the real litellm over real loopback HTTP (``openai/...`` models through
litellm's OpenAI route, ``anthropic/...`` through its Anthropic one).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import wrapt
from _litellm_support import (  # noqa: F401 - patched_litellm is a fixture
    API_KEY,
    EMBEDDING_MODEL,
    MODEL,
    TOOLS,
    ask,
    events,
    litellm,
    openai_route,
    patched_litellm,
    same,
)

import rewind
from rewind.stub_server import StubServer

pytestmark = pytest.mark.usefixtures("patched_litellm")


def test_completion_replays_litellms_own_response_attribute_for_attribute(stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"text": "checking", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})
    with rewind.record(trace_path):
        live = litellm.completion(model=MODEL, messages=ask("weather in Paris?"), tools=TOOLS, **openai_route(stub))
    (event,) = events(trace_path)
    assert event.name == "litellm.completion" and event.response["choices"][0]["finish_reason"] == "tool_calls"
    assert event.request == {"model": MODEL, "messages": ask("weather in Paris?"), "tools": TOOLS}
    served = stub.request_count
    stub.stop()

    with rewind.replay(trace_path):
        replayed = litellm.completion(model=MODEL, messages=ask("weather in Paris?"), tools=TOOLS, **openai_route(stub))
    assert stub.request_count == served
    assert type(replayed) is litellm.ModelResponse
    assert same(replayed, live)  # every attribute, and the private state
    call = replayed.choices[0].message.tool_calls[0]
    assert type(call) is type(live.choices[0].message.tool_calls[0])
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert replayed.usage == live.usage and replayed.usage.total_tokens > 0
    assert replayed._hidden_params["response_cost"] == live._hidden_params["response_cost"]
    assert replayed._hidden_params["custom_llm_provider"] == "openai"
    assert replayed._response_headers == live._response_headers
    assert replayed._hidden_params is not live._hidden_params


def test_async_completion_and_embeddings(stub: StubServer, trace_path: Path) -> None:
    async def agent() -> tuple:
        reply = await litellm.acompletion(model=MODEL, messages=ask("hello"), **openai_route(stub))
        vectors = await litellm.aembedding(model=EMBEDDING_MODEL, input=["a", "b"], **openai_route(stub))
        return reply, vectors

    async def recorded() -> tuple:
        async with rewind.record(trace_path):
            return await agent()

    async def replayed() -> tuple:
        async with rewind.replay(trace_path):
            return await agent()

    live = asyncio.run(recorded())
    assert [e.name for e in events(trace_path)] == ["litellm.completion", "litellm.embedding"]
    stub.stop()
    again = asyncio.run(replayed())
    assert same(again, live)
    assert type(again[1]) is litellm.EmbeddingResponse and len(again[1].data) == 2
    assert again[0].choices[0].message.content == "Echo: hello"


def test_sync_embedding(stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = litellm.embedding(model=EMBEDDING_MODEL, input="one", **openai_route(stub))
    stub.stop()
    with rewind.replay(trace_path):
        replayed = litellm.embedding(model=EMBEDDING_MODEL, input="one", **openai_route(stub))
    assert same(replayed, live) and replayed.data[0]["embedding"] == live.data[0]["embedding"]


def test_sync_recording_replays_through_the_async_functions(stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = litellm.completion(model=MODEL, messages=ask("either way"), **openai_route(stub))
    stub.stop()

    async def replay() -> object:
        async with rewind.replay(trace_path):
            return await litellm.acompletion(model=MODEL, messages=ask("either way"), **openai_route(stub))

    assert same(asyncio.run(replay()), live)


def test_positional_and_keyword_calls_are_the_same_request(stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = litellm.completion(MODEL, ask("positional"), **openai_route(stub))
    assert events(trace_path)[0].request == {"model": MODEL, "messages": ask("positional")}
    stub.stop()
    with rewind.replay(trace_path):
        assert same(litellm.completion(model=MODEL, messages=ask("positional"), **openai_route(stub)), live)


def test_credentials_and_transport_are_neither_identity_nor_written(stub: StubServer, trace_path: Path) -> None:
    secret_header = "Bearer sk-header-SECRET"
    with rewind.record(trace_path):
        litellm.completion(
            model=MODEL,
            messages=ask("keys"),
            extra_headers={"Authorization": secret_header},
            timeout=30,
            metadata={"tenant": "t-SECRET"},
            azure_ad_token="ad-SECRET",
            **openai_route(stub),
        )
    text = trace_path.read_text()
    for secret in (API_KEY, secret_header, "t-SECRET", "ad-SECRET", f"127.0.0.1:{stub.port}"):
        assert secret not in text, text[max(0, text.find(secret) - 200) :]
    stub.stop()
    # Another key, endpoint, timeout and callback objects (CrewAI passes some): the same request.
    with rewind.replay(trace_path):
        reply = litellm.completion(
            model=MODEL,
            messages=ask("keys"),
            api_key="sk-other",
            api_base="http://127.0.0.1:9/v1",
            timeout=1,
            callbacks=[object()],
        )
    assert reply.choices[0].message.content == "Echo: keys"


def test_endpoints_echoes_and_secret_headers_are_dropped_from_private_state() -> None:
    from rewind.instrumentors.litellm import private_state, restore_state

    response = litellm.ModelResponse()
    response._hidden_params = {
        "api_base": "https://user:pw@example.test/v1beta/models?key=AIza-SECRET",
        "additional_headers": {"llm_provider-set-cookie": "session=SECRET", "llm_provider-x-request-id": "r1"},
        "api_key": "sk-SECRET",
        "optional_params": {"extra_body": {"vendor_auth": "SECRET"}},
        "response_cost": 0.5,
    }
    state = private_state(response)
    assert "SECRET" not in json.dumps(state) and "example.test" not in json.dumps(state)
    assert state["hidden_params"] == {"additional_headers": {"llm_provider-x-request-id": "r1"}, "response_cost": 0.5}
    fresh = litellm.ModelResponse()
    restore_state(fresh, state)
    assert fresh._hidden_params["response_cost"] == 0.5


def test_changed_request_diverges_instead_of_going_live(stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        litellm.completion(model=MODEL, messages=ask("original"), **openai_route(stub))
    served = stub.request_count
    with pytest.raises(rewind.DivergenceError), rewind.replay(trace_path):
        litellm.completion(model=MODEL, messages=ask("edited"), **openai_route(stub))
    assert stub.request_count == served


def test_anthropic_models_through_litellms_anthropic_route(stub: StubServer, trace_path: Path) -> None:
    route = {"api_base": stub.anthropic_base_url, "api_key": "sk-ant-SECRET", "max_tokens": 64}
    with rewind.record(trace_path):
        live = litellm.completion(model="anthropic/claude-stub", messages=ask("bonjour"), **route)
    assert [r.path for r in stub.requests] == ["/v1/messages"]
    stub.stop()
    with rewind.replay(trace_path):
        replayed = litellm.completion(model="anthropic/claude-stub", messages=ask("bonjour"), **route)
    assert same(replayed, live) and replayed.choices[0].message.content == "Echo: bonjour"
    assert "sk-ant-SECRET" not in trace_path.read_text()


def test_no_session_is_a_plain_passthrough(stub: StubServer) -> None:
    reply = litellm.completion(model=MODEL, messages=ask("plain"), **openai_route(stub))
    assert reply.choices[0].message.content == "Echo: plain" and stub.request_count == 1


def test_unpatch_restores_the_module_functions() -> None:
    import litellm.main

    from rewind.setup.integrations import patch_litellm

    hooked = litellm.completion
    unpatch = patch_litellm()  # a second consumer: the hooks stay until the last one leaves
    unpatch()
    assert litellm.completion is hooked
    assert isinstance(litellm.completion, wrapt.FunctionWrapper)
    assert isinstance(litellm.main.acompletion, wrapt.FunctionWrapper)


def test_router_calls_are_recorded_and_replayed(stub: StubServer, trace_path: Path) -> None:
    def router() -> object:
        deployment = {"model": MODEL, "api_base": stub.openai_base_url, "api_key": API_KEY, "max_retries": 0}
        return litellm.Router(model_list=[{"model_name": "fast", "litellm_params": deployment}], num_retries=0)

    with rewind.record(trace_path):
        live = router().completion(model="fast", messages=ask("routed"))
    assert [e.name for e in events(trace_path)] == ["litellm.completion"]
    assert API_KEY not in trace_path.read_text()
    stub.stop()
    with rewind.replay(trace_path):
        replayed = router().completion(model="fast", messages=ask("routed"))
    assert replayed.choices[0].message.content == live.choices[0].message.content == "Echo: routed"


def test_redact_reaches_the_private_state_and_the_stream(stub: StubServer, trace_path: Path) -> None:
    def redact(data: object) -> object:
        return json.loads(json.dumps(data).replace("req_stub", "req_HIDDEN").replace("Echo", "Ec*o"))

    with rewind.record(trace_path, redact=redact):
        litellm.completion(model=MODEL, messages=ask("plain"), **openai_route(stub))
        list(litellm.completion(model=MODEL, messages=ask("streamed"), stream=True, **openai_route(stub)))
    text = trace_path.read_text()
    assert "req_stub" not in text and "Echo" not in text
    assert "req_HIDDEN" in text and "Ec*o" in text
