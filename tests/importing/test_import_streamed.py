"""`rewind import` of an OTLP JSON lines file, read line by line (issue 34).

The streamed reader (``rewind.importing.streamed``) keeps only the chosen run; it must
give exactly what reading the whole file gave (``otlp.read_file`` then ``choose_trace``,
the path single documents and protobuf still take): the same trace file byte for byte,
the same report, the same errors. The reference below is that whole-file path, run on
the same input with the header's clock fixed.

The readers' bounds now apply per line and per run for these files: a file of many runs,
or larger than REWIND_MAX_ARCHIVE_BYTES, imports with the defaults; a line or a run over
a bound is refused with one line naming it.
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

import rewind
from rewind.cli import cli
from rewind.errors import RewindError
from rewind.importing import content_refs
from rewind.importing.build import build
from rewind.importing.choice import choose_trace
from rewind.importing.otlp import read_file
from rewind.importing.otlp_lines import LinesFile
from rewind.importing.streamed import read_run
from rewind.storage import trace_header
from tests.hostile import telemetry

TRACES = [f"{n:02x}" * 16 for n in range(0x11, 0x16)]  # five trace ids, in file order
BASE = 1_700_000_000_000_000_000


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace header records when it was written: fixed, so two imports compare byte for byte."""
    monkeypatch.setattr(
        trace_header, "time", SimpleNamespace(time=lambda: 1_700_000_000.0, strftime=time.strftime, gmtime=time.gmtime)
    )


def _tool_span(trace: str, number: int, seq: int, *, service: str = "agent") -> dict[str, Any]:
    span = telemetry.span(
        telemetry.span_id(number),
        trace_id=trace,
        start=BASE + number * 10**9,
        attributes=telemetry.tool_attributes(seq, value=f"v{number}"),
    )
    span["_service"] = service
    return span


def _http_span(trace: str, number: int, *, service: str = "web") -> dict[str, Any]:
    span = telemetry.span(
        telemetry.span_id(number),
        trace_id=trace,
        start=BASE + number * 10**9,
        attributes={"http.request.method": "GET", "url.path": f"/p/{number}"},
        name="GET",
    )
    span["_service"] = service
    return span


def _line(spans: list[dict[str, Any]]) -> str:
    """One request, a resource per service (a collector batches spans of several services)."""
    by_service: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_service.setdefault(span.pop("_service"), []).append(span)
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                    "scopeSpans": [{"scope": {"name": "t"}, "spans": group}],
                }
                for service, group in by_service.items()
            ]
        }
    )


