"""Where did two runs diverge? Align two traces step by step and report the differences.

Steps are aligned by a weighted longest common subsequence over their identities (kind
and call name): a pair of identical steps weighs twice as much as a pair that merely
shares an identity, so one extra or missing step shifts the alignment instead of turning
every later step into a change, while steps that all changed still pair up in place. A
paired step is ``equal`` when its request and outcome (response or error) are the same,
else ``changed``; an unpaired step is ``deleted`` (only in run A) or ``inserted`` (only
in run B).

Two live runs never match byte for byte: response ids, tool-call ids, timestamps and
token usage change every run. Unless ``exact=True``, such values are masked before
comparing (in llm payloads every string ``id``/``*_id`` field; elsewhere values shaped
like uuids, timestamps and provider ids), so ``equal`` means "the same behaviour", not
"the same bytes".
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewind.data.escape import inert
from rewind.inspection.provenance import edit_provenance, hybrid_provenance
from rewind.matching.similarity import lexical_similarity
from rewind.storage.trace import Event, PathLike, Trace

from .diff_align import align
from .diff_mask import mask as _mask
from .diff_steps import Side, compare
from .preview import answer_text, clip, compact, outcome, pretty

EQUAL = "equal"
CHANGED = "changed"
DELETED = "deleted"
INSERTED = "inserted"

_SYMBOL = {EQUAL: " ", CHANGED: "~", DELETED: "-", INSERTED: "+"}
_COLOR = {CHANGED: "33", DELETED: "31", INSERTED: "32"}

# -- public types -------------------------------------------------------------------


@dataclass(frozen=True)
class DiffEntry:
    """One aligned row of a diff.

    ``op`` is ``"equal"``, ``"changed"``, ``"deleted"`` (only in A) or ``"inserted"``
    (only in B); ``a``/``b`` the steps on each side (``None`` on the missing side);
    ``similarity`` in [0, 1] (1.0 for equal, 0.0 for unpaired); ``step`` the step
    number in run A, or in run B for an inserted step; ``changes`` which parts of a
    changed step differ (``"request"``, ``"response"``, ``"error"``, ``"outcome"``).
    """

    op: str
    a: Event | None
    b: Event | None
    similarity: float
    step: int
    changes: tuple[str, ...] = ()

    @property
    def a_step(self) -> int | None:
        return self.a.seq if self.a is not None else None

    @property
    def b_step(self) -> int | None:
        return self.b.seq if self.b is not None else None

    @property
    def kind(self) -> str:
        event = self.a if self.a is not None else self.b
        return event.kind if event is not None else ""

    @property
    def name(self) -> str:
        event = self.a if self.a is not None else self.b
        return event.name if event is not None else ""

    def explain(self) -> str:
        """Why this row is not equal, in one sentence."""
        if self.op == DELETED:
            return "run A made this call; run B did not"
        if self.op == INSERTED:
            return "run B made this call; run A did not"
        if self.op == EQUAL:
            return "same request, same outcome"
        if "request" not in self.changes:
            return "same request, different " + ("outcome" if "outcome" in self.changes else "response")
        if len(self.changes) == 1:
            return "the request changed, the outcome did not"
        return "the request changed, and so did the outcome"


class _ScoredOnRead(DiffEntry):
    """A changed row whose similarity is scored when first read.

    Scoring a pair walks both whole payloads; a long diff shows only some of its rows
    (and a caller that wants the alignment alone shows none), so the score waits until
    someone reads it. Behaves as the ``DiffEntry`` it stands for: same fields, equality,
    hash and pickled form.
    """

    def __init__(
        self,
        op: str,
        a: Event | None,
        b: Event | None,
        similarity: float | Callable[[], float],
        step: int,
        changes: tuple[str, ...] = (),
    ) -> None:
        # Frozen: the fields go straight into the instance's dict (one call, not six).
        self.__dict__.update(op=op, a=a, b=b, step=step, changes=changes, _similarity=similarity)

    @property
    def similarity(self) -> float:
        value = self.__dict__["_similarity"]
        if callable(value):
            value = value()
            object.__setattr__(self, "_similarity", value)
        return float(value)

    def _fields(self) -> tuple[Any, ...]:
        return (self.op, self.a, self.b, self.similarity, self.step, self.changes)

    # A dataclass compares only instances of its own class; this row equals the plain
    # DiffEntry it stands for.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DiffEntry):
            return NotImplemented
        return self._fields() == (other.op, other.a, other.b, other.similarity, other.step, other.changes)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[Any, ...]:
        return (DiffEntry, self._fields())

    def __repr__(self) -> str:
        return repr(DiffEntry(*self._fields()))


@dataclass
class TraceDiff:
    """The aligned difference between run A and run B."""

    entries: list[DiffEntry]
    a_label: str = "A"
    b_label: str = "B"
    a_steps: int = 0
    b_steps: int = 0
    exact: bool = False
    notes: list[str] = field(default_factory=list)
    #: Whether run A / run B is a hybrid replay, whose rows say which steps ran live.
    hybrid: tuple[bool, bool] = (False, False)

    @property
    def diverged(self) -> bool:
        return any(entry.op != EQUAL for entry in self.entries)

    @property
    def first_divergence(self) -> DiffEntry | None:
        """The first row that is not equal: where the runs part ways."""
        return next((entry for entry in self.entries if entry.op != EQUAL), None)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys((EQUAL, CHANGED, DELETED, INSERTED), 0)
        for entry in self.entries:
            counts[entry.op] += 1
        return counts

    def summary(self) -> str:
        """One line: ``identical (N steps)`` or the count of each kind of row."""
        if not self.diverged:
            return f"identical ({len(self.entries)} steps)"
        counts = self.counts()
        return ", ".join(f"{counts[op]} {op}" for op in (EQUAL, CHANGED, DELETED, INSERTED))


# -- diffing --------------------------------------------------------------------------


def diff_traces(a: Trace | PathLike, b: Trace | PathLike, *, exact: bool = False) -> TraceDiff:
    """Align two runs (paths or ``Trace`` objects) and classify every step.

    With ``exact=True`` requests are compared by fingerprint and outcomes byte for
    byte; by default per-run ids, timestamps and usage are masked first.
    """
    trace_a = a if isinstance(a, Trace) else Trace.open(a)
    trace_b = b if isinstance(b, Trace) else Trace.open(b)
    shared: dict[bytes, tuple[str, str]] = {}
    side_a, side_b = Side(trace_a, exact, shared), Side(trace_b, exact, shared)
    entries = [_entry(side_a, side_b, i, j) for i, j in align(side_a, side_b)]
    notes = []
    for label, trace in (("A", trace_a), ("B", trace_b)):
        if trace.torn_tail:
            notes.append(f"run {label} ends in a torn line (its recorder was killed); compared its complete steps")
        for story in (edit_provenance(trace), hybrid_provenance(trace)):
            if story:
                notes.append(f"run {label} {story}")
    return TraceDiff(
        entries=entries,
        a_label=trace_a.path or "A",
        b_label=trace_b.path or "B",
        a_steps=len(side_a.events),
        b_steps=len(side_b.events),
        exact=exact,
        notes=notes,
        hybrid=(hybrid_provenance(trace_a) is not None, hybrid_provenance(trace_b) is not None),
    )


def _entry(side_a: Side, side_b: Side, i: int | None, j: int | None) -> DiffEntry:
    if i is None:
        assert j is not None
        event = side_b.events[j]
        return DiffEntry(INSERTED, None, event, 0.0, event.seq)
    if j is None:
        event = side_a.events[i]
        return DiffEntry(DELETED, event, None, 0.0, event.seq)
    ea, eb = side_a.events[i], side_b.events[j]
    if side_a.equal_to.get(i) == j:
        return DiffEntry(EQUAL, ea, eb, 1.0, ea.seq)
    same_request, same_outcome = compare(side_a, i, side_b, j)
    if same_request and same_outcome:
        return DiffEntry(EQUAL, ea, eb, 1.0, ea.seq)
    changes: list[str] = []
    if not same_request:
        changes.append("request")
    if not same_outcome:
        if ea.ok != eb.ok:
            changes.append("outcome")
        else:
            changes.append("response" if ea.ok else "error")
    if not changes:  # exact mode: same fingerprint and outcome, but a redacted/stored request differs
        changes.append("request")
    score = functools.partial(_similarity, side_a, side_b, ea, eb)
    return _ScoredOnRead(CHANGED, ea, eb, score, ea.seq, tuple(changes))


def _similarity(side_a: Side, side_b: Side, ea: Event, eb: Event) -> float:
    """How alike two paired steps are: the measure fuzzy replay and divergence reports use.

    Over the whole payloads: a prefix cut-off scored a change past it 100%, and
    difflib's autojunk heuristic scored the same change 15% on a long request. A pair
    that differs never rounds up to 1.0.
    """
    score = lexical_similarity(side_a.views(ea), side_b.views(eb))
    return min(round(score, 3), 0.999)


def percent(similarity: float) -> str:
    """``similarity`` as a whole percentage; a changed pair never reads ``100%``."""
    shown = round(similarity * 100)
    return f"{min(shown, 99) if similarity < 1 else 100}%"


# -- rendering --------------------------------------------------------------------------


def render_text(diff: TraceDiff, *, context: int = 1, verbose: bool = False, color: bool = False) -> str:
    """The report ``rewind diff`` prints: changed rows with ``context`` equal rows around them.

    ``verbose`` adds full request/outcome diffs; ``color`` adds ANSI colours. Recorded
    text (names, kinds, payloads, paths) is shown inert, so the colours are the only
    escape sequences in the report.
    """
    if context < 0:
        raise ValueError(f"context must be >= 0, not {context}")

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    lines = [
        paint(f"--- A: {inert(diff.a_label)} ({diff.a_steps} steps)", "1"),
        paint(f"+++ B: {inert(diff.b_label)} ({diff.b_steps} steps)", "1"),
    ]
    lines.extend(f"note: {inert(note)}" for note in diff.notes)
    first = diff.first_divergence
    width = max(4, *(len(e.name) for e in diff.entries)) if diff.entries else 4
    width = min(width, 40)
    # A hybrid run's rows say which steps ran live, so every row is shown.
    shown = list(range(len(diff.entries))) if any(diff.hybrid) else _visible_rows(diff.entries, context)
    texts: dict[str, str] = {}  # masked strings, shared by the rows (see diff_mask.mask)
    previous = -1
    for index in shown:
        if index - previous > 1:
            lines.append(paint(f"  ⋮  {_steps(index - previous - 1)} equal", "2"))
        previous = index
        entry = diff.entries[index]
        row = _row(entry, width) + _origin(entry, diff.hybrid)
        if entry.op != EQUAL:
            row = paint(row, _COLOR[entry.op])
        if entry is first:
            row += paint("   ◀ first divergence", "1")
        lines.append(row)
        if entry.op != EQUAL:
            lines.extend("        " + line for line in _details(entry, verbose, texts))
    if diff.entries and len(diff.entries) - 1 > previous:
        lines.append(paint(f"  ⋮  {_steps(len(diff.entries) - 1 - previous)} equal", "2"))
    lines.append("")
    if first is None:
        how = "byte for byte" if diff.exact else "ignoring per-run ids, timestamps and usage"
        lines.append(f"no divergence: {diff.summary()}, same requests and outcomes ({how})")
    else:
        where = _where(first)
        named = f"{inert(first.kind)} '{clip(first.name, None)}'"
        lines.append(paint(f"first divergence: {where} {named}: {first.explain()}", "1"))
        if first.op == CHANGED and "request" not in first.changes:
            lines.append("  everything after this step follows from that answer")
        lines.append(f"summary: {diff.summary()}")
    return "\n".join(lines)


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _visible_rows(entries: Sequence[DiffEntry], context: int) -> list[int]:
    keep: set[int] = set()
    for index, entry in enumerate(entries):
        if entry.op != EQUAL:
            keep.update(range(max(0, index - context), min(len(entries), index + context + 1)))
    return sorted(keep)


def _where(entry: DiffEntry) -> str:
    if entry.op == INSERTED:
        return f"step {entry.step} of B"
    if entry.op == DELETED:
        return f"step {entry.step} of A"
    if entry.a_step == entry.b_step:
        return f"step {entry.step}"
    return f"step {entry.a_step} of A / {entry.b_step} of B"


def _origin(entry: DiffEntry, hybrid: tuple[bool, bool]) -> str:
    """`` [B: live]`` / `` [B: ↺ served]``: where a hybrid run's step came from."""
    marks = [
        f"{label}: {'live' if event.live else '↺ served'}"
        for label, event, is_hybrid in (("A", entry.a, hybrid[0]), ("B", entry.b, hybrid[1]))
        if is_hybrid and event is not None
    ]
    return f"  [{', '.join(marks)}]" if marks else ""


