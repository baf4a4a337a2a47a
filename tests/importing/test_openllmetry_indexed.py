"""OpenLLMetry's indexed layout (`opentelemetry-instrumentation-openai` 0.47):
`gen_ai.prompt.N.role/content/tool_calls.K.*`, `gen_ai.completion.N.*`,
`llm.request.functions.N.*`, `llm.is_streaming` (importers/openllmetry.txt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenario import record_spans, replay_answer

import rewind
from rewind.importing.otlp import read_file
from rewind.stub_server import StubServer

pytestmark = pytest.mark.importing
openllmetry = pytest.importorskip("opentelemetry.instrumentation.openai")


def _instrument(tracer_provider: Any, logger_provider: Any) -> Any:
    instrumentor = openllmetry.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    return instrumentor.uninstrument


def test_indexed_prompts_and_completions_replay(tmp_path: Path, stub: StubServer) -> None:
    source, answer = record_spans(tmp_path, stub, _instrument)
    attributes = {k for span in read_file(str(source)).spans for k in span.attributes}
    if "gen_ai.prompt.0.role" not in attributes:
        pytest.skip("this OpenLLMetry release emits the GenAI message attributes (test_openllmetry.py)")
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert [(s.name, s.layout) for s in report.steps] == [("openai.chat.completions.create", "openllmetry")] * 2
    assert report.replayable and not any(s.problems for s in report.steps), report.to_dict()
    first, second = rewind.Trace.load(out).events
    assert first.request["tools"][0]["function"]["name"] == "get_weather"
    assert second.request["messages"][2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert replay_answer(out, stub) == answer
