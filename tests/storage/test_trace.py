from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import rewind
from rewind.storage.trace import Event, Trace, TraceFormatError


@rewind.tool
def lookup(key: str) -> dict[str, str]:
    return {"key": key, "value": key.upper()}


def record_three(path: Path) -> None:
    with rewind.record(path, meta={"ticket": "T-1"}):
        for key in ("a", "b", "c"):
            lookup(key)


def test_header_then_one_flushed_json_line_per_event(trace_path: Path) -> None:
    record_three(trace_path)
    lines = trace_path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "agent-rewind" and header["version"] == 1
    assert header["meta"] == {"ticket": "T-1"}
    events = [json.loads(line) for line in lines[1:]]
    assert [e["seq"] for e in events] == [0, 1, 2]
    first = events[0]
    assert list(first)[:8] == ["seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live"]
    assert first["request"] == {"key": "a"} and first["response"] == {"key": "a", "value": "A"}


@pytest.mark.parametrize("opener", [Trace.load, Trace.open])
def test_load_and_open_expose_the_same_trace(trace_path: Path, opener) -> None:
    record_three(trace_path)
    trace = opener(trace_path)
    assert len(trace) == 3 and trace.version == 1 and trace.meta == {"ticket": "T-1"}
    assert [e.request for e in trace] == [{"key": "a"}, {"key": "b"}, {"key": "c"}]
    event = trace.events[1]
    assert (event.seq, event.kind, event.name, event.ok, event.live) == (1, "tool", "lookup", True, True)
    assert event.response == {"key": "b", "value": "B"} and event.error is None
    assert event.duration_ms >= 0 and event.ts > 0 and len(event.fingerprint) == 64


def test_dump_round_trips_and_gzip_loads_transparently(trace_path: Path, tmp_path: Path) -> None:
    record_three(trace_path)
    trace = Trace.load(trace_path)
    copy, archive = tmp_path / "copy.rewind", tmp_path / "copy.rewind.gz"
    trace.dump(copy)
    trace.dump(archive)
    assert gzip.decompress(archive.read_bytes()).startswith(b'{"format":"agent-rewind"')
    for path in (copy, archive):
        for opener in (Trace.load, Trace.open):
            again = opener(path)
            assert [e.to_dict() for e in again] == [e.to_dict() for e in trace]


def test_events_are_sorted_by_seq_on_load(trace_path: Path) -> None:
    record_three(trace_path)
    header, *events = trace_path.read_text().splitlines()
    trace_path.write_text("\n".join([header, *reversed(events)]) + "\n")
    assert [e.seq for e in Trace.open(trace_path)] == [0, 1, 2]


def test_torn_final_line_is_tolerated(trace_path: Path) -> None:
    record_three(trace_path)
    data = trace_path.read_bytes()
    trace_path.write_bytes(data[: len(data) - 25])  # cut the last write short
    for opener in (Trace.load, Trace.open):
        trace = opener(trace_path)
        assert [e.seq for e in trace] == [0, 1] and trace.torn_tail


@pytest.mark.parametrize("corrupt", [lambda line: line[:-3], lambda line: line.replace('"request":{', '"request":{{')])
@pytest.mark.parametrize("opener", [Trace.load, Trace.open])
def test_corrupt_middle_line_names_file_and_line(trace_path: Path, opener, corrupt) -> None:
    record_three(trace_path)
    lines = trace_path.read_text().splitlines()
    lines[2] = corrupt(lines[2])
    trace_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError) as info:
        trace = opener(trace_path)
        [e.request for e in trace]  # a lazy reader notices a damaged body when it reads it
    assert info.value.line == 3 and str(trace_path) in str(info.value)


def test_complete_but_corrupt_last_line_is_corruption_not_a_torn_write(trace_path: Path) -> None:
    record_three(trace_path)
    trace_path.write_text(trace_path.read_text() + "{not json}\n")
    with pytest.raises(TraceFormatError, match=":5:"):
        Trace.load(trace_path)


def test_missing_empty_foreign_and_newer_files_are_trace_format_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.rewind"
    with pytest.raises(TraceFormatError, match="no such trace file"):
        Trace.open(missing)
    empty = tmp_path / "empty.rewind"
    empty.write_text("")
    with pytest.raises(TraceFormatError, match="empty file"):
        Trace.open(empty)
    foreign = tmp_path / "foreign.rewind"
    foreign.write_text('{"hello": "world"}\n')
    with pytest.raises(TraceFormatError, match="not a rewind trace") as info:
        Trace.load(foreign)
    assert info.value.line == 1
    newer = tmp_path / "newer.rewind"
    newer.write_text(json.dumps({"format": "agent-rewind", "version": 99, "meta": {}}) + "\n")
    with pytest.raises(TraceFormatError, match="newer than this rewind reads") as info:
        Trace.open(newer)
    assert "upgrade agent-rewind" in str(info.value)


def test_replay_of_a_missing_trace_fails_with_a_trace_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError), rewind.replay(tmp_path / "nope.rewind"):
        pass


def test_event_from_dict_and_repr() -> None:
    event = Event(4, "llm", "model", "ab" * 32, {"q": 1}, None, {"type": "builtins.ValueError", "message": "x"})
    assert not event.ok and event.error == {"type": "builtins.ValueError", "message": "x"}
    assert Event.from_dict(event.to_dict()).to_dict() == event.to_dict()
    assert "error" in repr(event)


def test_a_damaged_gzip_archive_is_a_trace_format_error(trace_path: Path, tmp_path: Path) -> None:
    record_three(trace_path)
    archive = tmp_path / "run.rewind.gz"
    Trace.load(trace_path).dump(archive)
    data = bytearray(archive.read_bytes())
    data[30:60] = bytes(30)  # the header survives, the deflate stream does not
    archive.write_bytes(bytes(data))
    for opener in (Trace.load, Trace.open):
        with pytest.raises(TraceFormatError, match="corrupt gzip archive"):
            opener(archive)
