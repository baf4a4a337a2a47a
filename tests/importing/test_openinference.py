"""OpenInference (`openinference-instrumentation-openai`, what Arize Phoenix shows):
flattened `llm.input_messages.N.message.*`, `llm.tools`, `input.value`/`output.value`,
`llm.invocation_parameters`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenario import record_spans, replay_answer

import rewind
from rewind.importing.otlp import read_file
from rewind.stub_server import StubServer

pytestmark = pytest.mark.importing
openinference = pytest.importorskip("openinference.instrumentation.openai")


def _instrument(tracer_provider: Any, logger_provider: Any) -> Any:
    instrumentor = openinference.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    return instrumentor.uninstrument


def test_the_whole_request_is_recovered_from_input_value(tmp_path: Path, stub: StubServer) -> None:
    source, answer = record_spans(tmp_path, stub, _instrument)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert [(s.name, s.layout) for s in report.steps] == [("openai.chat.completions.create", "openinference")] * 2
    assert report.replayable and not any(s.problems for s in report.steps), report.to_dict()
    second = rewind.Trace.load(out).events[1]
    # input.value is the SDK call's own kwargs: stream and stream_options included.
    assert second.request["stream"] is True and second.request["stream_options"] == {"include_usage": True}
    assert second.response["object"] == "chat.completion"  # the accumulated chunk, as a completion
    assert replay_answer(out, stub) == answer


def test_flattened_messages_alone_are_enough(tmp_path: Path, stub: StubServer) -> None:
    """Without input.value/output.value (a collector dropping them, say): the flattened messages."""
    source, answer = record_spans(tmp_path, stub, _instrument)
    text = source.read_text()
    for key in ("input.value", "output.value", "input.mime_type", "output.mime_type"):
        text = text.replace(f'"key": "{key}"', f'"key": "dropped.{key}"')
    source.write_text(text)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert report.replayable, report.to_dict()
    first, second = rewind.Trace.load(out).events
    assert first.request["messages"][0] == {"role": "system", "content": "be brief"}
    assert second.request["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_stub_1",
        "content": '{"city": "what is the weather in Paris", "temp_c": 21}',
    }
    assert first.request["tools"][0]["function"]["name"] == "get_weather"
    assert replay_answer(out, stub) == answer


def test_an_attribute_count_limit_is_reported(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "12")
    source, _ = record_spans(tmp_path, stub, _instrument)
    assert any(span.dropped_attributes for span in read_file(str(source)).spans)
    report = rewind.import_telemetry(source, tmp_path / "run.rewind")
    assert not report.replayable
    assert "attributes_dropped" in {p.code for s in report.steps for p in s.problems}


def test_a_cut_input_value_marks_every_value_cut_at_that_length(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "24")
    source, _ = record_spans(tmp_path, stub, _instrument)
    report = rewind.import_telemetry(source, tmp_path / "run.rewind")
    assert not any(s.replayable for s in report.steps)
    details = " ".join(p.detail for s in report.steps for p in s.problems)
    assert "input.value is cut off after 24 characters" in details
    # Plain text has no end marker: "what is the weather in Paris" (28) was cut to 24 too.
    assert "llm.input_messages.1.message.content" in details
