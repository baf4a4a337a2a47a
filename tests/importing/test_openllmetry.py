"""OpenLLMetry's current `opentelemetry-instrumentation-openai` (0.5x/0.6x): it moved to the
GenAI message attributes (`gen_ai.input.messages`, `gen_ai.tool.definitions`, `gen_ai.is_streaming`).
Its older indexed layout is in test_openllmetry_indexed.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenario import record_spans, replay_answer

import rewind
from rewind.stub_server import StubServer

pytestmark = pytest.mark.importing
openllmetry = pytest.importorskip("opentelemetry.instrumentation.openai")


def _instrument(tracer_provider: Any, logger_provider: Any) -> Any:
    instrumentor = openllmetry.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    return instrumentor.uninstrument


def test_openllmetry_spans_replay(tmp_path: Path, stub: StubServer) -> None:
    source, answer = record_spans(tmp_path, stub, _instrument)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert [s.name for s in report.steps] == ["openai.chat.completions.create"] * 2, report.to_dict()
    assert report.replayable and not any(s.problems for s in report.steps), report.to_dict()
    assert rewind.Trace.load(out).events[1].get("imported")["streamed"] is True
    assert replay_answer(out, stub) == answer
