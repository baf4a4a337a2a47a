"""One test suite for the Stainless SDKs of OpenAI-compatible services (groq, together, fireworks).

``test_groq.py`` & co. each subclass ``CompatSuite`` with an ``SDK`` row; every test runs
the real SDK client against the loopback ``StubServer`` over HTTP, once with a client made
before patching and once with one made after.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

import rewind
from rewind.errors import UnconsumedEventsWarning
from rewind.stub_server import StubServer

API_KEY = "sk-compat-SECRET-never-in-a-trace"
MODEL = "stub-model"
LONG = "one two three four five six seven eight nine ten"


@dataclass(frozen=True)
class SDK:
    """What differs between the three SDKs, as far as the tests care."""

    module: str  # import name
    client: str  # sync client class; the async one is "Async" + client
    patch: Callable[[], Callable[[], None]]
    provider: str  # gen_ai.provider.name
    chat_type: str  # "module:Class" of the chat completion
    embedding_type: str | None  # None: the SDK has no embeddings resource
    #: The SDK's paths start with this instead of /v1 (groq: /openai/v1); rewritten for the stub.
    path_prefix: str = "/v1/"

    @property
    def name(self) -> str:
        """The provider name for ``auto_patch()``/``patched()``, the step and entry-point prefix."""
        return self.module

    def type(self, path: str) -> Any:
        module, _, name = path.partition(":")
        return getattr(importlib.import_module(module), name)

    def sdk(self) -> Any:
        return importlib.import_module(self.module)

    def make(self, stub: StubServer, *, is_async: bool = False) -> Any:
        sdk = self.sdk()
        cls = getattr(sdk, ("Async" if is_async else "") + self.client)
        options: dict[str, Any] = {"base_url": stub.url, "api_key": API_KEY, "max_retries": 0}
        if self.path_prefix != "/v1/":
            # The stub serves OpenAI routes under /v1; this SDK prefixes its own path.
            options["http_client"] = _rewriting_client(self.path_prefix, is_async=is_async)
        return cls(**options)


def _rewriting_client(prefix: str, *, is_async: bool) -> Any:
    def rewrite(request: httpx.Request) -> None:
        if request.url.path.startswith(prefix):
            request.url = request.url.copy_with(path="/v1/" + request.url.path[len(prefix) :])

    async def arewrite(request: httpx.Request) -> None:
        rewrite(request)

    if is_async:
        return httpx.AsyncClient(event_hooks={"request": [arewrite]})
    return httpx.Client(event_hooks={"request": [rewrite]})


def drain(stream: Any) -> tuple[list[Any], Exception | None]:
    """Every chunk a stream yields, and the exception that ended it (if any)."""
    seen: list[Any] = []
    try:
        for chunk in stream:
            seen.append(chunk)
    except Exception as exc:
        return seen, exc
    return seen, None


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def events(path: Path) -> list[rewind.Event]:
    return list(rewind.Trace.load(path).events)


def texts(chunks: list[Any]) -> list[Any]:
    return [c.choices[0].delta.content if c.choices else None for c in chunks]


ORDERS = ["client made before patching", "client made after patching"]

GROQ = SDK(
    module="groq",
    client="Groq",
    patch=lambda: rewind.patch_groq(),
    provider="groq",
    chat_type="groq.types.chat:ChatCompletion",
    embedding_type="groq.types:CreateEmbeddingResponse",
    path_prefix="/openai/v1/",
)
TOGETHER = SDK(
    module="together",
    client="Together",
    patch=lambda: rewind.patch_together(),
    provider="together_ai",
    chat_type="together.types.chat:ChatCompletion",
    embedding_type="together.types:Embedding",
)
FIREWORKS = SDK(
    module="fireworks",
    client="Fireworks",
    patch=lambda: rewind.patch_fireworks(),
    provider="fireworks",
    chat_type="fireworks.types.chat:CompletionCreateResponse",
    embedding_type=None,
)


class CompatSuite:
    """Record then replay offline, streams, raw responses, errors, divergence, secrets."""

    sdk: ClassVar[SDK]

    # -- fixtures -----------------------------------------------------------------------
    @pytest.fixture(params=ORDERS)
    def client(self, request: pytest.FixtureRequest, stub: StubServer) -> Iterator[Any]:
        before = request.param == ORDERS[0]
        made = self.sdk.make(stub) if before else None
        unpatch = self.sdk.patch()
        made = made or self.sdk.make(stub)
        try:
            yield made
        finally:
            made.close()
            unpatch()

    @pytest.fixture(params=ORDERS)
    async def aclient(self, request: pytest.FixtureRequest, stub: StubServer) -> AsyncIterator[Any]:
        before = request.param == ORDERS[0]
        made = self.sdk.make(stub, is_async=True) if before else None
        unpatch = self.sdk.patch()
        made = made or self.sdk.make(stub, is_async=True)
        try:
            yield made
        finally:
            await made.close()
            unpatch()

    def chat(self, client: Any, text: str, **kwargs: Any) -> Any:
        return client.chat.completions.create(model=MODEL, messages=ask(text), **kwargs)

    # -- non-streamed -----------------------------------------------------------------
    def test_create_records_then_replays_offline_as_real_types(
        self, client: Any, stub: StubServer, trace_path: Path
    ) -> None:
        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
        stub.add_script({"tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]}, "It is 42.")
        with rewind.record(trace_path):
            first = self.chat(client, "look it up", tools=tools)
            second = self.chat(client, "and then?", temperature=0.2)
        stub.stop()
        with rewind.replay(trace_path):
            again = self.chat(client, "look it up", tools=tools)
            again2 = self.chat(client, "and then?", temperature=0.2)
        chat_type = self.sdk.type(self.sdk.chat_type)
        assert type(again) is chat_type and type(again2) is chat_type
        assert again == first and again2 == second
        assert json.loads(again.choices[0].message.tool_calls[0].function.arguments) == {"id": 7}
        assert again2.choices[0].message.content == "It is 42."
        assert [e.name for e in events(trace_path)] == [f"{self.sdk.name}.chat.completions.create"] * 2

    async def test_async_create_and_stream(self, aclient: Any, stub: StubServer, trace_path: Path) -> None:
        stub.add_script("async answer", LONG)
        async with rewind.record(trace_path):
            live = await self.chat(aclient, "hello async")
            stream = await self.chat(aclient, "count async", stream=True)
            assert isinstance(stream, self.sdk.sdk().AsyncStream)
            live_chunks = [chunk async for chunk in stream]
        stub.stop()
        async with rewind.replay(trace_path):
            replayed = await self.chat(aclient, "hello async")
            stream = await self.chat(aclient, "count async", stream=True)
            assert isinstance(stream, self.sdk.sdk().AsyncStream)
            async with stream as entered:
                replayed_chunks = [chunk async for chunk in entered]
        assert type(replayed) is self.sdk.type(self.sdk.chat_type)
        assert replayed == live and replayed.choices[0].message.content == "async answer"
        assert replayed_chunks == live_chunks and "".join(filter(None, texts(replayed_chunks))) == LONG

    def test_with_raw_response_replays_headers_and_parse(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        with rewind.record(trace_path):
            raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
            live = raw.parse()
            live_id = raw.headers.get("x-request-id")
        (event,) = events(trace_path)
        assert event.get("http")["status_code"] == 200
        stub.stop()
        with rewind.replay(trace_path):
            raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
            replayed = raw.parse()
            assert raw.headers.get("x-request-id") == live_id and raw.status_code == 200
            assert json.loads(raw.text())["id"] == live.id
        assert type(replayed) is self.sdk.type(self.sdk.chat_type) and replayed == live

    async def test_async_with_raw_response_and_raw_stream(
        self, aclient: Any, stub: StubServer, trace_path: Path
    ) -> None:
        raw_create = aclient.chat.completions.with_raw_response.create
        async with rewind.record(trace_path):
            raw = await raw_create(model=MODEL, messages=ask("raw"))
            live = await raw.parse()
            streamed = await raw_create(model=MODEL, messages=ask("raw stream"), stream=True)
            live_chunks = [chunk async for chunk in await streamed.parse()]
        stub.stop()
        async with rewind.replay(trace_path):
            replayed_raw = await raw_create(model=MODEL, messages=ask("raw"))
            replayed = await replayed_raw.parse()
            streamed = await raw_create(model=MODEL, messages=ask("raw stream"), stream=True)
            replayed_chunks = [chunk async for chunk in await streamed.parse()]
        assert type(replayed_raw) is type(raw)
        assert replayed_raw.headers.get("x-request-id") == raw.headers.get("x-request-id")
        assert type(replayed) is self.sdk.type(self.sdk.chat_type) and replayed == live
        assert replayed_chunks == live_chunks and len(live_chunks) > 1

    def test_embeddings(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        if self.sdk.embedding_type is None:
            assert not hasattr(client, "embeddings")  # nothing to hook: the SDK has no such resource
            return
        with rewind.record(trace_path):
            live = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        stub.stop()
        with rewind.replay(trace_path):
            replayed = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        assert type(replayed) is self.sdk.type(self.sdk.embedding_type)
        assert replayed == live and len(replayed.data) == 2
        assert [e.name for e in events(trace_path)] == [f"{self.sdk.name}.embeddings.create"]

    # -- streams ----------------------------------------------------------------------
    def test_stream_records_every_chunk_and_replays_sdk_chunks(
        self, client: Any, stub: StubServer, trace_path: Path
    ) -> None:
        stub.add_script(LONG)
        with rewind.record(trace_path):
            stream = self.chat(client, "count", stream=True)
            assert isinstance(stream, self.sdk.sdk().Stream)
            live = list(stream)
        (event,) = events(trace_path)
        assert event.get("stream")["truncated"] is False and len(event.get("stream")["chunks"]) == len(live)
        assert event.response["choices"][0]["message"]["content"] == LONG
        stub.stop()
        with rewind.replay(trace_path):
            stream = self.chat(client, "count", stream=True)
            assert isinstance(stream, self.sdk.sdk().Stream)
            with stream as entered:
                replayed = list(entered)
        assert replayed == live and type(replayed[0]) is type(live[0])

    def test_stream_aborted_early_is_truncated_and_replays_the_same_chunks(
        self, client: Any, stub: StubServer, trace_path: Path
    ) -> None:
        stub.add_script(LONG)
        with rewind.record(trace_path):
            stream = self.chat(client, "count", stream=True)
            seen = [chunk for _, chunk in zip(range(3), stream)]
            stream.close()
        (event,) = events(trace_path)
        assert event.get("stream")["truncated"] is True and len(event.get("stream")["chunks"]) == 3
        stub.stop()
        with rewind.replay(trace_path):
            replayed = list(self.chat(client, "count", stream=True))
        assert replayed == seen

    def test_error_mid_stream_replays_after_the_same_chunks(
        self, client: Any, stub: StubServer, trace_path: Path
    ) -> None:
        stub.add_script({"text": LONG, "stream_error_after": 2})
        with rewind.record(trace_path):
            seen, live_error = drain(self.chat(client, "count", stream=True))
        stub.stop()
        with rewind.replay(trace_path):
            replayed, replayed_error = drain(self.chat(client, "count", stream=True))
        assert replayed == seen and len(seen) >= 2
        if live_error is not None:  # newer Stainless streams raise on an error event
            assert isinstance(live_error, self.sdk.sdk().APIError)
            assert isinstance(replayed_error, type(live_error)) and str(replayed_error) == str(live_error)
        else:  # older ones (and fireworks) yield it: the agent sees it as a last chunk
            assert replayed_error is None
            assert seen[-1].model_extra["error"] == replayed[-1].model_extra["error"]

    def test_with_streaming_response_stream(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        stub.add_script(LONG)
        create = client.chat.completions.with_streaming_response.create
        with rewind.record(trace_path), create(model=MODEL, messages=ask("count"), stream=True) as response:
            live = list(response.parse())
        stub.stop()
        with rewind.replay(trace_path), create(model=MODEL, messages=ask("count"), stream=True) as response:
            replayed = list(response.parse())
        assert replayed == live and "".join(filter(None, texts(replayed))) == LONG

    # -- errors and divergence ----------------------------------------------------------
    def test_status_error_replays_as_the_sdks_own_class(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        sdk = self.sdk.sdk()
        stub.fail_next(429, headers={"retry-after": "3"})
        with rewind.record(trace_path), pytest.raises(sdk.RateLimitError) as live:
            self.chat(client, "too fast")
        stub.stop()
        with rewind.replay(trace_path), pytest.raises(sdk.RateLimitError) as replayed:
            self.chat(client, "too fast")
        assert isinstance(replayed.value, sdk.APIStatusError) and isinstance(replayed.value, rewind.ReplayedError)
        assert replayed.value.status_code == live.value.status_code == 429
        assert replayed.value.response.headers["retry-after"] == "3"
        assert str(replayed.value) == str(live.value)

    def test_connection_error_replays(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        sdk = self.sdk.sdk()
        stub.stop()  # nothing listens: the live call cannot connect
        with rewind.record(trace_path), pytest.raises(sdk.APIConnectionError):
            self.chat(client, "anyone there?")
        with rewind.replay(trace_path), pytest.raises(sdk.APIConnectionError) as replayed:
            self.chat(client, "anyone there?")
        assert isinstance(replayed.value, rewind.ReplayedError)

    async def test_async_status_error(self, aclient: Any, stub: StubServer, trace_path: Path) -> None:
        sdk = self.sdk.sdk()
        stub.fail_next(500)
        async with rewind.record(trace_path):
            with pytest.raises(sdk.InternalServerError):
                await self.chat(aclient, "boom")
        stub.stop()
        async with rewind.replay(trace_path):
            with pytest.raises(sdk.InternalServerError) as replayed:
                await self.chat(aclient, "boom")
        assert replayed.value.status_code == 500

    def test_changed_request_diverges(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        with rewind.record(trace_path):
            self.chat(client, "the recorded question")
        stub.stop()
        replay = rewind.replay(trace_path)
        with pytest.warns(UnconsumedEventsWarning), replay, pytest.raises(rewind.DivergenceError) as caught:
            self.chat(client, "a different question")
        assert caught.value.step == 0

    def test_a_raw_wrapper_first_used_before_patching_stays_unpatched(
        self, stub: StubServer, trace_path: Path
    ) -> None:
        """The documented limit: the SDK caches a resource's raw wrapper with the method it found."""
        early = self.sdk.make(stub)
        early.chat.completions.with_raw_response.create(model=MODEL, messages=ask("warm-up"))
        unpatch = self.sdk.patch()
        late = self.sdk.make(stub)
        try:
            with rewind.record(trace_path):
                early.chat.completions.with_raw_response.create(model=MODEL, messages=ask("early client"))
                early.chat.completions.create(model=MODEL, messages=ask("early client, plain"))
                late.chat.completions.with_raw_response.create(model=MODEL, messages=ask("late client"))
        finally:
            early.close()
            late.close()
            unpatch()
        assert [e.request["messages"][0]["content"] for e in events(trace_path)] == [
            "early client, plain",
            "late client",
        ]

    # -- how it is switched on -----------------------------------------------------------
    def test_entry_point_and_patched_context(self, stub: StubServer, trace_path: Path) -> None:
        from importlib.metadata import entry_points

        from rewind import integrations

        name = self.sdk.name
        (entry,) = [e for e in entry_points(group="opentelemetry_instrumentor") if e.name == f"rewind_{name}"]
        assert entry.load().__module__ == f"rewind.instrumentors.{name}"
        client = self.sdk.make(stub)
        after = trace_path.with_name("after.rewind")
        with integrations.patched(name), rewind.record(trace_path):
            self.chat(client, "inside patched()")
        with rewind.record(after):
            self.chat(client, "after patched(): unhooked")
        client.close()
        assert [e.name for e in events(trace_path)] == [f"{self.sdk.name}.chat.completions.create"]
        assert events(after) == []

    # -- secrets and transport noise -------------------------------------------------------
    def test_api_key_and_headers_never_reach_the_trace(self, client: Any, stub: StubServer, trace_path: Path) -> None:
        with rewind.record(trace_path):
            self.chat(client, "hi", extra_headers={"X-Custom": "1"}, timeout=20)
            client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
            list(self.chat(client, "s", stream=True))
        assert stub.requests[0].headers["authorization"] == f"Bearer {API_KEY}"  # it was sent live
        text = trace_path.read_text()
        assert API_KEY not in text and "SECRET" not in text
        first = events(trace_path)[0]
        assert first.request == {"model": MODEL, "messages": ask("hi")}

    def test_passthrough_without_a_session(self, client: Any, stub: StubServer) -> None:
        assert self.chat(client, "no session").choices[0].message.content == "Echo: no session"
        assert stub.request_count == 1


