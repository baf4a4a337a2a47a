from __future__ import annotations

import re
from pathlib import Path

import pytest
from rewind_runs import chat_response, record_calls, record_long, record_trip

import rewind
from rewind.inspection import diff_align
from rewind.inspection.diff import CHANGED, DELETED, EQUAL, INSERTED, DiffEntry, TraceDiff, diff_traces, render_text


def ops(diff: TraceDiff) -> list[tuple[str, int | None, int | None]]:
    return [(e.op, e.a_step, e.b_step) for e in diff.entries]


def record_tools(path: Path, names: list[str], *, value: str = "v") -> Path:
    """One tool step per name, in order; each returns ``value``."""

    @rewind.tool(name="t")
    def t(which: str) -> str:
        return value

    with rewind.record(path):
        for name in names:
            t(name)
    return path


def test_two_live_runs_of_the_same_agent_are_equal(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind")
    diff = diff_traces(a, b)
    assert not diff.diverged
    assert diff.first_divergence is None
    assert ops(diff) == [(EQUAL, i, i) for i in range(4)]
    assert all(e.similarity == 1.0 for e in diff.entries)
    assert diff.summary() == "identical (4 steps)"
    assert diff.a_label == str(a) and diff.b_steps == 4


def test_exact_mode_compares_bytes(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind")
    diff = diff_traces(a, b, exact=True)
    assert diff.diverged
    first = diff.first_divergence
    assert first is not None and (first.op, first.step, first.changes) == (CHANGED, 1, ("response",))
    # A trace against itself is identical even byte for byte.
    assert not diff_traces(a, a, exact=True).diverged


def test_model_answering_differently_is_the_first_divergence(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind", city="Paris")
    b = record_trip(tmp_path / "b.rewind", city="Lyon")
    diff = diff_traces(a, b)
    first = diff.first_divergence
    assert first is not None
    assert (first.op, first.step, first.kind, first.name, first.changes) == (CHANGED, 1, "llm", "chat", ("response",))
    assert first.explain() == "same request, different response"
    assert 0 < first.similarity < 1
    # Downstream steps follow from the answer: the search runs with other arguments.
    assert [e.changes for e in diff.entries[2:]] == [("request", "response"), ("request", "response")]
    assert diff.counts() == {EQUAL: 1, CHANGED: 3, DELETED: 0, INSERTED: 0}


def test_extra_and_missing_steps_align_by_identity(tmp_path: Path) -> None:
    a = record_tools(tmp_path / "a.rewind", ["x", "y", "z", "w"])
    b = record_tools(tmp_path / "b.rewind", ["x", "z", "w", "q"])
    diff = diff_traces(a, b)
    # Same kind and name everywhere: identical steps pair up, the odd ones out are deleted/inserted.
    assert ops(diff) == [(EQUAL, 0, 0), (DELETED, 1, None), (EQUAL, 2, 1), (EQUAL, 3, 2), (INSERTED, None, 3)]
    first = diff.first_divergence
    assert first is not None and first.explain() == "run A made this call; run B did not"
    assert diff.entries[-1].step == 3 and diff.entries[-1].explain() == "run B made this call; run A did not"


def test_a_run_that_changed_throughout_pairs_in_place(tmp_path: Path) -> None:
    a = record_tools(tmp_path / "a.rewind", ["a", "b", "c"], value="old")
    b = record_tools(tmp_path / "b.rewind", ["a", "b", "c", "d"], value="new")
    diff = diff_traces(a, b)
    assert ops(diff) == [(CHANGED, 0, 0), (CHANGED, 1, 1), (CHANGED, 2, 2), (INSERTED, None, 3)]
    # Two identical steps outweigh three in-place changes: the shift is found.
    c = record_tools(tmp_path / "c.rewind", ["a", "b", "c"])
    d = record_tools(tmp_path / "d.rewind", ["b", "c", "d"])
    shifted = diff_traces(c, d)
    assert ops(shifted) == [(DELETED, 0, None), (EQUAL, 1, 0), (EQUAL, 2, 1), (INSERTED, None, 2)]


def test_different_call_names_never_pair(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind", extra_search=True)
    b = record_trip(tmp_path / "b.rewind")
    diff = diff_traces(a, b)
    assert ops(diff) == [(EQUAL, 0, 0), (EQUAL, 1, 1), (EQUAL, 2, 2), (DELETED, 3, None), (EQUAL, 4, 3)]
    deleted = diff.entries[3]
    assert deleted.a is not None and deleted.a.request == {"query": "Paris museums"}
    assert deleted.b is None and deleted.similarity == 0.0


def test_error_versus_success_is_an_outcome_change(tmp_path: Path) -> None:
    path_a, path_b = tmp_path / "a.rewind", tmp_path / "b.rewind"

    for path, fail in ((path_a, False), (path_b, True)):

        @rewind.tool(name="fetch")
        def fetch(url: str, fail: bool = fail) -> str:
            if fail:
                raise ConnectionError("reset by peer")
            return "<html>"

        with rewind.record(path):
            try:
                fetch("https://example.test")
            except ConnectionError:
                pass
    diff = diff_traces(path_a, path_b)
    entry = diff.entries[0]
    assert (entry.op, entry.changes) == (CHANGED, ("outcome",))
    assert entry.explain() == "same request, different outcome"
    text = render_text(diff)
    assert "A: <html>" in text and "B: ✗ ConnectionError: reset by peer" in text


def test_accepts_trace_objects_and_gzip(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    trace = rewind.Trace.load(a)
    trace.dump(tmp_path / "a.rewind.gz")
    diff = diff_traces(trace, tmp_path / "a.rewind.gz", exact=True)
    assert not diff.diverged
    assert diff.b_label.endswith("a.rewind.gz")


def test_missing_trace_raises_trace_format_error(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    with pytest.raises(rewind.TraceFormatError, match="no such trace file"):
        diff_traces(a, tmp_path / "nope.rewind")


def test_torn_tail_is_noted(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind")
    with open(b, "ab") as fh:
        fh.write(b'{"seq":4,')
    diff = diff_traces(a, b)
    assert not diff.diverged
    assert diff.notes == ["run B ends in a torn line (its recorder was killed); compared its complete steps"]
    assert "note: run B ends in a torn line" in render_text(diff)


def test_empty_traces(tmp_path: Path) -> None:
    empty = tmp_path / "empty.rewind"
    with rewind.record(empty):
        pass
    assert not diff_traces(empty, empty).diverged
    diff = diff_traces(empty, record_tools(tmp_path / "one.rewind", ["x"]))
    assert ops(diff) == [(INSERTED, None, 0)]
    assert "first divergence: step 0 of B" in render_text(diff)


def test_render_text_context_verbose_and_colour(tmp_path: Path) -> None:
    a = record_tools(tmp_path / "a.rewind", [str(i) for i in range(10)])
    b = record_tools(tmp_path / "b.rewind", [str(i) for i in range(5)] + ["changed"] + [str(i) for i in range(6, 10)])
    diff = diff_traces(a, b)
    text = render_text(diff, context=1)
    rows = [line.split()[:3] for line in text.splitlines() if re.match(r"^[ ~+-] +(\d+|·) +(\d+|·) ", line)]
    assert rows == [["4", "4", "tool"], ["~", "5", "5"], ["6", "6", "tool"]]
    assert "⋮  4 steps equal" in text and "◀ first divergence" in text
    assert "request.which: 5 → changed" in text
    assert "first divergence: step 5 tool 't': the request changed, the outcome did not" in text
    assert render_text(diff, context=0).count("⋮") == 2
    assert "⋮" not in render_text(diff, context=20)
    verbose = render_text(diff, verbose=True)
    assert '-  "which": "5"' in verbose and '+  "which": "changed"' in verbose
    assert "\x1b[" not in text
    assert "\x1b[33m~" in render_text(diff, color=True)
    with pytest.raises(ValueError, match="context must be >= 0"):
        render_text(diff, context=-1)


def test_many_differences_are_summarized(tmp_path: Path) -> None:
    wide_a = {"k": [1, 2, 3], **{f"f{i}": i for i in range(6)}}
    wide_b = {"k": [1, 2], **{f"f{i}": -i for i in range(6)}}
    a = record_calls(tmp_path / "a.rewind", [wide_a])
    b = record_calls(tmp_path / "b.rewind", [wide_b])
    text = render_text(diff_traces(a, b))
    assert "response.f1: 1 → -1" in text
    assert "… more differences (use -v for the full diff)" in text


def test_volatile_only_differences_in_exact_mode_say_so(tmp_path: Path) -> None:
    a = record_calls(tmp_path / "a.rewind", [chat_response("same")])
    b = record_calls(tmp_path / "b.rewind", [chat_response("same")])
    diff = diff_traces(a, b, exact=True)
    assert diff.diverged
    assert "response: differs only in per-run values (ids, timestamps)" in render_text(diff)


def test_large_traces_fall_back_to_block_alignment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = record_long(tmp_path / "a.rewind", 60)
    b = record_long(tmp_path / "b.rewind", 61)
    exact = diff_traces(a, b)
    monkeypatch.setattr(diff_align, "DP_LIMIT", 10)
    fallback = diff_traces(a, b)
    assert ops(fallback) == ops(exact)
    assert ops(exact)[-1] == (INSERTED, None, 60)


def test_diff_entry_is_plain_data() -> None:
    entry = DiffEntry("inserted", None, None, 0.0, 3)
    assert (entry.a_step, entry.b_step, entry.kind, entry.name) == (None, None, "", "")


def test_provider_ids_are_masked_but_a_tool_id_is_data(tmp_path: Path) -> None:
    def run(path: Path, order: str) -> Path:
        @rewind.llm(name="chat")
        def chat(**request: object) -> dict[str, object]:
            return {"id": f"chatcmpl-stub-{order}", "choices": [{"message": {"content": "hi"}}], "model": "m"}

        @rewind.tool(name="lookup")
        def lookup(name: str) -> dict[str, object]:
            return {"id": f"order-{order}", "name": name}

        with rewind.record(path):
            chat(model="m", messages=[])
            lookup("x")
        return path

    diff = diff_traces(run(tmp_path / "a.rewind", "1"), run(tmp_path / "b.rewind", "2"))
    assert [(e.op, e.name) for e in diff.entries] == [(EQUAL, "chat"), (CHANGED, "lookup")]
    assert "response.id: order-1 → order-2" in render_text(diff)


def test_long_strings_that_share_a_prefix_are_shown_around_their_difference() -> None:
    from rewind.inspection.diff import _path_lines

    common = "preferences: window seat, no red-eyes | " * 3
    before_run, after_run = {"content": common + "Visit Porto first."}, {"content": common + "Visit Lisbon first."}
    (line,) = _path_lines(before_run, after_run, "request")
    before, after = line.split(" → ")
    assert "Porto" in before and "Lisbon" in after


def test_an_http_date_header_is_a_per_run_value(tmp_path: Path) -> None:
    # A recorded provider error keeps its response headers; two runs a second apart differ only by Date.
    def run(path: Path, date: str) -> Path:
        @rewind.llm(name="chat")
        def chat(**request: object) -> dict[str, object]:
            raise RuntimeError("overloaded")

        with rewind.record(path):
            try:
                chat(model="m", response={"headers": {"date": date}})
            except RuntimeError:
                pass
        return path

    a = run(tmp_path / "a.rewind", "Thu, 03 Dec 2026 14:09:18 GMT")
    b = run(tmp_path / "b.rewind", "Thu, 03 Dec 2026 14:09:19 GMT")
    assert [e.op for e in diff_traces(a, b).entries] == [EQUAL]
