"""The Gemini API wire format, checked by the real ``google-genai`` SDK parsing every answer."""

from __future__ import annotations

import warnings
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types
from pydantic import BaseModel

from rewind.stub_server import StubServer

MODEL = "gemini-2.5-flash"
SEARCH = types.FunctionDeclaration(
    name="search",
    description="Search the web",
    parameters=types.Schema(
        type=types.Type.OBJECT, properties={"query": types.Schema(type=types.Type.STRING)}, required=["query"]
    ),
)
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


@pytest.fixture
def client(server: StubServer) -> genai.Client:
    return genai.Client(api_key="stub", http_options={"base_url": server.gemini_base_url})


def test_generate_json_text_usage_and_path(server: StubServer, client: genai.Client) -> None:
    reply = client.models.generate_content(model=MODEL, contents="hello there")
    assert isinstance(reply, types.GenerateContentResponse)
    assert reply.text == "Echo: hello there"
    assert reply.candidates and reply.candidates[0].finish_reason == types.FinishReason.STOP
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata.prompt_token_count, reply.usage_metadata.candidates_token_count) == (2, 3)
    assert reply.usage_metadata.total_token_count == 5
    assert reply.model_version == MODEL and reply.response_id == "gemini_stub_1"
    (request,) = server.requests
    assert request.route.endswith(f"/models/{MODEL}:generateContent")
    assert request.headers["x-goog-api-key"] == "stub"


def test_v1beta_base_path(server: StubServer) -> None:
    client = genai.Client(api_key="stub", http_options={"base_url": server.gemini_base_url, "api_version": "v1beta"})
    assert client.models.generate_content(model=MODEL, contents="hi").text == "Echo: hi"
    assert server.requests[-1].route == f"/v1beta/models/{MODEL}:generateContent"


def test_function_call_round_trip(client: genai.Client) -> None:
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[SEARCH])], automatic_function_calling=NO_AFC
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text='search for "otel replay"')])]
    first = client.models.generate_content(model=MODEL, contents=contents, config=config)
    assert first.function_calls is not None
    (call,) = first.function_calls
    assert (call.name, call.args) == ("search", {"query": "otel replay"})
    assert first.candidates and first.candidates[0].content is not None

    contents.append(first.candidates[0].content)
    contents.append(
        types.Content(
            role="user", parts=[types.Part.from_function_response(name="search", response={"result": "2 hits"})]
        )
    )
    final = client.models.generate_content(model=MODEL, contents=contents, config=config)
    assert final.function_calls is None
    assert final.text == "Based on the tool result: 2 hits"


def test_automatic_function_calling_with_a_python_tool(client: genai.Client) -> None:
    seen: list[tuple[str, int]] = []

    def get_weather(city: str, days: int) -> str:
        """Weather for a city."""
        seen.append((city, days))
        return "sunny"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reply = client.models.generate_content(
            model=MODEL, contents="weather city=Paris", config=types.GenerateContentConfig(tools=[get_weather])
        )
    assert seen == [("Paris", 1)]
    assert reply.text == "Based on the tool result: sunny"


def test_tool_config_modes(client: genai.Client) -> None:
    tools = [types.Tool(function_declarations=[SEARCH])]

    def mode(name: str) -> types.GenerateContentConfig:
        calling = types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode(name))
        return types.GenerateContentConfig(tools=tools, tool_config=types.ToolConfig(function_calling_config=calling))

    assert client.models.generate_content(model=MODEL, contents="hi", config=mode("NONE")).text == "Echo: hi"
    forced = client.models.generate_content(model=MODEL, contents="hi", config=mode("ANY"))
    assert forced.function_calls and forced.function_calls[0].name == "search"


def test_stream_text_chunks(client: genai.Client) -> None:
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="one two"))
    assert "".join(c.text or "" for c in chunks) == "Echo: one two"
    assert all(isinstance(c, types.GenerateContentResponse) for c in chunks)
    last = chunks[-1]
    assert last.candidates and last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None and last.usage_metadata.candidates_token_count == 3
    assert chunks[0].candidates and chunks[0].candidates[0].finish_reason is None


