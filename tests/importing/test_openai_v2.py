"""`opentelemetry-instrumentation-openai-v2`, the deprecated predecessor of -genai-openai:
content as per-message log records (`gen_ai.user.message`, `gen_ai.choice` …) correlated to
the span (importers/openai-v2.txt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenario import record_spans, replay_answer

import rewind
from rewind.stub_server import StubServer

pytestmark = pytest.mark.importing
openai_v2 = pytest.importorskip("opentelemetry.instrumentation.openai_v2")


def _instrument(tracer_provider: Any, logger_provider: Any) -> Any:
    instrumentor = openai_v2.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    return instrumentor.uninstrument


def test_log_based_content_replays(tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    source, answer = record_spans(tmp_path, stub, _instrument)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert [(s.name, s.layout) for s in report.steps] == [("openai.chat.completions.create", "genai")] * 2
    assert report.replayable, report.to_dict()
    # The older conventions carry no tool definitions: said, and not compared.
    assert [p.code for p in report.steps[0].problems] == ["tools_missing"]
    first = rewind.Trace.load(out).events[0]
    assert first.request["messages"][1]["content"] == "what is the weather in Paris"
    assert first.response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert replay_answer(out, stub) == answer
