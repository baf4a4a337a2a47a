"""OpenLLMetry's indexed layout (`opentelemetry-instrumentation-openai` 0.47):
`gen_ai.prompt.N.role/content/tool_calls.K.*`, `gen_ai.completion.N.*`,
`llm.request.functions.N.*`, `llm.is_streaming` (importers/openllmetry.txt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scenario import record_spans, replay_answer

import rewind
from rewind.cli import cli
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


def test_flat_text_cut_at_the_attribute_limit_is_flagged(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gen_ai.prompt.N.content` cut at OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT is still valid text:
    nothing in the value says it was cut. Told the limit, import and check flag it."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from otlp_files import write_json
    from scenario import openai_client

    limit = 40
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", str(limit))  # the producer's limit
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    uninstrument = _instrument(provider, None)
    try:
        prompt = "tell me about the flights to Lisbon tomorrow morning, the cheapest first"
        openai_client(stub).chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}])
    finally:
        uninstrument()
    source = write_json(tmp_path / "spans.jsonl", list(spans.get_finished_spans()))
    [span] = read_file(str(source)).spans
    if "gen_ai.prompt.0.content" not in span.attributes:
        pytest.skip("this OpenLLMetry release emits the GenAI message attributes (test_openllmetry.py)")
    assert span.attributes["gen_ai.prompt.0.content"] == prompt[:limit]  # cut, and valid text
    monkeypatch.delenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")

    runner = CliRunner()
    unaware = tmp_path / "unaware.rewind"
    assert runner.invoke(cli, ["import", str(source), "-o", str(unaware)]).exit_code == 0  # looks whole
    told = tmp_path / "told.rewind"
    result = runner.invoke(cli, ["import", str(source), "-o", str(told), "--attribute-limit", str(limit)])
    assert result.exit_code == 1 and "content_truncated" in result.output, result.output
    checked = runner.invoke(cli, ["check", str(told), "--json"])
    assert checked.exit_code == 1
    [step] = json.loads(checked.output)["results"]
    assert step["status"] == "not replayable"
    [problem] = [p for p in step["problems"] if p["code"] == "content_truncated"]
    assert "gen_ai.prompt.0.content" in problem["detail"] and str(limit) in problem["detail"]

    # The limit set where the import runs is taken as the producers' limit.
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", str(limit))
    report = rewind.import_telemetry(source, tmp_path / "from-env.rewind")
    assert not report.replayable
    assert [p.code for p in report.steps[0].problems] == ["content_truncated"]
