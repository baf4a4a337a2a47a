"""`rewind import` / `rewind check` on rewind's own spans, through real OTLP files.

An agent (the real openai and anthropic SDKs over loopback against the stub server, a
decorated tool) is recorded with content capture on while rewind's spans also go to an
exporter, as they would to a fleet's collector. The spans are written with
OpenTelemetry's own OTLP encoder in the Collector file exporter's formats, imported
back, compared with the locally written trace, and replayed with the server stopped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.cli import cli
from rewind.engine.telemetry import TRACERS
from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).parent))
from otlp_files import write_json, write_proto

MODEL = "gpt-4o-mini"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


@rewind.tool
def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": 21}


def agent(client: Any) -> str:
    """A tool-calling turn, then the answer streamed."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "what is the weather in Paris"},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    result = get_weather(**json.loads(call.function.arguments))
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    stream = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    return f"{call.function.name}({call.function.arguments}) -> {text}"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    if not TRACERS.uses_private_provider():
        pytest.skip("a global SDK tracer provider is configured in this process")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    memory = InMemorySpanExporter()
    TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield memory
    finally:
        memory.clear()
        memory.shutdown()  # the SDK cannot remove a processor; a shut-down exporter drops spans


@pytest.fixture
def openai_client(stub: StubServer) -> Iterator[Any]:
    import openai

    unpatch = rewind.patch_openai()
    try:
        with openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test-never-exported", max_retries=0) as c:
            yield c
    finally:
        unpatch()


def record_run(tmp_path: Path, spans: InMemorySpanExporter, client: Any) -> tuple[Path, str, list[ReadableSpan]]:
    local = tmp_path / "local.rewind"
    with rewind.record(local):
        answer = agent(client)
    return local, answer, list(spans.get_finished_spans())


def lines(path: Path) -> list[dict[str, Any]]:
    return [event.to_dict() for event in rewind.Trace.load(path).events]


# -- fleet recording: rewind's spans carry each step whole -------------------------------


@pytest.mark.parametrize("form", ["jsonl", "jsonl.gz", "proto-fixed32", "proto-varint", "proto-whole"])
def test_fleet_import_rebuilds_the_local_trace_exactly(
    form: str, tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any, stub: StubServer
) -> None:
    local, answer, finished = record_run(tmp_path, spans, openai_client)
    assert answer.startswith("get_weather(")
    source = tmp_path / f"spans.{form}"
    if form.startswith("jsonl"):
        write_json(source, finished)
    else:
        write_proto(source, finished, framing=form.split("-")[1])
    imported = tmp_path / "imported.rewind"
    report = rewind.import_telemetry(source, imported)
    assert report.replayable and [s.exact for s in report.steps] == [True, True, True]
    assert [s.layout for s in report.steps] == ["rewind"] * 3
    assert lines(imported) == lines(local)  # every step byte-for-byte what the recorder wrote
    assert "sk-test-never-exported" not in imported.read_text()

    stub.stop()  # replay offline: the model server is gone
    with rewind.replay(imported, require_full_consumption=True):
        assert agent(openai_client) == answer


def test_session_id_names_every_span_of_a_run(tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any) -> None:
    _, _, finished = record_run(tmp_path, spans, openai_client)
    steps = [s for s in finished if s.attributes and "rewind.kind" in s.attributes]
    assert len({s.attributes["rewind.session.id"] for s in steps}) == 1  # type: ignore[index]
    assert all(len(s.attributes["rewind.event.sha256"]) == 64 for s in steps)  # type: ignore[arg-type,index]


def _without_whole_lines(finished: list[ReadableSpan]) -> list[ReadableSpan]:
    """The spans as an older rewind (or a collector dropping rewind.event) would send them."""
    out = []
    for span in finished:
        attrs = {k: v for k, v in (span.attributes or {}).items() if not k.startswith("rewind.event")}
        out.append(
            ReadableSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=span.resource,
                attributes=attrs,
                events=span.events,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=span.end_time,
                instrumentation_scope=span.instrumentation_scope,
            )
        )
    return out


def events_tools(path: Path) -> list[str]:
    request = rewind.Trace.load(path).events[0].request
    return [t.get("function", t).get("name") for t in request.get("tools") or []]