def _row(entry: DiffEntry, width: int) -> str:
    a = str(entry.a_step) if entry.a_step is not None else "·"
    b = str(entry.b_step) if entry.b_step is not None else "·"
    head = f"{_SYMBOL[entry.op]} {a:>5} {b:>5}  {inert(entry.kind):<6} {clip(entry.name, width):<{width}}"
    if entry.op == CHANGED:
        what = " & ".join(entry.changes)
        return f"{head}  {what} changed ({percent(entry.similarity)} similar)"
    if entry.op == DELETED:
        return f"{head}  only in A"
    if entry.op == INSERTED:
        return f"{head}  only in B"
    return head.rstrip()


def _details(entry: DiffEntry, verbose: bool, texts: dict[str, str]) -> list[str]:
    """The lines under a row that is not equal; ``texts`` caches masked strings across
    rows (consecutive requests re-send the same history)."""
    if entry.op in (DELETED, INSERTED):
        event = entry.a if entry.a is not None else entry.b
        assert event is not None
        if not verbose:
            return [f"→ {outcome(event, 100)}"]
        return [f"request:  {compact(event.request, 400)}", f"outcome:  {outcome(event, 400)}"]
    assert entry.a is not None and entry.b is not None
    a, b = entry.a, entry.b
    if verbose:
        out: list[str] = []
        if "request" in entry.changes:
            out.extend(_unified(a.request, b.request, "request"))
        if any(c in entry.changes for c in ("response", "error", "outcome")):
            out.extend(_unified(_outcome_value(a), _outcome_value(b), "outcome"))
        return out
    out = []
    provider = a.kind == "llm"
    if "request" in entry.changes:
        left, right = _mask(a.request, provider=provider, texts=texts), _mask(b.request, provider=provider, texts=texts)
        out.extend(_path_lines(left, right, "request"))
    if "outcome" in entry.changes or "error" in entry.changes:
        out.append(f"A: {outcome(a, 100)}")
        out.append(f"B: {outcome(b, 100)}")
    elif "response" in entry.changes:
        text_a, text_b = answer_text(a.response), answer_text(b.response)
        if a.kind == "llm" and text_a is not None and text_b is not None and text_a != text_b:
            out.append(f"A: {clip(text_a, 100)}")
            out.append(f"B: {clip(text_b, 100)}")
        else:
            left = _mask(_outcome_value(a), provider=provider, texts=texts)
            right = _mask(_outcome_value(b), provider=provider, texts=texts)
            out.extend(_path_lines(left, right, "response"))
    return out