def test_stream_function_call(client: genai.Client) -> None:
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[SEARCH])], automatic_function_calling=NO_AFC
    )
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="search x", config=config))
    calls = [call for c in chunks for call in (c.function_calls or [])]
    assert [(call.name, call.args) for call in calls] == [("search", {"query": "search x"})]


def test_stream_without_sse_is_one_json_array(server: StubServer) -> None:
    url = f"{server.gemini_base_url}/v1beta/models/{MODEL}:streamGenerateContent"
    payload = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    chunks = httpx.post(url, json=payload, headers={"x-goog-api-key": "stub"}).json()
    assert isinstance(chunks, list)
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == "Echo: hi"


async def test_async_generate_stream_and_embed(client: genai.Client) -> None:
    reply = await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert reply.text == "Echo: hi"
    stream = await client.aio.models.generate_content_stream(model=MODEL, contents="hi")
    assert "".join([c.text or "" async for c in stream]) == "Echo: hi"
    embedded = await client.aio.models.embed_content(model="text-embedding-004", contents="hi")
    assert embedded.embeddings and len(embedded.embeddings[0].values or []) == 8


def test_embed_content_deterministic_with_dimensionality(server: StubServer, client: genai.Client) -> None:
    first = client.models.embed_content(model="text-embedding-004", contents=["alpha", "beta"])
    again = client.models.embed_content(model="text-embedding-004", contents="beta")
    assert first.embeddings is not None and again.embeddings is not None
    vectors = [e.values or [] for e in first.embeddings]
    assert len(vectors) == 2 and len(vectors[0]) == 8
    assert again.embeddings[0].values == vectors[1] != vectors[0]
    assert server.requests[-1].route.endswith(":batchEmbedContents")
    wide = client.models.embed_content(
        model="text-embedding-004", contents="alpha", config=types.EmbedContentConfig(output_dimensionality=64)
    )
    assert wide.embeddings is not None and len(wide.embeddings[0].values or []) == 64
    single = httpx.post(
        f"{server.gemini_base_url}/v1beta/models/text-embedding-004:embedContent",
        json={"content": {"parts": [{"text": "alpha"}]}},
    ).json()
    assert single["embedding"]["values"] == vectors[0]


class City(BaseModel):
    name: str
    population: int


def test_structured_output_and_thoughts(client: genai.Client) -> None:
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=City)
    parsed = client.models.generate_content(model=MODEL, contents="name=Paris", config=config).parsed
    assert parsed == City(name="Paris", population=1)
    thinking = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))
    reply = client.models.generate_content(model=MODEL, contents="hi", config=thinking)
    assert reply.candidates and reply.candidates[0].content and reply.candidates[0].content.parts
    thought, answer = reply.candidates[0].content.parts
    assert thought.thought is True and answer.text == "Echo: hi"
    assert reply.usage_metadata is not None and reply.usage_metadata.thoughts_token_count


def test_count_tokens_and_models(client: genai.Client) -> None:
    assert client.models.count_tokens(model=MODEL, contents="a b c").total_tokens == 3
    assert client.models.get(model=MODEL).name == f"models/{MODEL}"


def test_errors_raise_client_and_server_errors(server: StubServer, client: genai.Client) -> None:
    server.fail_next(429)
    with pytest.raises(errors.ClientError) as rate:
        client.models.generate_content(model=MODEL, contents="hi")
    assert (rate.value.code, rate.value.status) == (429, "RESOURCE_EXHAUSTED")

    server.add_script({"error": {"status": 503, "message": "overloaded"}})
    with pytest.raises(errors.ServerError) as down:
        client.models.generate_content(model=MODEL, contents="hi")
    assert (down.value.code, down.value.status, down.value.message) == (503, "UNAVAILABLE", "overloaded")

    server.fail_next(400)
    with pytest.raises(errors.ClientError) as bad:
        client.models.embed_content(model="text-embedding-004", contents="x")
    assert bad.value.status == "INVALID_ARGUMENT"


def test_stream_error_midway(server: StubServer, client: genai.Client) -> None:
    server.add_script({"text": "one two three four", "stream_error_after": 2, "error": {"status": 429}})
    received: list[str] = []
    with pytest.raises(errors.ClientError) as failure:
        for chunk in client.models.generate_content_stream(model=MODEL, contents="go"):
            received.append(chunk.text or "")
    assert "".join(received) == "one two"
    assert failure.value.code == 429
