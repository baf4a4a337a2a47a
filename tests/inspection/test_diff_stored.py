"""``rewind diff`` from stored bytes says what reading every step says.

A lazily opened v1 trace is compared from its stored lines (``stored_body``: equal
bodies unread, a differing body cut at its request and only the differing parts
parsed); an eagerly loaded trace holds its events in memory and is compared by reading
and walking every payload. Both must give the same rows, for any pair of runs.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewind.data.canonical import fingerprint
from rewind.inspection import diff_align
from rewind.inspection.diff import CHANGED, EQUAL, TraceDiff, diff_traces
from rewind.inspection.diff_steps import Side
from rewind.inspection.stored_body import parse_head, parse_request, stored_body, stored_parts
from rewind.storage.trace import Event, Trace


def rows(diff: TraceDiff) -> list[tuple[Any, ...]]:
    return [(e.op, e.a_step, e.b_step, e.changes, e.similarity) for e in diff.entries]


def write(path: Path, steps: list[dict[str, Any]], *, externalize: int | None = None) -> Path:
    events = []
    for seq, step in enumerate(steps):
        extra: dict[str, Any] = {key: step[key] for key in ("stream", "function") if key in step}
        event = Event(
            seq,
            step["kind"],
            step["name"],
            step.get("fingerprint") or fingerprint(step["request"]),
            step["request"],
            step.get("response"),
            step.get("error"),
            extra=extra,
        )
        events.append(event)
    Trace(events).dump(path, externalize=externalize)
    return path


def assert_same_as_reading(a: Path, b: Path, *, exact: bool) -> TraceDiff:
    """The diff of ``a`` and ``b`` opened lazily equals the one of them loaded, both with
    the exact alignment (whose middle compares signatures) and with the block alignment
    (where every paired row is compared on its own, from stored bytes when it can)."""
    stored = diff_traces(a, b, exact=exact)
    read = diff_traces(Trace.load(a), Trace.load(b), exact=exact)
    assert rows(stored) == rows(read)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(diff_align, "DP_LIMIT", 0)
        by_blocks = diff_traces(a, b, exact=exact)
        assert rows(by_blocks) == rows(diff_traces(Trace.load(a), Trace.load(b), exact=exact))
    if [e.op for e in by_blocks.entries] == [e.op for e in stored.entries]:
        assert rows(by_blocks) == rows(stored)
    return by_blocks


# -- the cases the stored comparison branches on ------------------------------------------

SYSTEM = {"role": "system", "content": "You plan trips."}


def chat(text: str, *, response: str = "ok", response_id: str = "chatcmpl-AAAAAAAAAAAA1") -> dict[str, Any]:
    return {
        "kind": "llm",
        "name": "chat",
        "request": {"model": "m", "messages": [SYSTEM, {"role": "user", "content": text}]},
        "response": {"id": response_id, "created": 1, "choices": [{"message": {"content": response}}]},
        "function": "agent:chat",
    }


@pytest.mark.parametrize("exact", [False, True])
def test_byte_equal_requests_with_different_responses(tmp_path: Path, exact: bool) -> None:
    a = write(tmp_path / "a.rewind", [chat("hi", response="yes"), chat("go")])
    b = write(tmp_path / "b.rewind", [chat("hi", response="no"), chat("go")])
    diff = assert_same_as_reading(a, b, exact=exact)
    assert [(e.op, e.changes) for e in diff.entries] == [(CHANGED, ("response",)), (EQUAL, ())]


@pytest.mark.parametrize("exact", [False, True])
def test_byte_equal_responses_with_different_requests(tmp_path: Path, exact: bool) -> None:
    a = write(tmp_path / "a.rewind", [chat("hi"), chat("go")])
    b = write(tmp_path / "b.rewind", [chat("hello"), chat("go")])
    diff = assert_same_as_reading(a, b, exact=exact)
    assert [(e.op, e.changes) for e in diff.entries] == [(CHANGED, ("request",)), (EQUAL, ())]


def test_masked_ids_and_timestamps_that_differ_in_bytes_are_equal(tmp_path: Path) -> None:
    a = write(tmp_path / "a.rewind", [chat("at 2024-01-01T10:00:00 go", response_id="chatcmpl-AAAAAAAAAAAA1")])
    b = write(tmp_path / "b.rewind", [chat("at 2025-06-30T23:59:59 go", response_id="chatcmpl-BBBBBBBBBBBB2")])
    assert [e.op for e in assert_same_as_reading(a, b, exact=False).entries] == [EQUAL]
    assert [e.changes for e in assert_same_as_reading(a, b, exact=True).entries] == [("request", "response")]


def test_a_request_key_nested_in_the_response_or_the_request(tmp_path: Path) -> None:
    nested_response = chat("hi")
    nested_response["response"] = {"id": "r1", "request": {"x": 1}}
    nested_request = chat("hi")
    nested_request["request"] = {"request": {"messages": ["a"]}, "tail": 1}
    other_request = chat("hi")
    other_request["request"] = {"request": {"messages": ["b"]}, "tail": 1}
    # The same response with a key named request in it, and different requests: the cut
    # at the nested key leaves equal heads, and request parts that are not one object.
    nested_other = {**nested_response, "request": chat("bye")["request"]}
    same_nested = {**nested_response, "response": {"id": "r2", "request": {"x": 1}}}
    # ... and responses that differ only after such a key: equal heads again.
    after_a = {**nested_response, "response": {"id": "r1", "request": {"x": 1}, "z": 1}}
    after_b = {**nested_response, "response": {"id": "r1", "request": {"x": 1}, "z": 2}}
    a = write(
        tmp_path / "a.rewind", [nested_response, nested_request, nested_request, nested_response, same_nested, after_a]
    )
    b = write(
        tmp_path / "b.rewind", [chat("hi"), other_request, nested_request, nested_other, nested_response, after_b]
    )
    for exact in (False, True):
        assert_same_as_reading(a, b, exact=exact)
    # The cut at the first ``,"request":`` is inside the response: the head does not parse.
    body = stored_body(Trace.open(a)[0])
    cut = stored_parts(body) if body is not None else None
    assert cut is not None and parse_head(cut[0]) is None


def test_stored_parts_and_their_strict_parsers(tmp_path: Path) -> None:
    a = write(tmp_path / "a.rewind", [chat("hi")])
    event = Trace.open(a)[0]
    body = stored_body(event)
    assert body is not None
    cut = stored_parts(body)
    assert cut is not None
    head, request = cut
    assert parse_head(head) == {"response": event.response, "function": "agent:chat"}
    assert parse_request(request) == event.request
    assert parse_head(b',"response":{"a":1') is None  # an object left open: not the request's cut
    assert parse_head(b',"seq":1') is None  # a skeleton key again
    assert parse_request(b'{"a":1,"a":2}') is None  # a key twice: the reader's strict path decides


def test_a_v2_trace_with_blob_markers_is_read(tmp_path: Path) -> None:
    big = "x" * 300
    a = write(tmp_path / "a.rewind", [chat(big, response="yes"), chat("go")], externalize=64)
    b = write(tmp_path / "b.rewind", [chat(big, response="no"), chat("go")], externalize=64)
    assert b'"__rewind_blob__"' in a.read_bytes()
    assert not Side(Trace.open(a), False, {}).stored
    diff = assert_same_as_reading(a, b, exact=False)
    assert [(e.op, e.changes) for e in diff.entries] == [(CHANGED, ("response",)), (EQUAL, ())]


def test_errors_and_streams(tmp_path: Path) -> None:
    failed = chat("hi")
    del failed["response"]
    failed["error"] = {"type": "RateLimitError", "message": "slow down"}
    streamed = chat("hi")
    streamed["stream"] = {"chunks": [{"id": "c1"}], "truncated": False}
    a = write(tmp_path / "a.rewind", [failed, streamed, failed])
    b = write(tmp_path / "b.rewind", [chat("hi"), chat("hi"), {**failed, "error": {"type": "Other"}}])
    for exact in (False, True):
        diff = assert_same_as_reading(a, b, exact=exact)
        assert [e.changes for e in diff.entries] == [("outcome",), ("response",), ("error",)]


# -- any two runs ---------------------------------------------------------------------------

_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, math.nan, math.inf, 10**20]),
    st.sampled_from(["a", "b", "call_abcdefghij12345", "2024-01-01T10:00:00Z", "x 2024-01-01 10:00 y", "é"]),
)
_keys = st.sampled_from(["id", "msg_id", "created", "usage", "text", "a", "request", "response"])
_json = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3))


@st.composite
def _step(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["llm", "tool"]))
    step: dict[str, Any] = {
        "kind": kind,
        "name": draw(st.sampled_from(["chat", "search"])),
        "fingerprint": draw(st.sampled_from(["", "0" * 64, "1" * 64])),  # "": the request's
        "request": draw(st.dictionaries(_keys, _json, max_size=3)),
    }
    if draw(st.booleans()):
        step["response"] = draw(_json)
    else:
        step["error"] = draw(st.dictionaries(_keys, _json, max_size=2))
    if draw(st.booleans()):
        step["function"] = draw(st.sampled_from(["f", "g"]))
    return step


@st.composite
def _runs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two runs, the second mostly the first with some parts of some steps changed."""
    a = draw(st.lists(_step(), max_size=6))
    b = []
    for step in a:
        change = draw(st.sampled_from(["same", "same", "request", "outcome", "both", "drop", "new"]))
        if change == "drop":
            continue
        if change == "new":
            b.append(draw(_step()))
        twin = dict(step)
        fresh = draw(_step())
        if change in ("request", "both"):
            twin["request"] = fresh["request"]
        if change in ("outcome", "both"):
            twin.pop("response", None)
            twin.pop("error", None)
            twin.update({k: fresh[k] for k in ("response", "error") if k in fresh})
        b.append(twin)
    return a, b


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_runs(), st.booleans())
def test_stored_comparison_agrees_with_reading(tmp_path: Path, runs: Any, exact: bool) -> None:
    a = write(tmp_path / "a.rewind", runs[0])
    b = write(tmp_path / "b.rewind", runs[1])
    assert_same_as_reading(a, b, exact=exact)


@given(st.one_of(_json, st.sampled_from(["\ud800", 2**70, {"b": 1, "a": [1.5e300, -0.0]}])))
def test_signatures_hash_the_canonical_json(value: Any) -> None:
    from rewind.data.canonical import canonical_json
    from rewind.inspection.diff_steps import _digest

    expected = hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    assert _digest(value) == expected