def _log_line(trace: str, number: int, content: str) -> str:
    """A GenAI event as a log record naming span ``number``: it alone makes that span a step."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": content}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": content.upper()}]}]
    record = {
        "traceId": trace,
        "spanId": telemetry.span_id(number),
        "timeUnixNano": str(BASE + number * 10**9 + 5),
        "eventName": "gen_ai.client.inference.operation.details",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o-mini"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(messages)}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(answer)}},
        ],
    }
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]})


def many_runs(folder: Path, *, genai: list[int], name: str = "many.jsonl", runs: int = 5, steps: int = 4) -> Path:
    """``runs`` traces interleaved over the lines, as a collector batches them: the traces
    at ``genai`` are rewind tool steps, the others HTTP spans no layout claims."""
    lines = []
    number = 0
    for step in range(steps):
        batch = []
        for run in range(runs):
            trace = TRACES[run]
            batch.append(_tool_span(trace, number, step) if run in genai else _http_span(trace, number))
            number += 1
        lines.append(_line(batch[:2]))
        lines.append(_line(batch[2:]))
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path


def reference(source: Path, out: Path, trace_id: str | None = None, service: str | None = None) -> dict[str, Any]:
    """What `rewind import` did before issue 34: every span read, then the run chosen."""
    collected = read_file(str(source))
    chosen = choose_trace(collected.spans, trace_id, service, str(source))
    notes = collected.skipped + content_refs.resolve(chosen, None)
    trace, report = build(chosen, source=str(source))
    report.notes[:0] = notes
    trace.dump(str(out))
    report.output = str(out)
    return report.to_dict()


def assert_same_import(tmp_path: Path, source: Path, trace_id: str | None = None, service: str | None = None) -> None:
    ours, theirs = tmp_path / "streamed.rewind", tmp_path / "whole.rewind"
    report = rewind.import_telemetry(source, ours, trace_id=trace_id, service=service).to_dict()
    expected = reference(source, theirs, trace_id, service)
    assert ours.read_bytes() == theirs.read_bytes()
    assert {**report, "output": None} == {**expected, "output": None}
    ours.unlink()
    theirs.unlink()


def error_of(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(RewindError) as info:
        call(*args, **kwargs)
    return str(info.value)


# -- the same trace as reading the whole file ---------------------------------------------------


@pytest.mark.parametrize("genai", [0, 2, 4], ids=["first-trace", "middle-trace", "last-trace"])
def test_a_many_run_file_imports_the_same_trace_with_and_without_trace_id(tmp_path: Path, genai: int) -> None:
    source = many_runs(tmp_path, genai=[genai])
    assert_same_import(tmp_path, source)  # the only trace with GenAI steps
    for trace in TRACES:
        assert_same_import(tmp_path, source, trace_id=trace)
    assert_same_import(tmp_path, source, trace_id=f"{TRACES[genai]},{TRACES[(genai + 1) % 5]}")
    assert_same_import(tmp_path, source, trace_id="all")
    assert_same_import(tmp_path, source, service="agent")
    assert_same_import(tmp_path, source, trace_id=TRACES[genai], service="agent")


def test_a_file_of_one_run_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = many_runs(tmp_path, genai=[0], runs=1)
    passes = []
    numbered = LinesFile.numbered

    def counted(self: LinesFile, stop: int | None = None) -> Any:
        passes.append(stop)
        return numbered(self, stop)

    monkeypatch.setattr(LinesFile, "numbered", counted)
    assert_same_import(tmp_path, source)
    assert passes == [None]  # the first trace was kept as it went: no second pass
    passes.clear()
    assert_same_import(tmp_path, many_runs(tmp_path, genai=[3], name="later.jsonl"))
    assert len(passes) == 2 and passes[1] is not None  # the second pass stops where the first ended


def test_no_genai_anywhere_imports_every_span_as_before(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[])
    assert_same_import(tmp_path, source)
    assert_same_import(tmp_path, many_runs(tmp_path, genai=[], runs=1, name="one.jsonl"))


def test_a_span_claimed_only_by_its_log_record_is_found_on_a_later_line(tmp_path: Path) -> None:
    # Trace 3's spans carry no GenAI attribute; a gen_ai.* log record, lines later, names one.
    source = many_runs(tmp_path, genai=[])
    named = 3  # the span numbered 3 is trace 3's first
    with source.open("a") as fh:
        fh.write(_log_line(TRACES[3], named, "what is the weather") + "\n")
        fh.write(_log_line(TRACES[1], 999, "a log naming no span kept") + "\n")
    assert_same_import(tmp_path, source)
    report = rewind.import_telemetry(source, tmp_path / "x.rewind")
    assert report.trace_id == TRACES[3]
    [step] = report.steps
    assert step.span_id == telemetry.span_id(named) and step.layout == "genai"
    assert_same_import(tmp_path, source, trace_id=TRACES[3])
    # The log first, the spans after: still attached.
    first = tmp_path / "log-first.jsonl"
    first.write_text(_log_line(TRACES[3], named, "hello") + "\n" + source.read_text())
    assert_same_import(tmp_path, first)


def test_gzip_lines_and_blank_lines_and_carriage_returns(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[2])
    text = source.read_text()
    packed = tmp_path / "many.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    assert_same_import(tmp_path, packed)
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_bytes(b"\n\n" + text.replace("\n", "\r\n\n").encode())
    assert_same_import(tmp_path, spaced)
    assert_same_import(tmp_path, spaced, trace_id=TRACES[1])


def test_single_documents_are_read_whole_as_before(tmp_path: Path) -> None:
    spans = [_tool_span(TRACES[0], n, n) for n in range(3)]
    one_line = tmp_path / "one.json"
    one_line.write_text(_line(spans) + "\n\n")
    assert_same_import(tmp_path, one_line)
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(_line([_tool_span(TRACES[0], n, n) for n in range(3)])), indent=2))
    assert_same_import(tmp_path, pretty)
    listed = tmp_path / "listed.json"  # an array holding a request and something else
    listed.write_text(json.dumps([json.loads(_line([_tool_span(TRACES[0], 0, 0)])), 7]) + "\n")
    assert_same_import(tmp_path, listed)
    assert rewind.import_telemetry(listed, tmp_path / "y").notes == [f"{listed}:0: not an OTLP object; skipped"]


# -- the same errors -----------------------------------------------------------------------------


def test_several_runs_with_genai_steps_give_the_same_error(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[3, 1, 4])
    ours = error_of(lambda: rewind.import_telemetry(source, tmp_path / "x.rewind"))
    theirs = error_of(lambda: reference(source, tmp_path / "y.rewind"))
    assert ours == theirs
    assert "holds 3 traces with GenAI spans; pass --trace-id" in ours
    assert ours.index(TRACES[1]) < ours.index(TRACES[3]) < ours.index(TRACES[4])  # oldest first
    assert not (tmp_path / "x.rewind").exists()


def test_a_missing_trace_or_service_gives_the_same_error(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[0])
    absent = "ab" * 16
    for trace_id, service in [
        (absent, None),
        (f"{TRACES[0]},{absent}", None),
        (absent, "web"),
        (None, "nobody"),
        (TRACES[0], "nobody"),
        ("all", "nobody"),
    ]:
        ours = error_of(rewind.import_telemetry, source, tmp_path / "x.rewind", trace_id=trace_id, service=service)
        assert ours == error_of(reference, source, tmp_path / "y.rewind", trace_id, service)
    assert f"(traces here: {', '.join(TRACES)})" in error_of(
        lambda: rewind.import_telemetry(source, tmp_path / "x.rewind", trace_id=absent)
    )


def test_more_than_ten_traces_are_listed_by_their_ten_smallest_ids(tmp_path: Path) -> None:
    ids = [f"{n:032x}" for n in range(40, 0, -3)]  # 14 traces, largest first
    source = tmp_path / "fourteen.jsonl"
    source.write_text("".join(_line([_http_span(t, n)]) + "\n" for n, t in enumerate(ids)))
    ours = error_of(lambda: rewind.import_telemetry(source, tmp_path / "x.rewind", trace_id="ff" * 16))
    assert ours == error_of(lambda: reference(source, tmp_path / "y.rewind", "ff" * 16))
    assert ", ".join(sorted(ids)[:10]) in ours


def test_a_corrupt_line_mid_file_is_skipped_with_the_same_note(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[2])
    lines = source.read_text().splitlines()
    lines[4] = lines[4][: len(lines[4]) // 2]  # torn mid-span
    lines.insert(6, "not json at all")
    source.write_text("\n".join(lines) + "\n")
    assert_same_import(tmp_path, source)
    assert_same_import(tmp_path, source, trace_id=TRACES[2])
    notes = rewind.import_telemetry(source, tmp_path / "x.rewind").notes
    assert [n.split(": not JSON")[0] for n in notes if "not JSON" in n] == [f"{source}:5", f"{source}:7"]


def test_a_first_line_that_does_not_parse_falls_back_to_the_whole_file_reader(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[2])
    source.write_text("{torn\n" + source.read_text())
    assert_same_import(tmp_path, source)
    assert f"{source}:1: not JSON" in rewind.import_telemetry(source, tmp_path / "x.rewind").notes[0]


# -- bounds: per line and per run --------------------------------------------------------------


def test_a_file_over_the_byte_bound_imports_when_each_line_is_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = many_runs(tmp_path, genai=[1])
    longest = max(len(line) for line in source.read_bytes().splitlines(keepends=True))
    monkeypatch.setenv("REWIND_MAX_ARCHIVE_BYTES", str(longest))
    assert source.stat().st_size > 4 * longest
    report = rewind.import_telemetry(source, tmp_path / "x.rewind")
    assert report.trace_id == TRACES[1] and len(report.steps) == 4
    monkeypatch.setenv("REWIND_MAX_ARCHIVE_BYTES", str(longest - 2))
    message = error_of(lambda: rewind.import_telemetry(source, tmp_path / "y.rewind"))
    assert f"{source}:" in message and "a line of more than" in message and "REWIND_MAX_ARCHIVE_BYTES" in message
    assert not (tmp_path / "y.rewind").exists()


def test_a_gzip_file_is_still_bounded_by_what_it_decompresses_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its real size is hidden: a few KB can decompress to gigabytes of lines, each small.
    packed = tmp_path / "many.jsonl.gz"
    packed.write_bytes(gzip.compress(many_runs(tmp_path, genai=[1]).read_bytes()))
    monkeypatch.setenv("REWIND_MAX_ARCHIVE_BYTES", "4096")
    message = error_of(lambda: rewind.import_telemetry(packed, tmp_path / "x.rewind"))
    assert "decompresses to more than 4,096 bytes" in message


def test_the_span_and_item_bounds_apply_to_the_run_kept_and_to_each_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = many_runs(tmp_path, genai=[1], steps=4)  # 20 spans in all, 4 in each run, 3 a line at most
    monkeypatch.setenv("REWIND_IMPORT_MAX_SPANS", "4")
    assert len(rewind.import_telemetry(source, tmp_path / "a.rewind").steps) == 4
    assert len(rewind.import_telemetry(source, tmp_path / "b.rewind", trace_id=TRACES[3]).steps) == 0
    message = error_of(lambda: rewind.import_telemetry(source, tmp_path / "c.rewind", trace_id="all"))
    assert "more than 4 spans; one run reads at most that many" in message and "REWIND_IMPORT_MAX_SPANS" in message
    monkeypatch.setenv("REWIND_IMPORT_MAX_SPANS", "2")
    message = error_of(lambda: rewind.import_telemetry(source, tmp_path / "d.rewind", trace_id=TRACES[0]))
    assert f"{source}:2: more than 2 spans; one line reads at most that many" in message
    monkeypatch.delenv("REWIND_IMPORT_MAX_SPANS")
    monkeypatch.setenv("REWIND_IMPORT_MAX_ITEMS", "60")  # a line's spans decode to ~40 items
    assert len(rewind.import_telemetry(source, tmp_path / "e.rewind", trace_id=TRACES[1]).steps) == 4
    message = error_of(lambda: rewind.import_telemetry(source, tmp_path / "f.rewind", trace_id="all"))
    assert "messages, attributes and events; one run decodes at most that many" in message


def test_too_many_traces_to_tell_apart_is_refused_by_the_item_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [f"{n:032x}" for n in range(1, 41)]
    source = tmp_path / "forty.jsonl"
    source.write_text("".join(_line([_http_span(t, n)]) + "\n" for n, t in enumerate(ids)))
    monkeypatch.setenv("REWIND_IMPORT_MAX_ITEMS", "50")
    message = error_of(lambda: rewind.import_telemetry(source, tmp_path / "x.rewind"))
    assert "more than 50 traces, services and span ids to tell apart" in message and "--trace-id" in message
    assert len(rewind.import_telemetry(source, tmp_path / "y.rewind", trace_id=ids[7]).unknown) == 1


def test_the_cli_reports_a_streamed_import_as_before(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[2])
    out = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "x.rewind")])
    assert out.exit_code == 0, out.output
    assert f"imported 4 step(s) from {source} (trace {TRACES[2]}, service agent)" in out.output


def test_read_run_returns_the_spans_the_whole_file_path_chooses(tmp_path: Path) -> None:
    source = many_runs(tmp_path, genai=[4])
    spans, notes = read_run(str(source), None, None)
    expected = choose_trace(read_file(str(source)).spans, None, None, str(source))
    assert spans == expected and notes == []


def test_no_more_than_one_run_is_held_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rewind.importing import streamed

    held: list[int] = []
    for collector in (streamed.RunCollector, streamed.TraceSurvey):
        add = collector.add_span

        def counted(self: Any, span: Any, items: int, add: Any = add) -> None:
            add(self, span, items)
            held.append(len(self.spans))

        monkeypatch.setattr(collector, "add_span", counted)
    source = many_runs(tmp_path, genai=[3], runs=5, steps=6)  # 30 spans, 6 a run
    assert len(rewind.import_telemetry(source, tmp_path / "a.rewind").steps) == 6
    assert len(rewind.import_telemetry(source, tmp_path / "b.rewind", trace_id=TRACES[2]).unknown) == 1
    assert held and max(held) == 6