#: Runs in a fresh interpreter: the global tracer provider can be set only once per process.
SPANS_PROGRAM = r"""
import json, os, sys
sys.path.insert(0, os.environ["SUPPORT"])
import _openai_compat_support as support
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.errors import UnconsumedEventsWarning
from rewind.stub_server import StubServer
sdk = getattr(support, os.environ["SDK_ROW"])

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
sdk.patch()
path = os.environ["TRACE"]
errors = sdk.sdk().RateLimitError

def agent(client, before_error=lambda: None):
    client.chat.completions.create(model="stub-model", messages=[{"role": "user", "content": "hi"}],
                                   temperature=0.3, max_tokens=50, top_p=0.9, seed=7, stop=["END"])
    list(client.chat.completions.create(model="stub-model", messages=[{"role": "user", "content": "s"}],
                                        stream=True))
    before_error()
    try:
        client.chat.completions.create(model="stub-model", messages=[{"role": "user", "content": "err"}])
    except errors:
        pass

with StubServer() as server:
    client = sdk.make(server)
    with rewind.record(path):
        agent(client, before_error=lambda: server.fail_next(429))
recorded = len(memory.get_finished_spans())
with rewind.replay(path):
    agent(client)
print(json.dumps({
    "recorded": recorded,
    "spans": [{"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes),
               "status": s.status.status_code.name} for s in memory.get_finished_spans()],
}))
"""