def test_genai_content_alone_replays_through_the_telemetry_matcher(
    tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any, stub: StubServer
) -> None:
    local, answer, finished = record_run(tmp_path, spans, openai_client)
    source = write_json(tmp_path / "spans.jsonl", _without_whole_lines(finished))
    imported = tmp_path / "imported.rewind"
    report = rewind.import_telemetry(source, imported)
    assert [(s.kind, s.name, s.exact) for s in report.steps] == [
        ("llm", "openai.chat.completions.create", False),
        ("tool", "get_weather", False),
        ("llm", "openai.chat.completions.create", False),
    ]
    assert report.replayable
    # The spans carry the request's tools as gen_ai.tool.definitions: nothing is missing.
    assert [p.code for p in report.steps[0].problems] == []
    assert events_tools(imported) == [t["function"]["name"] for t in TOOLS]
    events = rewind.Trace.load(imported).events
    assert events[0].request["messages"][1] == {"role": "user", "content": "what is the weather in Paris"}
    # With the tools carried too, the rebuilt request is the one the SDK sent.
    assert events[0].request == rewind.Trace.load(local).events[0].request
    recorded_tool = rewind.Trace.load(local).events[1]
    assert (events[1].request, events[1].response) == (recorded_tool.request, recorded_tool.response)

    stub.stop()
    with rewind.replay(imported, require_full_consumption=True) as session:
        # The stream is served as chunks synthesized from the imported final message.
        assert agent(openai_client) == answer
    assert repr(session.matcher) == "TelemetryMatcher()"


def test_an_imported_step_that_differs_diverges_with_the_difference_named(
    tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any, stub: StubServer
) -> None:
    _, _, finished = record_run(tmp_path, spans, openai_client)
    source = write_json(tmp_path / "spans.jsonl", _without_whole_lines(finished))
    imported = tmp_path / "imported.rewind"
    rewind.import_telemetry(source, imported)
    stub.stop()
    with pytest.raises(rewind.DivergenceError) as caught, rewind.replay(imported):
        openai_client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "what is the weather in Rome"},
            ],
            tools=TOOLS,
        )
    message = str(caught.value)
    assert "diverged at step 0: prompt/content drift" in message
    assert "compared on what telemetry carries" in message
    # The diff is of what was compared: the changed message, not the SDK's own fields.
    assert "changed at: messages[1].parts[0].content" in message and "Rome" in message


# -- attribute limits: truncation detected, never served ------------------------------------

LIMITED_AGENT = """
import json, sys
sys.path.insert(0, {helpers!r})
import openai
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otlp_files import OTLPJsonFileExporter
import rewind

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPJsonFileExporter({spans!r})))
trace.set_tracer_provider(provider)
rewind.patch_openai()
client = openai.OpenAI(max_retries=0)
with rewind.record({local!r}):
    client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi"}}])
    long = "tell me " + "a long story " * 40
    client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": long}}])
"""


def test_truncated_content_is_detected_reported_and_never_served(
    tmp_path: Path, run_python: Any, stub: StubServer
) -> None:
    spans_file, local = tmp_path / "spans.jsonl", tmp_path / "local.rewind"
    helpers = str(Path(__file__).parent)
    code = LIMITED_AGENT.format(helpers=helpers, spans=str(spans_file), local=str(local))
    result = run_python(
        code,
        env={
            "OPENAI_BASE_URL": stub.openai_base_url,
            "OPENAI_API_KEY": "sk-test",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "400",
        },
    )
    assert result.returncode == 0, result.stderr
    imported = tmp_path / "imported.rewind"
    runner = CliRunner()
    out = runner.invoke(cli, ["import", str(spans_file), "-o", str(imported)])
    assert out.exit_code == 1, out.output  # written, but not every step is replayable
    assert "NOT REPLAYABLE" in out.output and "content_truncated" in out.output
    assert len(rewind.Trace.load(local).events[1].request["messages"][0]["content"]) > 400  # the file is whole

    checked = runner.invoke(cli, ["check", str(imported), "--json"])
    assert checked.exit_code == 1
    result_json = json.loads(checked.output)
    statuses = [step["status"] for step in result_json["results"]]
    assert statuses[1] == "not replayable"
    assert {p["code"] for p in result_json["results"][1]["problems"]} >= {"content_truncated"}

    import openai

    unpatch = rewind.patch_openai()
    stub.stop()
    try:
        client = openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test", max_retries=0)
        with pytest.raises(rewind.DivergenceError) as caught, rewind.replay(imported):
            if statuses[0] == "replayable":
                client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "tell me " + "a long story " * 40}]
            )
    finally:
        unpatch()
    assert "not replayable" in str(caught.value) and "content_truncated" in str(caught.value)


# -- bad or partial telemetry: a clear report, never a crash -----------------------------------


def _http_span_line(trace_id: str = "0af7651916cd43dd8448eb211c80319c") -> str:
    span = {
        "traceId": trace_id,
        "spanId": "b7ad6b7169203331",
        "name": "GET /checkout",
        "kind": 2,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [
            {"key": "http.request.method", "value": {"stringValue": "GET"}},
            {"key": "url.path", "value": {"stringValue": "/checkout"}},
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "web"}, "spans": [span]}]}]})