def _outcome_value(event: Event) -> Any:
    if not event.ok:
        return {"error": event.error}
    stream = event.get("stream")
    if event.response is None and stream is not None:
        return {"stream": stream}
    return event.response


def _around(value: Any, other: Any, width: int = 60) -> str:
    """``value`` cut to ``width``, starting near where it stops agreeing with ``other``:
    two long strings that share their first 60 characters must not look identical."""
    if isinstance(value, str) and isinstance(other, str) and len(value) > width:
        shared = 0
        for mine, theirs in zip(value, other):
            if mine != theirs:
                break
            shared += 1
        if shared > width // 2:
            start = shared - 12
            return "…" + compact(value[start:], width - 1)
    return compact(value, width)


def _path_lines(a: Any, b: Any, root: str, limit: int = 3) -> list[str]:
    changes = list(_changed_paths(a, b, root, limit + 1))
    lines = [f"{clip(path, 120)}: {_around(x, y)} → {_around(y, x)}" for path, x, y in changes[:limit]]
    if len(changes) > limit:
        lines.append("… more differences (use -v for the full diff)")
    if not lines:
        lines.append(f"{root}: differs only in per-run values (ids, timestamps)")
    return lines


_MISSING = "<absent>"


def _changed_paths(a: Any, b: Any, path: str, limit: int) -> Iterator[tuple[str, Any, Any]]:
    found = 0
    stack: list[tuple[Any, Any, str]] = [(a, b, path)]
    while stack and found < limit:
        x, y, where = stack.pop()
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            for key in reversed(sorted(set(x) | set(y), key=str)):
                stack.append((x.get(key, _MISSING), y.get(key, _MISSING), f"{where}.{key}"))
            continue
        if isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                found += 1
                yield where, f"{len(x)} items", f"{len(y)} items"
            for index in reversed(range(min(len(x), len(y)))):
                stack.append((x[index], y[index], f"{where}[{index}]"))
            continue
        found += 1
        yield where, x, y


def _unified(a: Any, b: Any, label: str, limit: int = 80) -> list[str]:
    left = pretty(a).splitlines()
    right = pretty(b).splitlines()
    # pretty() is inert already, so every diff line is too.
    lines = list(difflib.unified_diff(left, right, f"A {label}", f"B {label}", n=2, lineterm=""))
    if len(lines) > limit:
        lines = [*lines[:limit], f"… ({len(lines) - limit} more diff lines)"]
    return lines


__all__ = ["CHANGED", "DELETED", "EQUAL", "INSERTED", "DiffEntry", "TraceDiff", "diff_traces", "render_text"]
