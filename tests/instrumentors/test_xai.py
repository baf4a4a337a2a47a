"""xAI (``xai_sdk``, gRPC): the real SDK against an in-process gRPC server on loopback.

Record with the server up, stop it, replay with nothing listening: same answers, same SDK
types, errors as ``grpc.RpcError`` with their status code, divergence explained.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

xai_sdk = pytest.importorskip("xai_sdk")
grpc = pytest.importorskip("grpc")

from _xai_server import XAIStubServer  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from xai_sdk.chat import Chunk, Response, tool, tool_result, user  # noqa: E402

import rewind  # noqa: E402
from rewind import DivergenceError, Trace  # noqa: E402

API_KEY = "xai-SECRET-test-key-4242"
#: Nothing listens here: a replay that went live would fail loudly.
DEAD = "127.0.0.1:9"


@pytest.fixture
def xai_server() -> Iterator[XAIStubServer]:
    with XAIStubServer() as server:
        yield server


@pytest.fixture
def patched_xai() -> Iterator[None]:
    unpatch = rewind.patch_xai()
    try:
        yield
    finally:
        unpatch()


def _client(address: str) -> Any:
    return xai_sdk.Client(api_key=API_KEY, api_host=address, use_insecure_channel=True)


def _aclient(address: str) -> Any:
    return xai_sdk.AsyncClient(api_key=API_KEY, api_host=address, use_insecure_channel=True)


class City(BaseModel):
    name: str


def _agent(client: Any) -> list[Any]:
    """Every hooked surface once: sample, stream, a tool round trip, parse, a batch."""
    seen: list[Any] = []
    chat = client.chat.create(model="grok-4")
    chat.append(user("hello there"))
    answer = chat.sample()
    seen += [type(answer), answer.content, answer.usage.total_tokens, answer.finish_reason]
    pieces = []
    response = None
    for response, chunk in chat.stream():  # noqa: B007 - the last response is the accumulated one
        assert isinstance(chunk, Chunk)
        pieces.append(chunk.content)
    seen += [pieces, type(response), response.content]

    search = tool("search", "web search", {"type": "object", "properties": {"query": {"type": "string"}}})
    tools_chat = client.chat.create(model="grok-4", tools=[search])
    tools_chat.append(user("weather in Paris?"))
    first = tools_chat.sample()
    call = first.tool_calls[0]
    seen += [call.function.name, json.loads(call.function.arguments)]
    tools_chat.append(first)
    tools_chat.append(tool_result("sunny, 21C"))
    seen.append(tools_chat.sample().content)
    return seen


def test_record_then_replay_offline_gives_the_same_sdk_objects(
    xai_server: XAIStubServer, patched_xai: None, trace_path: Path
) -> None:
    client = _client(xai_server.address)
    with rewind.record(trace_path):
        live = _agent(client)
    assert live[0] is Response and live[1] == "Grok stub says: hello there"
    assert live[7:9] == ["search", {"query": "weather in Paris?"}]
    assert live[-1] == "Based on the tool: sunny, 21C"
    served = len(xai_server.servicer.requests)
    xai_server.stop()

    with rewind.replay(trace_path):
        replayed = _agent(_client(DEAD))
    assert replayed == live
    assert served == 4

    trace = Trace.load(trace_path)
    assert [e.name for e in trace.events] == ["xai.chat.completion"] * 4
    assert trace.events[1].get("stream")["truncated"] is False
    assert trace.events[1].response["outputs"][0]["message"]["content"] == "Grok stub says: hello there"


def test_async_client_records_and_replays(xai_server: XAIStubServer, patched_xai: None, trace_path: Path) -> None:
    async def agent(address: str) -> list[str]:
        client = _aclient(address)  # an aio channel belongs to the loop it was made in
        chat = client.chat.create(model="grok-4")
        chat.append(user("async hello"))
        answer = await chat.sample()
        pieces = [chunk.content async for _, chunk in chat.stream()]
        return [answer.content, "".join(pieces)]

    with rewind.record(trace_path):
        live = asyncio.run(agent(xai_server.address))
    xai_server.stop()
    with rewind.replay(trace_path):
        replayed = asyncio.run(agent(DEAD))
    assert replayed == live == ["Grok stub says: async hello", "Grok stub says: async hello"]


def test_structured_parse_and_batches(xai_server: XAIStubServer, patched_xai: None, trace_path: Path) -> None:
    def agent(client: Any) -> list[Any]:
        chat = client.chat.create(model="grok-4")
        chat.append(user("name a city"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            batch = chat.sample_batch(2)
        return [len(batch), [r.content for r in batch]]

    with rewind.record(trace_path):
        live = agent(_client(xai_server.address))
    xai_server.stop()
    with rewind.replay(trace_path):
        assert agent(_client(DEAD)) == live == [2, ["Grok stub says: name a city"] * 2]


#: What the error agents see when ``_fail_sample_then_stream`` armed the server.
FAILED_OUTCOMES = [
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    "slow down",
    ["Grok stu", "b says: "],
    grpc.StatusCode.UNAVAILABLE,
]


def _fail_sample_then_stream(server: XAIStubServer) -> None:
    """The next sample fails at once; the stream after it fails after two chunks."""
    server.servicer.fail_next(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down")
    server.servicer.fail_next(grpc.StatusCode.UNAVAILABLE, "gone", after_chunks=2)


def test_errors_replay_as_rpc_errors_with_their_status(
    xai_server: XAIStubServer, patched_xai: None, trace_path: Path
) -> None:
    def agent(client: Any) -> list[Any]:
        outcomes: list[Any] = []
        chat = client.chat.create(model="grok-4")
        chat.append(user("first"))
        try:
            chat.sample()
        except grpc.RpcError as exc:
            outcomes += [exc.code(), exc.details()]
        pieces = []
        try:
            for _, chunk in chat.stream():
                pieces.append(chunk.content)
        except grpc.RpcError as exc:
            outcomes += [pieces, exc.code()]
        return outcomes

    _fail_sample_then_stream(xai_server)
    with rewind.record(trace_path):
        live = agent(_client(xai_server.address))
    assert live == FAILED_OUTCOMES
    xai_server.stop()
    with rewind.replay(trace_path):
        assert agent(_client(DEAD)) == live
    events = Trace.load(trace_path).events
    assert [e.ok for e in events] == [False, False]
    assert events[0].error["grpc"] == {"code": "RESOURCE_EXHAUSTED", "details": "slow down"}


def test_async_errors_replay_as_rpc_errors_with_their_status(
    xai_server: XAIStubServer, patched_xai: None, trace_path: Path
) -> None:
    async def agent(address: str) -> list[Any]:
        outcomes: list[Any] = []
        chat = _aclient(address).chat.create(model="grok-4")
        chat.append(user("first"))
        try:
            await chat.sample()
        except grpc.RpcError as exc:
            outcomes += [type(exc).__name__, exc.code(), exc.details()]
        pieces = []
        try:
            async for _, chunk in chat.stream():
                pieces.append(chunk.content)
        except grpc.RpcError as exc:
            outcomes += [pieces, exc.code()]
        return outcomes

    _fail_sample_then_stream(xai_server)
    with rewind.record(trace_path):
        live = asyncio.run(agent(xai_server.address))
    assert live == ["AioRpcError", *FAILED_OUTCOMES]
    xai_server.stop()
    with rewind.replay(trace_path):
        assert asyncio.run(agent(DEAD)) == live
    assert [e.ok for e in Trace.load(trace_path).events] == [False, False]


def test_a_stream_left_early_is_recorded_as_truncated(
    xai_server: XAIStubServer, patched_xai: None, trace_path: Path
) -> None:
    def agent(client: Any) -> str:
        chat = client.chat.create(model="grok-4")
        chat.append(user("a long story please"))
        for _, chunk in chat.stream():
            return str(chunk.content)
        return ""

    with rewind.record(trace_path):
        first = agent(_client(xai_server.address))
    stream = Trace.load(trace_path).events[0].get("stream")
    assert stream["truncated"] is True and len(stream["chunks"]) == 1
    xai_server.stop()
    with rewind.replay(trace_path):
        assert agent(_client(DEAD)) == first == "Grok stu"


def test_a_changed_conversation_diverges(xai_server: XAIStubServer, patched_xai: None, trace_path: Path) -> None:
    with rewind.record(trace_path):
        chat = _client(xai_server.address).chat.create(model="grok-4")
        chat.append(user("original question"))
        chat.sample()
    xai_server.stop()
    with pytest.raises(DivergenceError) as info, rewind.replay(trace_path):
        chat = _client(DEAD).chat.create(model="grok-4")
        chat.append(user("edited question"))
        chat.sample()
    assert info.value.step == 0
    assert "edited question" in str(info.value) or "messages" in str(info.value)


def test_clients_built_before_patching_are_recorded(xai_server: XAIStubServer, trace_path: Path) -> None:
    client = _client(xai_server.address)  # before patch_xai()
    unpatch = rewind.patch_xai()
    try:
        with rewind.record(trace_path):
            chat = client.chat.create(model="grok-4")
            chat.append(user("early client"))
            chat.sample()
    finally:
        unpatch()
    assert len(Trace.load(trace_path).events) == 1
    # unpatched: the same chat passes straight through, nothing recorded
    with rewind.record(trace_path):
        chat.append(user("after unpatch"))
        chat.sample()
    assert len(Trace.load(trace_path).events) == 0


def test_the_api_key_never_reaches_the_trace(xai_server: XAIStubServer, patched_xai: None, trace_path: Path) -> None:
    with rewind.record(trace_path):
        _agent(_client(xai_server.address))
    assert xai_server.servicer.metadata[0]["authorization"] == f"Bearer {API_KEY}"  # it was on the wire
    assert API_KEY.encode() not in trace_path.read_bytes()


SPANS = r"""
import json, os, sys
sys.path.insert(0, os.environ["HERE"])
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import xai_sdk
from xai_sdk.chat import user
import rewind
from _xai_server import XAIStubServer

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
rewind.patch_xai()
with XAIStubServer() as server:
    client = xai_sdk.Client(api_key="xai-SPAN-SECRET", api_host=server.address, use_insecure_channel=True)
    with rewind.record(os.environ["TRACE"]):
        chat = client.chat.create(model="grok-4", temperature=0.5)
        chat.append(user("hi"))
        chat.sample()
        for _ in chat.stream():
            pass
ours = [s for s in memory.get_finished_spans() if s.attributes.get("gen_ai.provider.name") == "xai"]
print(json.dumps([{"name": s.name, "attributes": dict(s.attributes)} for s in ours]))
"""


def test_spans_follow_the_genai_conventions(run_python, trace_path: Path) -> None:
    here = str(Path(__file__).resolve().parent)
    env = {"TRACE": str(trace_path), "HERE": here, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    result = run_python(SPANS, env=env)
    assert result.returncode == 0, result.stderr
    assert "xai-SPAN-SECRET" not in result.stdout
    spans = json.loads(result.stdout.strip().splitlines()[-1])
    rewind_spans = [s for s in spans if "rewind.seq" in s["attributes"]]
    assert [s["name"] for s in rewind_spans] == ["chat grok-4", "chat grok-4"]
    first, streamed = (s["attributes"] for s in rewind_spans)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "grok-4"
    assert first["gen_ai.request.temperature"] == 0.5
    assert first["gen_ai.usage.input_tokens"] == 1
    assert first["gen_ai.response.finish_reasons"] == ["stop"]
    assert streamed["gen_ai.request.stream"] is True