def test_unknown_layouts_are_listed_with_their_attribute_names(tmp_path: Path) -> None:
    source = tmp_path / "web.jsonl"
    source.write_text(_http_span_line() + "\n")
    out = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "x.rewind")])
    assert out.exit_code == 1
    assert "no GenAI steps" in out.output
    assert "unknown layout: 1 span(s) (GET /checkout); attributes seen: http.request.method, url.path" in out.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "empty file"),
        (b"\x00\x01garbage that is not protobuf either", "not OTLP protobuf"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "1"}]}]}]}\n', "no spans"),
    ],
)
def test_unreadable_sources_are_one_line_errors(tmp_path: Path, content: bytes, expected: str) -> None:
    source = tmp_path / "bad.otlp"
    source.write_bytes(content)
    out = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "x.rewind")])
    assert out.exit_code == 2, out.output
    assert expected in out.output and "Traceback" not in out.output


def test_several_runs_need_a_trace_id(tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any) -> None:
    record_run(tmp_path, spans, openai_client)
    first = list(spans.get_finished_spans())
    spans.clear()
    (tmp_path / "b").mkdir()
    record_run(tmp_path / "b", spans, openai_client)
    second = list(spans.get_finished_spans())
    source = write_json(tmp_path / "two.jsonl", first + second)
    with pytest.raises(rewind.TelemetryError, match="holds 2 traces with GenAI spans; pass --trace-id"):
        rewind.import_telemetry(source, tmp_path / "x.rewind")
    wanted = format(second[0].context.trace_id, "032x")  # type: ignore[union-attr]
    report = rewind.import_telemetry(source, tmp_path / "x.rewind", trace_id=wanted)
    assert report.trace_id == wanted and len(report.steps) == 3


def test_base64_ids_from_a_generic_protobuf_json_dump_are_read(
    tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any
) -> None:
    from otlp_files import json_line

    local, _, finished = record_run(tmp_path, spans, openai_client)
    source = tmp_path / "b64.json"
    source.write_text(json_line(finished, base64_ids=True))
    report = rewind.import_telemetry(source, tmp_path / "x.rewind")
    assert report.trace_id == format(finished[0].context.trace_id, "032x")  # type: ignore[union-attr]
    assert lines(tmp_path / "x.rewind") == lines(local)


# -- rewind check on recorded traces ---------------------------------------------------------------


def test_check_on_a_recorded_trace(tmp_path: Path, spans: InMemorySpanExporter, openai_client: Any) -> None:
    local, _, _ = record_run(tmp_path, spans, openai_client)
    out = CliRunner().invoke(cli, ["check", str(local)])
    assert out.exit_code == 0, out.output
    assert "3 step(s), 3 replayable: replayable" in out.output


def test_check_reports_a_missing_blob(tmp_path: Path) -> None:
    path = tmp_path / "big.rewind"

    @rewind.tool
    def fetch(n: int) -> str:
        return "x" * 5000

    with rewind.record(path, externalize=1024):
        fetch(1)
    for blob in (tmp_path / "big.rewind.blobs").iterdir():
        blob.unlink()
    report = rewind.check_trace(str(path))
    assert not report.replayable
    assert report.steps[0].problems[0].code == "blob_missing"
    out = CliRunner().invoke(cli, ["check", str(path), "--json"])
    assert out.exit_code == 1 and json.loads(out.output)["results"][0]["status"] == "not replayable"


def test_a_gzip_whose_deflate_stream_is_damaged_is_a_corrupt_file_not_an_internal_error(tmp_path: Path) -> None:
    # Found by the chaos fuzz (tests/chaos): zlib.error is not an OSError, and escaped as exit 3.
    import gzip
    import zlib

    data = gzip.compress(b'{"resourceSpans":[]}\n' * 2000 + bytes(range(256)) * 40)
    for at in range(20, len(data) - 20):
        damaged = data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1 :]
        try:
            gzip.decompress(damaged)
        except zlib.error:
            break
        except (OSError, EOFError):
            continue
    else:
        pytest.fail("no single-byte damage gave a zlib.error")
    source = tmp_path / "spans.jsonl.gz"
    source.write_bytes(damaged)
    result = CliRunner().invoke(cli, ["--no-pager", "import", str(source), "-o", str(tmp_path / "out.rewind")])
    assert result.exit_code == 2, result.output
    assert "corrupt gzip" in result.output and "internal error" not in result.output
    trace = tmp_path / "run.rewind.gz"
    trace.write_bytes(damaged)
    with pytest.raises(rewind.TraceFormatError, match="corrupt gzip archive"):
        rewind.Trace.open(trace)
