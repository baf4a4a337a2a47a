"""Chat completions (non-streamed): create, parse, with_raw_response; record then replay offline."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from _openai_support import API_KEY, MODEL, ask, chat_parse, events, raw_parse
from pydantic import BaseModel

import rewind
from rewind.stub_server import StubServer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


class Flight(BaseModel):
    origin: str
    destination: str
    seats: int


def test_create_records_then_replays_offline_as_real_types(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}, "It is sunny.")
    with rewind.record(trace_path):
        first = client.chat.completions.create(model=MODEL, messages=ask("weather in Paris?"), tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        messages = [
            *ask("weather in Paris?"),
            first.choices[0].message,
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ]
        second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0.2)
    stub.stop()

    with rewind.replay(trace_path):
        again = client.chat.completions.create(model=MODEL, messages=ask("weather in Paris?"), tools=TOOLS)
        replayed_call = again.choices[0].message.tool_calls[0]
        messages = [
            *ask("weather in Paris?"),
            again.choices[0].message,
            {"role": "tool", "tool_call_id": replayed_call.id, "content": "sunny"},
        ]
        again2 = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0.2)

    assert type(again) is openai.types.chat.ChatCompletion
    assert again == first and again2 == second
    assert replayed_call.function.name == "get_weather"
    assert json.loads(replayed_call.function.arguments) == {"city": "Paris"}
    assert again2.choices[0].message.content == "It is sunny."
    assert again2.usage is not None and again2.usage.total_tokens == second.usage.total_tokens


async def test_async_create_records_then_replays_offline(aclient, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        live = await aclient.chat.completions.create(model=MODEL, messages=ask("hello async"))
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await aclient.chat.completions.create(model=MODEL, messages=ask("hello async"))
    assert isinstance(replayed, openai.types.chat.ChatCompletion)
    assert replayed == live
    assert replayed.choices[0].message.content == "Echo: hello async"


def test_trace_holds_request_kwargs_without_transport_noise_or_secrets(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path):
        client.chat.completions.create(
            model=MODEL,
            messages=ask("hi"),
            extra_headers={"x-stainless-custom": "1", "traceparent": "00-abc-def-01", "Authorization": "Bearer x"},
            timeout=12.5,
            extra_body={"metadata_tag": "kept"},
        )
    (event,) = events(trace_path)
    assert event.name == "openai.chat.completions.create"
    assert event.request == {"model": MODEL, "messages": ask("hi"), "extra_body": {"metadata_tag": "kept"}}
    text = trace_path.read_text()
    assert API_KEY not in text and "Bearer" not in text and "traceparent" not in text
    assert stub.requests[-1].headers["traceparent"] == "00-abc-def-01"  # the live call was unchanged


def test_identity_ignores_headers_and_timeout(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path):
        recorded = client.chat.completions.create(model=MODEL, messages=ask("same"), extra_headers={"x-a": "1"})
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.chat.completions.create(
            model=MODEL, messages=ask("same"), extra_headers={"x-b": "2", "traceparent": "00-1-2-01"}, timeout=3
        )
    assert replayed == recorded


def test_changed_request_diverges_instead_of_going_live(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path):
        client.chat.completions.create(model=MODEL, messages=ask("original"))
    requests_before = stub.request_count
    with pytest.raises(rewind.DivergenceError) as caught, rewind.replay(trace_path):
        client.chat.completions.create(model=MODEL, messages=ask("changed"))
    assert caught.value.step == 0
    assert stub.request_count == requests_before  # nothing went live


def test_no_session_is_a_plain_passthrough(client, stub) -> None:
    response = client.chat.completions.create(model=MODEL, messages=ask("plain"))
    assert type(response) is openai.types.chat.ChatCompletion
    assert stub.request_count == 1


def test_unpatched_sdk_is_untouched(stub: StubServer, trace_path: Path) -> None:
    plain = openai.OpenAI(base_url=stub.openai_base_url, api_key=API_KEY, max_retries=0)
    with rewind.record(trace_path):
        plain.chat.completions.create(model=MODEL, messages=ask("not hooked"))
    assert events(trace_path) == []


def test_parse_replays_parsed_pydantic_objects(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = chat_parse(client)(model=MODEL, messages=ask("book a flight"), response_format=Flight)
    assert isinstance(live.choices[0].message.parsed, Flight)
    (event,) = events(trace_path)
    assert event.name == "openai.chat.completions.parse"
    # The class travels as its JSON schema, so identity is stable across processes.
    assert event.request["response_format"]["json_schema"]["title"] == "Flight"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = chat_parse(client)(model=MODEL, messages=ask("book a flight"), response_format=Flight)
    assert type(replayed) is type(live)
    assert isinstance(replayed.choices[0].message.parsed, Flight)
    assert replayed.choices[0].message.parsed == live.choices[0].message.parsed


async def test_async_parse_replays_parsed_pydantic_objects(aclient, stub, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        live = await chat_parse(aclient)(model=MODEL, messages=ask("async flight"), response_format=Flight)
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await chat_parse(aclient)(model=MODEL, messages=ask("async flight"), response_format=Flight)
    assert replayed.choices[0].message.parsed == live.choices[0].message.parsed


def test_with_raw_response_create_replays_headers_and_parse(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path):
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
        live = raw.parse()
        live_request_id = raw.headers.get("x-request-id")
    stub.stop()
    with rewind.replay(trace_path):
        replayed_raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
    assert type(replayed_raw) is type(raw)
    assert replayed_raw.headers.get("x-request-id") == live_request_id
    assert replayed_raw.status_code == 200
    assert replayed_raw.parse() == live
    assert json.loads(replayed_raw.text)["id"] == live.id


def test_with_raw_response_parse_replays_parsed_objects(client, stub, trace_path: Path) -> None:
    if raw_parse(client) is None:
        pytest.skip("this openai SDK has no chat.completions.with_raw_response.parse")
    with rewind.record(trace_path):
        live = raw_parse(client)(model=MODEL, messages=ask("raw parse"), response_format=Flight).parse()
    stub.stop()
    with rewind.replay(trace_path):
        replayed = raw_parse(client)(model=MODEL, messages=ask("raw parse"), response_format=Flight).parse()
    assert isinstance(replayed.choices[0].message.parsed, Flight)
    assert replayed.choices[0].message.parsed == live.choices[0].message.parsed


def test_replay_of_a_plain_recording_through_with_raw_response(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.chat.completions.create(model=MODEL, messages=ask("shape-agnostic"))
    stub.stop()
    with rewind.replay(trace_path):
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("shape-agnostic"))
    assert raw.parse() == live


def test_azure_client_is_covered(stub: StubServer, patched_openai, trace_path: Path) -> None:
    azure = openai.AzureOpenAI(
        azure_endpoint=stub.url, api_key=API_KEY, api_version="2024-06-01", max_retries=0, azure_deployment=MODEL
    )
    with rewind.record(trace_path):
        live = azure.chat.completions.create(model=MODEL, messages=ask("azure"))
    assert stub.requests[-1].route == f"/openai/deployments/{MODEL}/chat/completions"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = azure.chat.completions.create(model=MODEL, messages=ask("azure"))
    assert replayed == live
    (event,) = events(trace_path)
    assert API_KEY not in json.dumps(event.to_dict())
