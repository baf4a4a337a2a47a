"""What ``Trace.load`` and ``Trace.open`` read back is exactly what the stdlib ``json``
reader gives for the same line, whichever parser took the line (issue 34).

Readers take a line with orjson when it is spelled the way the writer writes it and
fall back to the stdlib reader where orjson refuses it (integers beyond 64 bits, NaN
and infinities, lone surrogates) or would read it differently. Lines here are written
both ways: by rewind's own writer, and by ``json.dumps`` with other spellings
(escaped non-ASCII, spaces), so both paths are exercised on every kind of value.

Also here: the collector pause around a read (``rewind._gc_pause``) leaves the
collector as it found it.
"""

from __future__ import annotations

import gc
import json
import math
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewind.data import gc_pause as _gc_pause
from rewind.storage.trace import Event, Trace, new_header

EDGE_NUMBERS = [0, -1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**40, -(2**100)]
EDGE_NUMBERS += [0.0, -0.0, 5e-324, 1.7976931348623157e308, 0.1, 1e22, 1e-5, math.nan, math.inf, -math.inf]
EDGE_TEXT = ["", "\ud800", "a\udfffb", "\x00\x1f\x7f", "\u2028", '"\\/', "\b\f\n\r\t", "café ☕", "\U0001f600"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.sampled_from(EDGE_NUMBERS),
    st.sampled_from(EDGE_TEXT),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def spelled(value: Any) -> str:
    """A value compared by its exact spelling: types (1 vs 1.0), -0.0, NaN and order count."""
    return json.dumps(value, ensure_ascii=True)


def expected_bodies(path: Path) -> list[dict[str, Any]]:
    """Each event line as the stdlib reader reads it."""
    lines = path.read_bytes().splitlines()[1:]
    return [json.loads(line.decode("utf-8", "surrogatepass")) for line in lines]


def check_reads_back(path: Path) -> None:
    expected = expected_bodies(path)
    for trace in (Trace.load(path), Trace.open(path)):
        assert len(trace) == len(expected)
        for event, stdlib in zip(trace, expected, strict=True):
            assert spelled(event.response) == spelled(stdlib.get("response"))
            assert spelled(event.request) == spelled(stdlib.get("request"))
            assert spelled(event.get("extra")) == spelled(stdlib.get("extra"))
            skeleton = (event.seq, event.kind, event.name, event.fingerprint, event.ts, event.duration_ms)
            recorded = [stdlib[key] for key in ("seq", "kind", "name", "fingerprint")]
            recorded += [float(stdlib["ts"]), float(stdlib["duration_ms"])]
            assert spelled(skeleton) == spelled(recorded)
            assert (event.ok, event.live) == (stdlib["ok"], stdlib["live"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    response=values, request=values, extra=values, name=st.text(), ts=st.sampled_from([0.0, 1.5, 1e21, 1700000000.25])
)
def test_values_written_by_rewind_read_back_as_the_stdlib_reads_them(
    tmp_path: Path, response: Any, request: Any, extra: Any, name: str, ts: float
) -> None:
    path = tmp_path / "written.rewind"
    event = Event(0, "llm", name, "0" * 64, request, response, None, extra={"extra": extra}, ts=ts)
    Trace([event], header=new_header()).dump(path)
    check_reads_back(path)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(response=values, request=values, ascii_only=st.booleans(), spaced=st.booleans())
def test_other_spellings_read_back_as_the_stdlib_reads_them(
    tmp_path: Path, response: Any, request: Any, ascii_only: bool, spaced: bool
) -> None:
    separator = ", " if spaced else ","
    body = separator.join(
        f'"{key}":{json.dumps(value, ensure_ascii=ascii_only)}'
        for key, value in (("response", response), ("request", request))
    )
    line = (
        '{"seq":0,"kind":"llm","name":"chat","fingerprint":"","ts":1,"duration_ms":0.25,'
        f'"ok":true,"live":false,{body}}}'
    )
    path = tmp_path / "spelled.rewind"
    header = json.dumps(new_header(), separators=(",", ":"))
    path.write_bytes(f"{header}\n{line}\n".encode("utf-8", "surrogatepass"))
    check_reads_back(path)


def test_a_read_leaves_the_collector_on_and_the_objects_it_built_collectable(tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    Trace([Event(0, "tool", "t", "", {"q": [1]}, {"r": [2]}, None)], header=new_header()).dump(path)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    Trace.load(path)
    Trace.open(path)
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # nothing left frozen for good


class _Node:
    """A garbage cycle's member that a weak reference can watch."""

    other: _Node | None = None


def _garbage_cycle() -> weakref.ref[_Node]:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    return weakref.ref(first)


def test_what_a_read_built_goes_to_the_oldest_generation_without_a_walk(tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    Trace([Event(0, "tool", "t", "", {"q": [1]}, {"r": [2]}, None)], header=new_header()).dump(path)
    trace = Trace.load(path)
    body = trace[0].request
    assert any(item is body for item in gc.get_objects(generation=2))


def test_young_garbage_cycles_are_not_carried_into_the_oldest_generation_by_a_read(tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    Trace([Event(0, "tool", "t", "", {"q": [1]}, {"r": [2]}, None)], header=new_header()).dump(path)
    before = _garbage_cycle()
    Trace.load(path)
    gc.collect(1)  # a young collection, which a cycle in the oldest generation escapes
    assert before() is None


def test_a_read_that_fails_leaves_its_garbage_to_the_young_collections(tmp_path: Path) -> None:
    watched: list[weakref.ref[_Node]] = []
    with pytest.raises(RuntimeError), _gc_pause.paused():
        watched.append(_garbage_cycle())
        raise RuntimeError("a corrupt line")
    gc.collect(1)
    assert watched[0]() is None


def test_a_collector_the_application_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with _gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_switch_the_collector_back_on_when_the_last_one_ends() -> None:
    inside = threading.Event()
    release = threading.Event()

    def other_reader() -> None:
        with _gc_pause.paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other_reader)
    with _gc_pause.paused():
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled()  # the other reader is still reading
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_objects_an_application_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with _gc_pause.paused():
            [{"built": [index]} for index in range(1000)]
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_finalizer_that_reads_a_trace_during_the_pre_read_collection_does_not_deadlock(tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    Trace([Event(0, "tool", "t", "", {"q": [1]}, {"r": [2]}, None)], header=new_header()).dump(path)
    read_by_finalizer: list[int] = []

    class ReadsWhenCollected:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the collector frees it

        def __del__(self) -> None:
            read_by_finalizer.append(len(Trace.load(path)))

    ReadsWhenCollected()
    done = threading.Event()
    reader = threading.Thread(target=lambda: (Trace.load(path), done.set()), daemon=True)
    reader.start()
    assert done.wait(10), "a read deadlocked on a finalizer that reads a trace"
    assert read_by_finalizer == [1]
