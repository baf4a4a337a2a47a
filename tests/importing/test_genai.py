"""The official OpenTelemetry GenAI instrumentations (`opentelemetry-instrumentation-genai-openai`,
`-genai-anthropic`, built on `opentelemetry-util-genai`): messages in the parts format on the
span, or on `gen_ai.client.inference.operation.details` log records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scenario import record_spans, replay_answer

import rewind
from rewind.cli import cli
from rewind.stub_server import StubServer

pytestmark = pytest.mark.importing
genai_openai = pytest.importorskip("opentelemetry.instrumentation.genai.openai")


@pytest.fixture(autouse=True)
def _latest_semconv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")


def _openai(tracer_provider: Any, logger_provider: Any) -> Any:
    instrumentor = genai_openai.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    return instrumentor.uninstrument


@pytest.mark.parametrize("mode", ["SPAN_ONLY", "EVENT_ONLY"])
def test_openai_chat_with_tools_and_a_stream(
    mode: str, tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode)
    source, answer = record_spans(tmp_path, stub, _openai)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert [(s.kind, s.name, s.layout) for s in report.steps] == [
        ("llm", "openai.chat.completions.create", "genai")
    ] * 2
    assert report.replayable and all(not s.problems for s in report.steps), report.to_dict()
    first, second = rewind.Trace.load(out).events
    assert first.request["tools"][0]["function"]["name"] == "get_weather"
    assert first.request["temperature"] == 0.2
    assert first.response["choices"][0]["message"]["tool_calls"][0]["id"] == "call_stub_1"
    assert second.get("imported")["streamed"] is True
    assert CliRunner().invoke(cli, ["check", str(out)]).exit_code == 0
    assert replay_answer(out, stub) == answer


def test_content_capture_off_is_reported_per_step(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    source, _ = record_spans(tmp_path, stub, _openai)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert not report.replayable
    assert {p.code for s in report.steps for p in s.problems} == {"content_missing"}
    checked = CliRunner().invoke(cli, ["check", str(out), "--json"])
    assert checked.exit_code == 1
    assert [r["status"] for r in json.loads(checked.output)["results"]] == ["not replayable"] * 2
    with pytest.raises(rewind.DivergenceError, match="content_missing"):
        replay_answer(out, stub)


def test_anthropic_messages_with_tools_and_the_stream_helper(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    genai_anthropic = pytest.importorskip("opentelemetry.instrumentation.genai.anthropic")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

    def instrument(tracer_provider: Any, logger_provider: Any) -> Any:
        instrumentor = genai_anthropic.AnthropicInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        return instrumentor.uninstrument

    source, answer = record_spans(tmp_path, stub, instrument, provider="anthropic")
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert [s.name for s in report.steps] == ["anthropic.messages.create"] * 2, report.to_dict()
    assert report.replayable, report.to_dict()
    first = rewind.Trace.load(out).events[0]
    assert first.request["system"] == "be brief" and first.request["max_tokens"] == 200
    assert first.response["content"][0]["type"] == "tool_use" and first.response["stop_reason"] == "tool_use"
    assert replay_answer(out, stub, provider="anthropic") == answer


def test_an_attribute_length_limit_is_caught_and_never_served(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "150")  # read by the TracerProvider the run uses
    source, _ = record_spans(tmp_path, stub, _openai)
    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert not report.replayable
    problems = [p for s in report.steps for p in s.problems if p.code == "content_truncated"]
    assert problems and any("cut off after 150 characters" in p.detail for p in problems)
    checked = CliRunner().invoke(cli, ["check", str(out), "--json"])
    assert checked.exit_code == 1
    with pytest.raises(rewind.DivergenceError, match="content_truncated"):
        replay_answer(out, stub)


def _referenced_files(source: Path) -> list[Path]:
    """The files the completion hook's references on the spans (and event records) point at."""
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    from rewind.importing.otlp import read_file

    refs = {
        value
        for span in read_file(str(source)).spans
        for attrs in [span.attributes, *(e.attributes for e in span.events)]
        for key, value in attrs.items()
        if key.endswith("_ref") and isinstance(value, str)
    }
    return [Path(url2pathname(urlsplit(ref).path)) for ref in sorted(refs)]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_content_uploaded_by_the_completion_hook(
    fmt: str, tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_CONTENT on the spans, the content uploaded by util-genai's `upload` completion hook:
    read where the references point, then from --content-root once the files moved."""
    import shutil
    import time

    pytest.importorskip("fsspec")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_COMPLETION_HOOK", "upload")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_UPLOAD_BASE_PATH", uploads.as_uri())
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_UPLOAD_FORMAT", fmt)
    source, answer = record_spans(tmp_path, stub, _openai)
    files = _referenced_files(source)
    assert files and all(f.parent == uploads for f in files), files
    deadline = time.monotonic() + 20  # the hook uploads on a thread of its own
    # A file appears before the hook has written it: wait for its content, not its name.
    while not all(f.exists() and f.stat().st_size > 0 for f in files) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(f.exists() and f.stat().st_size > 0 for f in files)
    spans_text = source.read_text()
    assert '"gen_ai.input.messages"' not in spans_text and '"gen_ai.input.messages_ref"' in spans_text

    out = tmp_path / "run.rewind"
    report = rewind.import_telemetry(source, out)
    assert report.replayable and all(not s.problems for s in report.steps), report.to_dict()
    first = rewind.Trace.load(out).events[0]
    assert first.request["tools"][0]["function"]["name"] == "get_weather"
    assert first.request["messages"][0] == {"role": "system", "content": "be brief"}

    # The uploads moved (a bucket copied to a laptop): unreadable until told where they are.
    moved = shutil.move(str(uploads), str(tmp_path / "copied"))
    runner = CliRunner()
    lost = runner.invoke(cli, ["import", str(source), "-o", str(tmp_path / "lost.rewind")])
    assert lost.exit_code == 1 and "external storage" in lost.output, lost.output
    checked = runner.invoke(cli, ["check", str(tmp_path / "lost.rewind"), "--json"])
    assert checked.exit_code == 1
    assert {r["status"] for r in json.loads(checked.output)["results"]} == {"not replayable"}
    found = tmp_path / "found.rewind"
    result = runner.invoke(cli, ["import", str(source), "-o", str(found), "--content-root", moved])
    assert result.exit_code == 0, result.output
    assert replay_answer(found, stub) == answer