def check_spans(row: str, run_python: Any, tmp_path: Path) -> None:
    """Spans live and replayed follow the GenAI conventions, and never carry the API key."""
    result = run_python(
        SPANS_PROGRAM,
        env={"TRACE": str(tmp_path / "run.rewind"), "SDK_ROW": row, "SUPPORT": os.path.dirname(__file__)},
    )
    sdk: SDK = globals()[row]
    assert result.returncode == 0, result.stderr
    assert API_KEY not in result.stdout
    out = json.loads(result.stdout.strip().splitlines()[-1])
    spans = [s for s in out["spans"] if s["attributes"].get("rewind.kind") == "llm"]
    assert out["recorded"] >= 3 and len(spans) == 6
    for span in spans:
        attrs = span["attributes"]
        assert span["name"] == f"chat {MODEL}" and span["kind"] == "CLIENT"
        assert attrs["gen_ai.provider.name"] == sdk.provider
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.request.model"] == MODEL
        assert attrs["server.address"] == "127.0.0.1"
    first, stream, error = spans[:3]
    assert first["attributes"]["gen_ai.request.temperature"] == 0.3
    assert first["attributes"]["gen_ai.request.max_tokens"] == 50
    assert first["attributes"]["gen_ai.request.stop_sequences"] == ["END"]
    assert first["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert first["attributes"]["gen_ai.usage.input_tokens"] > 0
    assert stream["attributes"]["gen_ai.request.stream"] is True
    assert error["status"] == "ERROR" and error["attributes"]["error.type"] == "RateLimitError"
    replayed = spans[3:]
    assert all(s["attributes"]["rewind.replayed"] is True for s in replayed)
    assert replayed[0]["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert replayed[2]["status"] == "ERROR"


def check_hooks_come_and_go(instrumentor: Any, classes: Iterable[type], method: str = "create") -> None:
    """``instrument()`` wraps ``method`` on every class; ``uninstrument()`` puts each original back."""
    originals = {cls: cls.__dict__[method] for cls in classes}
    instrumentor.instrument()
    try:
        assert all(cls.__dict__[method] is not original for cls, original in originals.items())
    finally:
        instrumentor.uninstrument()
    assert all(cls.__dict__[method] is original for cls, original in originals.items())
