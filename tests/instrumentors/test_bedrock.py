"""AWS Bedrock through real boto3 clients against the stub server's Bedrock endpoint (loopback).

Record with the endpoint up, stop it, replay with no endpoint and no credentials: same
dicts, readable bodies, iterable event streams, the client's own modeled exceptions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")

from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError, EventStreamError  # noqa: E402

import rewind  # noqa: E402
from rewind import DivergenceError, Trace  # noqa: E402
from rewind.stub_server import StubServer  # noqa: E402

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
SECRET = "wJalrXUtnFEMI-SECRET-bedrock-key"
KEY_ID = "AKIAREWINDTESTKEY123"
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "current weather for a city",
                "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
            }
        }
    ]
}


@pytest.fixture
def patched_bedrock() -> Iterator[None]:
    unpatch = rewind.patch_bedrock()
    try:
        yield
    finally:
        unpatch()


def _client(endpoint: str, **credentials: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1}),
        **credentials,
    )


def _live(stub: StubServer) -> Any:
    return _client(stub.bedrock_endpoint_url, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET)


def _offline() -> Any:
    # Nothing listens on port 9, and there are no credentials at all: replay must need neither.
    from botocore import UNSIGNED

    return boto3.client(
        "bedrock-runtime",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        config=Config(signature_version=UNSIGNED),
    )


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": text}]}]


def _agent(client: Any) -> list[Any]:
    seen: list[Any] = []
    answer = client.converse(modelId=MODEL, messages=_user("hello bedrock"), inferenceConfig={"maxTokens": 64})
    seen += [answer["output"], answer["stopReason"], answer["usage"], answer["ResponseMetadata"]["HTTPStatusCode"]]

    events = list(client.converse_stream(modelId=MODEL, messages=_user("weather in Oslo?"), toolConfig=TOOLS)["stream"])
    seen.append(events)

    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "hi"}],
    }
    raw = client.invoke_model(modelId=MODEL, body=json.dumps(body))
    seen += [json.loads(raw["body"].read()), raw["contentType"]]

    streamed = client.invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(body))
    seen.append([json.loads(event["chunk"]["bytes"]) for event in streamed["body"]])
    return seen


def test_record_then_replay_offline_without_credentials(
    stub: StubServer, patched_bedrock: None, trace_path: Path
) -> None:
    with rewind.record(trace_path):
        live = _agent(_live(stub))
    assert live[0] == {"message": {"role": "assistant", "content": [{"text": "Echo: hello bedrock"}]}}
    tool_events = [e for e in live[4] if "contentBlockStart" in e]
    assert tool_events[0]["contentBlockStart"]["start"]["toolUse"]["name"] == "get_weather"
    assert live[5]["content"][0]["text"] == "Echo: hi"
    assert any(event.get("type") == "message_stop" for event in live[7])
    served = stub.request_count
    stub.stop()

    with rewind.replay(trace_path):
        replayed = _agent(_offline())
    assert replayed == live
    assert served == 4

    events = Trace.load(trace_path).events
    assert [e.name for e in events] == [
        "bedrock.converse",
        "bedrock.converse_stream",
        "bedrock.invoke_model",
        "bedrock.invoke_model_with_response_stream",
    ]
    summary = events[1].response  # the stream, summed up as a converse response
    assert summary["stopReason"] == "tool_use"
    assert summary["output"]["message"]["content"] == [
        {"toolUse": {"toolUseId": "tooluse_stub_1", "name": "get_weather", "input": {"city": "weather in Oslo?"}}}
    ]
    assert events[2].request["body"]["json"]["messages"] == [{"role": "user", "content": "hi"}]


def test_signatures_credentials_and_request_ids_stay_out(
    stub: StubServer, patched_bedrock: None, trace_path: Path
) -> None:
    with rewind.record(trace_path):
        _agent(_live(stub))
    authorization = stub.requests[0].headers["authorization"]
    assert KEY_ID in authorization  # it was on the wire, signed
    data = trace_path.read_bytes()
    for secret in (SECRET.encode(), KEY_ID.encode(), b"Signature=", b"X-Amz-Date"):
        assert secret not in data
    # the identity is the same whatever the credentials: another key replays the run
    with rewind.replay(trace_path):
        _agent(_client("http://127.0.0.1:9", aws_access_key_id="AKIAOTHER", aws_secret_access_key="other"))


def test_errors_replay_as_the_clients_modeled_exceptions(
    stub: StubServer, patched_bedrock: None, trace_path: Path
) -> None:
    caught: list[BaseException] = []

    def agent(client: Any) -> list[Any]:
        out: list[Any] = []
        try:
            client.converse(modelId=MODEL, messages=_user("first"))
        except client.exceptions.ThrottlingException as exc:
            caught.append(exc)
            out += ["throttled", exc.response["Error"]["Code"], exc.response["ResponseMetadata"]["HTTPStatusCode"]]
        events: list[Any] = []
        try:
            for event in client.converse_stream(modelId=MODEL, messages=_user("second long answer"))["stream"]:
                events.append(event)
        except EventStreamError as exc:
            out += [len(events), exc.response["Error"]["Code"]]
        return out

    stub.fail_next(429)
    stub.add_script({"text": "partial answer then a failure", "stream_error_after": 1, "error": {"status": 429}})
    with rewind.record(trace_path):
        live = agent(_live(stub))
    assert live == ["throttled", "ThrottlingException", 429, 2, "throttlingException"]
    stub.stop()
    with rewind.replay(trace_path):
        assert agent(_offline()) == live
    replayed = caught[-1]
    assert isinstance(replayed, ClientError) and isinstance(replayed, rewind.ReplayedError)
    assert "ThrottlingException" in str(replayed)


def test_a_stream_left_early_is_truncated_and_replays(
    stub: StubServer, patched_bedrock: None, trace_path: Path
) -> None:
    def agent(client: Any) -> Any:
        for event in client.converse_stream(modelId=MODEL, messages=_user("tell me a long story"))["stream"]:
            if "contentBlockDelta" in event:
                return event
        return None

    with rewind.record(trace_path):
        first = agent(_live(stub))
    stream = Trace.load(trace_path).events[0].get("stream")
    assert stream["truncated"] is True and len(stream["chunks"]) == 2
    stub.stop()
    with rewind.replay(trace_path):
        assert agent(_offline()) == first


def test_a_changed_request_diverges(stub: StubServer, patched_bedrock: None, trace_path: Path) -> None:
    with rewind.record(trace_path):
        _live(stub).converse(modelId=MODEL, messages=_user("original"))
    with pytest.raises(DivergenceError) as info, rewind.replay(trace_path):
        _offline().converse(modelId=MODEL, messages=_user("edited"))
    assert info.value.step == 0


def test_other_aws_services_pass_through(patched_bedrock: None, trace_path: Path) -> None:
    from botocore.stub import Stubber

    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    with Stubber(s3) as stubber, rewind.record(trace_path):
        stubber.add_response("list_buckets", {"Buckets": []})
        assert s3.list_buckets()["Buckets"] == []
    assert Trace.load(trace_path).events == []


def test_clients_made_before_patching_are_covered(stub: StubServer, trace_path: Path) -> None:
    client = _live(stub)
    unpatch = rewind.patch_bedrock()
    try:
        with rewind.record(trace_path):
            client.converse(modelId=MODEL, messages=_user("early"))
    finally:
        unpatch()
    assert len(Trace.load(trace_path).events) == 1


def test_event_streams_are_botocore_event_streams_live_and_replayed(
    stub: StubServer, patched_bedrock: None, trace_path: Path
) -> None:
    """What boto3 returns: ``isinstance`` holds and the stream's own methods are there, while
    recording and on replay."""
    from botocore.eventstream import EventStream

    def agent(client: Any) -> list[Any]:
        seen: list[Any] = []
        stream = client.converse_stream(modelId=MODEL, messages=_user("weather in Oslo?"))["stream"]
        assert isinstance(stream, EventStream) and callable(stream.get_initial_response)
        seen.append(list(stream))
        body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50, "messages": _user("hi")})
        streamed = client.invoke_model_with_response_stream(modelId=MODEL, body=body)["body"]
        assert isinstance(streamed, EventStream) and callable(streamed.get_initial_response)
        seen.append([event["chunk"]["bytes"] for event in streamed])
        return seen

    with rewind.record(trace_path):
        live = agent(_live(stub))
    stub.stop()
    with rewind.replay(trace_path):
        assert agent(_offline()) == live
