"""``rewind import`` on telemetry built to hurt it: every case ends promptly, in bounded
memory, with a clear one-line error or a trace every reader opens (never a traceback,
never an unreadable file). The files come from ``tests/hostile/telemetry.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rewind.storage.trace import Trace
from tests.hostile import telemetry
from tests.hostile.bounded import rewind_cli


def _import(source: Path, out: Path, *extra: str, timeout: float = 60.0) -> tuple[int, str]:
    done = rewind_cli("import", str(source), "-o", str(out), *extra, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (telemetry.zero_bytes_gzip, "not OTLP protobuf"),
        (telemetry.empty_spans_protobuf, "more than 200,000 spans"),
        (telemetry.empty_attributes_json, "more than 2,000,000 messages, attributes and events"),
    ],
    ids=["zero-bytes-gzip", "empty-spans", "empty-attributes"],
)
def test_a_decoding_bomb_is_refused_in_bounded_memory(
    tmp_path: Path, build: Callable[[Path], Path], expected: str
) -> None:
    status, output = _import(build(tmp_path), tmp_path / "x.rewind", timeout=30)
    assert status == 2, output
    assert expected in output and "Traceback" not in output and "MemoryError" not in output
    assert not (tmp_path / "x.rewind").exists()


def test_the_limits_can_be_raised_for_real_telemetry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWIND_IMPORT_MAX_SPANS", "3")
    source = telemetry.two_recorded_runs(tmp_path)
    status, output = _import(source, tmp_path / "x.rewind", "--trace-id", "all")
    assert status == 2 and "more than 3 spans" in output and "REWIND_IMPORT_MAX_SPANS" in output
    monkeypatch.setenv("REWIND_IMPORT_MAX_SPANS", "lots")
    status, output = _import(source, tmp_path / "x.rewind", "--trace-id", "all")
    assert status == 2 and "REWIND_IMPORT_MAX_SPANS='lots' is not a positive whole number" in output


def test_a_parent_chain_tens_of_thousands_deep_imports_in_linear_time(tmp_path: Path) -> None:
    # 40,000 spans took 233 s when each span walked its whole chain; linear, it takes seconds.
    status, output = _import(telemetry.deep_chain(tmp_path, 40_000), tmp_path / "x.rewind", timeout=60)
    assert status == 1, output  # one step (the rest are the same call nested), content capture off
    assert "imported 1 step(s)" in output
    assert len(Trace.load(tmp_path / "x.rewind")) == 1


def test_two_runs_joined_are_renumbered_into_one_readable_trace(tmp_path: Path) -> None:
    status, output = _import(telemetry.two_recorded_runs(tmp_path), tmp_path / "x.rewind", "--trace-id", "all")
    assert status == 0, output
    assert "renumbered" in output
    trace = Trace.load(tmp_path / "x.rewind")
    assert [e.seq for e in trace] == [0, 1, 2, 3]
    assert [e.request["args"] for e in trace] == [["v"]] * 4


def test_a_seq_past_64_bits_is_renumbered(tmp_path: Path) -> None:
    status, output = _import(telemetry.huge_seq(tmp_path), tmp_path / "x.rewind")
    assert status == 0, output
    assert "out of range" in output
    assert [e.seq for e in Trace.load(tmp_path / "x.rewind")] == [0, 1]


@pytest.mark.parametrize("where", ["start_float", "start_digits", "int_float", "int_digits"])
def test_numbers_past_every_range_read_as_absent(tmp_path: Path, where: str) -> None:
    status, output = _import(telemetry.huge_numbers(tmp_path, where), tmp_path / "x.rewind")
    assert status == 0, output
    assert "Traceback" not in output and "OverflowError" not in output
    [event] = Trace.load(tmp_path / "x.rewind")
    assert event.ts >= 0


def test_an_event_line_no_reader_accepts_is_refused_not_written(tmp_path: Path) -> None:
    attrs = telemetry.tool_attributes(0)
    bad = attrs["rewind.event"].replace('"ts": 1700000000.0', '"ts": "yesterday"')
    attrs.update({"rewind.event": bad, "rewind.event.sha256": __import__("hashlib").sha256(bad.encode()).hexdigest()})
    source = telemetry.write_json(tmp_path, "bad-line.json", [telemetry.span(telemetry.span_id(0), attributes=attrs)])
    status, output = _import(source, tmp_path / "x.rewind")
    assert status == 1, output
    assert "unreadable: rewind.event is not a trace line rewind can read" in output
    Trace.load(tmp_path / "x.rewind")  # written, readable, and the step refused at replay
