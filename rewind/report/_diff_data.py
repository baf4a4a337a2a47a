"""A diff as report data: the rows ``rewind.diff.diff_traces`` aligned, and side-by-side
line diffs of the requests and outcomes of changed rows.

The alignment, each row's classification, its similarity and its explanation all come
from ``rewind.diff``; this module only lays the pretty-printed JSON of two steps out
side by side for the page.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
from collections.abc import Mapping
from typing import Any

from rewind.inspection.accounting import ModelPrice
from rewind.inspection.diff import CHANGED, EQUAL, TraceDiff, _outcome_value
from rewind.inspection.preview import pretty
from rewind.storage.trace import Event, Trace

from ._payload import Embedder
from ._trace_data import build_section

#: Changed rows that get a side-by-side diff; later ones point at the step details.
MAX_SIDE_BY_SIDE = 300
_MAX_LINES = 3_000
_MAX_LINE = 2_000
_CONTEXT = 3


def _lines(value: Any) -> list[str]:
    lines = pretty(value).splitlines()
    if len(lines) > _MAX_LINES:
        lines = [*lines[:_MAX_LINES], f"… {len(lines) - _MAX_LINES} more lines not shown"]
    return [line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " …" for line in lines]


def side_by_side(a: Any, b: Any) -> list[list[Any]]:
    """Rows ``[op, left, right]`` (op ``=``, ``~``, ``-``, ``+``) of the pretty JSON of ``a``
    and ``b``; long equal runs collapse to ``["…", count]``."""
    left, right = _lines(a), _lines(b)
    rows: list[list[Any]] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    opcodes = matcher.get_opcodes()
    for number, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            run = list(zip(left[i1:i2], right[j1:j2]))
            head = 0 if number == 0 else _CONTEXT
            tail = 0 if number == len(opcodes) - 1 else _CONTEXT
            if len(run) > head + tail + 1:
                rows.extend(["=", x, y] for x, y in run[:head])
                rows.append(["…", len(run) - head - tail])
                rows.extend(["=", x, y] for x, y in run[len(run) - tail :])
            else:
                rows.extend(["=", x, y] for x, y in run)
        elif tag == "replace":
            for x, y in itertools.zip_longest(left[i1:i2], right[j1:j2]):
                rows.append(["~", x, y])
        elif tag == "delete":
            rows.extend(["-", x, None] for x in left[i1:i2])
        else:
            rows.extend(["+", None, y] for y in right[j1:j2])
    return rows


def build_diff_data(
    diff: TraceDiff,
    trace_a: Trace,
    trace_b: Trace,
    embedder: Embedder,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
) -> tuple[dict[str, Any], list[bytes], list[bytes]]:
    """The page data of a diff and the step bodies of run A and run B."""
    where_a, where_b = _Where(trace_a), _Where(trace_b)
    first = diff.first_divergence
    rows: list[dict[str, Any]] = []
    first_row: int | None = None
    side_by_side_left = MAX_SIDE_BY_SIDE
    for number, entry in enumerate(diff.entries):
        row: dict[str, Any] = {
            "op": entry.op,
            "a": where_a(entry.a),
            "b": where_b(entry.b),
            "sim": entry.similarity,
            "changes": list(entry.changes),
            "explain": entry.explain(),
        }
        if entry is first:
            first_row = number
        if entry.op == CHANGED and entry.a is not None and entry.b is not None:
            if side_by_side_left > 0:
                side_by_side_left -= 1
                row["request"] = side_by_side(entry.a.request, entry.b.request)
                if any(change in entry.changes for change in ("response", "error", "outcome")):
                    row["outcome"] = side_by_side(_outcome(entry.a), _outcome(entry.b))
            else:
                row["side_by_side_omitted"] = True
        rows.append(row)
    # The steps that differ get the size budget first.
    order_a = [r["a"] for r in rows if r["op"] != EQUAL and r["a"] is not None]
    order_b = [r["b"] for r in rows if r["op"] != EQUAL and r["b"] is not None]
    # Run A may use half the size budget, so run B's steps are never all left out.
    limits = embedder.limits
    if limits.max_bytes is not None:
        embedder.limits = dataclasses.replace(limits, max_bytes=limits.max_bytes // 2)
    try:
        section_a = build_section(trace_a, embedder, prices=prices, label=diff.a_label, order=order_a)
    finally:
        embedder.limits = limits
    section_b = build_section(trace_b, embedder, prices=prices, label=diff.b_label, order=order_b)
    data = {
        "a": section_a.data,
        "b": section_b.data,
        "rows": rows,
        "first": first_row,
        "summary": diff.summary(),
        "counts": diff.counts(),
        "exact": diff.exact,
        "notes": list(diff.notes),
    }
    return data, section_a.bodies, section_b.bodies


class _Where:
    """The index of a diff entry's step in its trace (by identity, else by seq: a diff
    computed over other ``Trace`` objects of the same files still lines up)."""

    def __init__(self, trace: Trace) -> None:
        self._ids = {id(event): index for index, event in enumerate(trace.events)}
        self._seqs = {event.seq: index for index, event in enumerate(trace.events)}

    def __call__(self, event: Event | None) -> int | None:
        if event is None:
            return None
        found = self._ids.get(id(event))
        return found if found is not None else self._seqs.get(event.seq)


def _outcome(event: Event) -> Any:
    return _outcome_value(event)


__all__ = ["MAX_SIDE_BY_SIDE", "build_diff_data", "side_by_side"]
