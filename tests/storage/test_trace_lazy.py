"""``Trace.open``: skeletons in memory, bodies read back on demand, for v1 and v2 traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import rewind
from rewind.storage import trace as trace_module
from rewind.storage.archive import compact
from rewind.storage.trace import Event, Trace, TraceFormatError


@rewind.tool
def search(query: str, context: str = "") -> dict[str, object]:
    return {"query": query, "hits": [query.upper(), "ünïcode ✓"], "context_size": len(context)}


@pytest.fixture(params=[None, 100], ids=["v1", "v2"])
def externalize(request: pytest.FixtureRequest) -> int | None:
    return request.param


def record(path: Path, externalize: int | None, *, context: str = "c" * 300, steps: int = 4) -> None:
    with rewind.record(path, externalize=externalize):
        for step in range(steps):
            search(f"q{step}", context)


class CountingReads:
    """Records every (offset, length) a lazy trace reads from its file."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: list[int] = []
        original = trace_module._LineSource.read

        def read(source: trace_module._LineSource, offset: int, length: int) -> bytes:
            self.reads.append(length)
            return original(source, offset, length)

        monkeypatch.setattr(trace_module._LineSource, "read", read)


def test_open_keeps_skeletons_and_reads_bodies_on_demand(trace_path: Path, externalize, monkeypatch) -> None:
    record(trace_path, externalize)
    counter = CountingReads(monkeypatch)
    lazy, eager = Trace.open(trace_path), Trace.load(trace_path)
    assert counter.reads == []  # opening reads no body
    assert [(e.seq, e.kind, e.name, e.fingerprint, e.ok, e.live) for e in lazy] == [
        (e.seq, e.kind, e.name, e.fingerprint, e.ok, e.live) for e in eager
    ]
    assert [e.to_dict() for e in lazy] == [e.to_dict() for e in eager]
    assert lazy.events[1].request == {"query": "q1", "context": "c" * 300}
    assert counter.reads  # bodies came from the file ...
    assert all(e._body is None for e in lazy)  # ... and were not kept


def test_a_response_is_read_without_reading_the_request(trace_path: Path, monkeypatch) -> None:
    record(trace_path, None, context="x" * 500_000)
    line_length = len(trace_path.read_bytes().splitlines()[1])
    counter = CountingReads(monkeypatch)
    event = Trace.open(trace_path).events[0]
    assert event.response["hits"] == ["Q0", "ünïcode ✓"]
    assert max(counter.reads) < line_length // 4  # the request is the half-megabyte tail of the line
    assert event.request["context"] == "x" * 500_000
    assert max(counter.reads) == line_length


def test_a_hydrated_copy_reads_its_line_once(trace_path: Path, monkeypatch) -> None:
    record(trace_path, None)
    event = Trace.open(trace_path).events[2]
    counter = CountingReads(monkeypatch)
    for _ in range(3):
        assert event.response["query"] == "q2"
    assert len(counter.reads) == 3  # the trace's event keeps nothing
    copy = event.hydrated()
    counter.reads.clear()
    assert copy.response is copy.response and copy.get("response")["query"] == "q2"
    assert copy.request["query"] == "q2" and copy.body["request"] is copy.request
    assert copy.body["response"] is copy.response  # reading the request kept the response object
    # The head once, then the whole line once; a small line in the writer's exact
    # spelling is read (and parsed) whole at once.
    assert 1 <= len(counter.reads) <= 2
    assert copy.hydrated() is not copy and Trace.load(trace_path).events[0].hydrated().seq == 0


def test_replay_leaves_the_trace_unpinned(trace_path: Path, externalize) -> None:
    record(trace_path, externalize)
    with rewind.replay(trace_path, require_full_consumption=True) as session:
        results = [search(f"q{step}", "c" * 300) for step in range(4)]
    assert results[3]["hits"] == ["Q3", "ünïcode ✓"]
    assert all(e._body is None and e._head is None for e in session.trace)


def test_big_responses_beyond_the_first_read_and_split_characters(trace_path: Path) -> None:
    wide = "€" * 40_000  # 120 KB of 3-byte characters: the first read ends inside one
    with rewind.record(trace_path):
        search(wide)
        search("tail")
    trace = Trace.open(trace_path)
    assert trace.events[0].response["query"] == wide
    assert trace.events[1].response["query"] == "tail"


def test_a_damaged_request_is_found_when_it_is_read(trace_path: Path) -> None:
    record(trace_path, None)
    lines = trace_path.read_text().splitlines()
    lines[2] = lines[2].replace('"context":"', '"context":', 1)  # line 3, still ending in "}"
    trace_path.write_text("\n".join(lines) + "\n")
    event = Trace.open(trace_path).events[1]
    assert event.response["query"] == "q1"  # the head is intact
    with pytest.raises(TraceFormatError) as info:
        event.request  # noqa: B018 - reading it is the point
    assert info.value.line == 3 and str(trace_path) in str(info.value)


def test_a_damaged_response_fails_a_replay_loudly(trace_path: Path) -> None:
    record(trace_path, None)
    lines = trace_path.read_text().splitlines()
    lines[1] = lines[1].replace('"response":{"query"', '"response":{query', 1)
    trace_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=":2:"), rewind.replay(trace_path):
        search("q0", "c" * 300)


def test_lines_in_another_layout_are_parsed_whole(trace_path: Path) -> None:
    record(trace_path, None, steps=2)
    header, first, second = trace_path.read_text().splitlines()
    reordered = json.dumps(dict(reversed(list(json.loads(second).items()))), indent=None)
    trace_path.write_text("\n".join([header, first, reordered]) + "\n")
    trace = Trace.open(trace_path)
    assert trace.events[0]._source is not None and trace.events[1]._source is None
    assert trace.events[1].response["query"] == "q1"


def test_escaped_and_non_ascii_names_survive_the_skeleton(trace_path: Path) -> None:
    @rewind.tool(name='quote " and \\ and ünïcode')
    def odd() -> str:
        return "ok"

    with rewind.record(trace_path):
        odd()
        odd()
    trace = Trace.open(trace_path)
    assert [e.name for e in trace] == ['quote " and \\ and ünïcode'] * 2
    assert trace.events[0].name is trace.events[1].name  # one string shared by every step


def test_a_torn_final_line_is_not_trusted_lazily(trace_path: Path) -> None:
    record(trace_path, None, steps=2)
    data = trace_path.read_bytes()
    cut = data.rindex(b',"hits"')  # the last line now ends in a complete-looking skeleton prefix
    trace_path.write_bytes(data[:cut] + b"}")
    trace = Trace.open(trace_path)
    assert [e.seq for e in trace] == [0] and trace.torn_tail


def test_gzip_archives_load_eagerly(trace_path: Path, externalize) -> None:
    record(trace_path, externalize)
    archive = compact(trace_path)
    assert gzip.decompress(Path(archive).read_bytes()) == trace_path.read_bytes()
    trace = Trace.open(archive)
    assert all(e._source is None and e._body is not None for e in trace)
    assert [e.to_dict() for e in trace] == [e.to_dict() for e in Trace.load(trace_path)]


def test_compact_refuses_what_is_not_a_trace(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello\n")
    with pytest.raises(TraceFormatError, match="not a rewind trace"):
        compact(foreign)
    with pytest.raises(TraceFormatError, match="no such trace file"):
        compact(tmp_path / "missing.rewind")
    with pytest.raises(ValueError, match="overwrite its own source"):
        compact(foreign, foreign)


def test_events_built_in_memory_are_unaffected(tmp_path: Path) -> None:
    event = Event(0, "tool", "t", "ab" * 32, {"q": 1}, {"a": 2}, extra={"extra_record": [1, 2]})
    assert event.hydrated() is event and event.get("extra_record") == [1, 2] and event.get("request") == {"q": 1}
    trace = Trace([event])
    trace.dump(tmp_path / "mem.rewind")
    again = Trace.open(tmp_path / "mem.rewind").events[0]
    assert again.get("extra_record") == [1, 2] and again.response == {"a": 2} and again.request == {"q": 1}
