"""Explaining a replay miss: which step, what differs, why, and what to do.

Every ``DivergenceError`` is built here so the explanation is the same whichever
matcher raised it: a classified reason, a unified diff of recorded vs incoming
request in readable JSON, a fix hint and the nearest recorded candidate.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from rewind.data.canonical import canonical_json
from rewind.data.dialect import translate
from rewind.data.escape import inert
from rewind.data.function_names import same_function
from rewind.errors import DivergenceError, RewindError
from rewind.storage.trace import Event, Trace

from .incoming import IncomingCall
from .similarity import lexical_similarity

LONGER = "run longer than the recording"
KIND = "call kind mismatch"
NAME = "call name mismatch"
ORDER = "order drift"
VOLATILE = "volatile field"
TOOLS = "tool-schema drift"
CONTENT = "prompt/content drift"

#: Below this lexical similarity to the recorded step and to every recorded step near it,
#: a miss is not drift but a trace recorded by another program (or another run of a very
#: different task): two versions of one agent's request share most of their text (a
#: changed prompt in an otherwise equal chat request still scores above 0.5), two
#: unrelated agents share little more than the JSON keys of their SDK (0.1-0.25).
#: Loosening the match would serve that other run's answers, so the hint says re-record.
FOREIGN_BELOW = 0.35

_HINTS = {
    LONGER: "the agent made more calls than were recorded. Re-record the run, or use "
    "rewind.fork(path, at={steps}) to extend it live.",
    KIND: "the agent now makes a different kind of call at this step. The code path changed: "
    "re-record, or replay with match='fuzzy' to skip over the change.",
    NAME: "the agent now calls a different function at this step. If it was renamed, pass "
    "name='<old name>' to the decorator; otherwise re-record.",
    ORDER: "this exact call was recorded at another step: the calls completed in a different "
    "order. Replay with match='parallel' to serve by identity regardless of order.",
    VOLATILE: "only values that change every run (a timestamp, uuid or random id) differ. Pass "
    "normalize=fn to record() and replay() to drop them from the call's identity.",
    TOOLS: "the tool definitions sent to the model changed. Re-record the run, or replay with "
    "match='ordered' to serve by position while you iterate.",
    CONTENT: "the request content changed (prompt, messages or arguments). If that is intended, "
    "re-record; replay with match='fuzzy' or match='ordered' to tolerate it.",
}

#: The hint for a content miss so unlike the recording that loosening the match would
#: serve another run's answers (the reason stays what changed: the request content).
FOREIGN_HINT = (
    "the incoming call is at most {closeness} similar to the recorded steps around this one, "
    "so this trace looks like the recording of another program or of a very different run. Re-record it "
    "with this program (rewind.record(path)); a looser match (fuzzy, ordered) would serve that other "
    "run's answers."
)

_VOLATILE_VALUE = re.compile(
    r"""^(
        [0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}   # uuid
      | \d{4}-\d{2}-\d{2}[T\s]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?      # iso time
      | \d{9,13}(\.\d+)?                                                              # epoch
      | [0-9a-fA-F]{16,}                                                              # hex id
      | [A-Za-z]+[_-][A-Za-z0-9]{12,}                                                 # prefixed id
    )$""",
    re.VERBOSE,
)
_VOLATILE_INSIDE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?"
    r"|\b\d{10,13}(\.\d+)?\b"
)
_TOOL_KEYS = {"tools", "functions", "tool_choice", "function_call", "parallel_tool_calls"}
_MAX_DIFF_LINES = 60
_LONG = 160
_NEAREST_SCAN = 200


Unserved = Callable[[int], bool]


def later_than(index: int) -> Unserved:
    """For positional matchers: every step after ``index`` is still unserved."""

    def unserved(candidate: int) -> bool:
        return candidate > index

    return unserved


def divergence(
    trace: Trace,
    cursor: int,
    call: IncomingCall,
    expected: Event | None,
    reason: str | None = None,
    *,
    unserved: Unserved | None = None,
    note: str | None = None,
) -> DivergenceError:
    """Build the explained error for ``call`` missing ``expected`` at ``cursor``.

    ``expected`` is the recorded event the call was compared with (``None`` past the
    end of the trace). ``unserved(index)`` tells which trace positions may still be
    served, so the error can spot a call recorded at another step (order drift) and
    point at the nearest candidate the replay could still use. ``note`` is a line
    from the matcher about why nothing fit.
    """
    step = expected.seq if expected is not None else _step_past_end(trace, cursor)
    if reason is None:
        reason = classify(trace, cursor, call, expected, unserved=unserved)
    diff = ""
    changed: list[str] = []
    if expected is not None and expected.kind == call.kind:
        # Recorded text is shown inert: the message reaches terminals (tracebacks, rewind replay).
        diff = inert(request_diff(expected.request, call.request, step), keep_newlines=True)
        changed = [_path_text(path) for path, _, _ in _changed_paths(expected.request, call.request, ())]
    nearest = nearest_candidate(trace, call, exclude=expected, unserved=unserved, around=cursor)
    # Only a content miss suggests loosening the match; a kind, name or order miss does not.
    closeness = _closeness(expected, call, nearest) if reason == CONTENT and expected is not None else 1.0
    foreign = closeness < FOREIGN_BELOW
    template = FOREIGN_HINT if foreign else _HINTS.get(reason, "").replace("{steps}", str(len(trace.events)))
    # In the words of the entry point that opened the session (--match, REWIND_MATCH, match=).
    hint = translate(template.replace("{closeness}", f"{closeness:.0%}"))
    lines = [f"rewind: replay diverged at step {step}: {reason}"]
    if expected is not None:
        lines.append(f"  recorded step {step}: {expected.kind} {expected.name!r}")
    else:
        count = len(trace.events)
        lines.append(f"  recorded: nothing left to serve (the trace has {count} {'step' if count == 1 else 'steps'})")
    lines.append(f"  incoming call: {call.kind} {call.name!r}")
    other = _recorded_by_another(expected, call)
    if other is not None:
        lines.append(
            f"  recorded by: {other}, not {call.function}: two functions record under the name {call.name!r} "
            "(give each its own name= if they are not one function renamed)"
        )
    if note:
        lines.append(f"  {note}")
    if diff:
        if changed:
            more = f" (+{len(changed) - 4} more)" if len(changed) > 4 else ""
            lines.append(f"  changed at: {', '.join(changed[:4])}{more}")
        lines.append("  request diff (recorded -> incoming):")
        lines.extend("    " + line for line in diff.splitlines())
    elif expected is not None and expected.kind != call.kind:
        lines.append(f"  incoming request: {_preview(call.request)}")
    if hint:
        lines.append(f"  hint: {hint}")
    if nearest is not None:
        event, score = nearest
        lines.append(
            f"  nearest recorded candidate: step {event.seq} ({event.kind} {event.name!r}, {score:.0%} similar)"
        )
    got = {"kind": call.kind, "name": call.name, "fingerprint": call.fingerprint, "request": call.request}
    text = inert("\n".join(lines), keep_newlines=True)
    return DivergenceError(text, step=step, reason=reason, expected=expected, got=got, diff=diff, hint=hint)


def _recorded_by_another(expected: Event | None, call: IncomingCall) -> str | None:
    """The function that recorded ``expected``, when it is not the one calling now."""
    if expected is None or call.function is None or expected.name != call.name:
        return None
    try:
        recorded = expected.get("function")
    except RewindError:  # a damaged line: the report goes on without this detail
        return None
    return recorded if isinstance(recorded, str) and not same_function(recorded, call.function) else None


def _closeness(expected: Event, call: IncomingCall, nearest: tuple[Event, float] | None) -> float:
    """How like the recording the call is: its similarity to the step it missed or to the
    nearest recorded candidate, whichever is higher."""
    score = lexical_similarity(canonical_json(expected.request), canonical_json(call.request))
    return max(score, nearest[1] if nearest is not None else 0.0)


def _step_past_end(trace: Trace, cursor: int) -> int:
    events = trace.events
    if events and cursor >= len(events):
        return max(cursor, events[-1].seq + 1)
    return cursor


def _preview(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"…({len(text) - limit} more chars)"


def classify(
    trace: Trace, cursor: int, call: IncomingCall, expected: Event | None, *, unserved: Unserved | None = None
) -> str:
    """The cause of a miss, one of the reason constants of this module."""
    if expected is None:
        return LONGER
    if _recorded_elsewhere(trace, call, expected, unserved):
        return ORDER
    if expected.kind != call.kind:
        return KIND
    if expected.name != call.name:
        return NAME
    changed = list(_changed_paths(expected.request, call.request, ()))
    if changed and all(path and path[0] in _TOOL_KEYS for path, _, _ in changed):
        return TOOLS
    if changed and all(_is_volatile(a, b) for _, a, b in changed):
        return VOLATILE
    return CONTENT


def _recorded_elsewhere(trace: Trace, call: IncomingCall, expected: Event, unserved: Unserved | None) -> bool:
    for index, event in enumerate(trace.events):
        if (
            event is not expected
            and event.fingerprint == call.fingerprint
            and event.kind == call.kind
            and event.name == call.name
            and (unserved is None or unserved(index))
        ):
            return True
    return False


def _changed_paths(a: Any, b: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            yield from _changed_paths(a.get(key), b.get(key), (*path, key))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            yield from _changed_paths(x, y, (*path, index))
    elif a != b:
        yield path, a, b


def _path_text(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the whole request)"


def _is_volatile(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a) >= 1e9 and abs(b) >= 1e9  # epoch seconds or milliseconds
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if _VOLATILE_VALUE.match(a) and _VOLATILE_VALUE.match(b):
        return True
    # A volatile token embedded in text: identical once the tokens are masked.
    masked_a, count_a = _VOLATILE_INSIDE.subn("<v>", a)
    masked_b, count_b = _VOLATILE_INSIDE.subn("<v>", b)
    return count_a > 0 and masked_a == masked_b and count_a == count_b


def request_diff(recorded: Any, incoming: Any, step: int) -> str:
    """A unified diff of two requests as indented JSON, long strings elided around the change."""
    left, right = _elide_pair(recorded, incoming)
    a = json.dumps(left, indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines()
    b = json.dumps(right, indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines()
    lines = list(difflib.unified_diff(a, b, f"recorded step {step}", "incoming call", n=2, lineterm=""))
    if len(lines) > _MAX_DIFF_LINES:
        hidden = len(lines) - _MAX_DIFF_LINES
        lines = [*lines[:_MAX_DIFF_LINES], f"... ({hidden} more diff lines)"]
    return "\n".join(lines)


def _elide_pair(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        out_a: dict[str, Any] = {}
        out_b: dict[str, Any] = {}
        for key in keys:
            if key in a and key in b:
                out_a[key], out_b[key] = _elide_pair(a[key], b[key])
            elif key in a:
                out_a[key] = _elide_one(a[key])
            else:
                out_b[key] = _elide_one(b[key])
        return out_a, out_b
    if isinstance(a, list) and isinstance(b, list):
        pairs = [_elide_pair(x, y) for x, y in zip(a, b)]
        la = [p[0] for p in pairs] + [_elide_one(x) for x in a[len(b):]]
        lb = [p[1] for p in pairs] + [_elide_one(y) for y in b[len(a):]]
        return la, lb
    if isinstance(a, str) and isinstance(b, str) and a != b and max(len(a), len(b)) > _LONG:
        return _around_change(a, b)
    return _elide_one(a) if a == b else a, _elide_one(b) if a == b else b


def _elide_one(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _LONG:
        return f"{value[:60]}…({len(value) - 60} more chars)"
    if isinstance(value, dict):
        return {k: _elide_one(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_elide_one(v) for v in value]
    return value


def _around_change(a: str, b: str, keep: int = 40) -> tuple[str, str]:
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1

    def cut(s: str) -> str:
        start = max(0, prefix - keep)
        end = len(s) - max(0, suffix - keep)
        head = f"…({start} chars)" if start else ""
        tail = f"…({len(s) - end} chars)" if end < len(s) else ""
        return head + s[start:end] + tail

    return cut(a), cut(b)


def most_similar(request: Any, indices: list[int], trace: Trace) -> int:
    """The index among ``indices`` whose recorded request is most like ``request``."""
    target = canonical_json(request)
    best, best_score = indices[0], -1.0
    for index in indices[:_NEAREST_SCAN]:
        score = lexical_similarity(target, canonical_json(trace.events[index].request))
        if score > best_score:
            best, best_score = index, score
    return best


def nearest_candidate(
    trace: Trace,
    call: IncomingCall,
    *,
    exclude: Event | None,
    unserved: Unserved | None = None,
    around: int = 0,
) -> tuple[Event, float] | None:
    """The recorded event most similar to ``call`` (same kind), for orientation.

    Only steps that could still be served count, searched outward from ``around``
    and bounded, so a miss on a huge trace stays cheap.
    """
    events = trace.events
    target = canonical_json(call.request)
    best: tuple[Event, float] | None = None
    scanned = 0
    for index in _outward(around, len(events)):
        event = events[index]
        if event is exclude or event.kind != call.kind or (unserved is not None and not unserved(index)):
            continue
        scanned += 1
        if scanned > _NEAREST_SCAN:
            break
        score = lexical_similarity(target, canonical_json(event.request))
        if event.name != call.name:
            score *= 0.5  # another function: a weak hint at best
        if best is None or score > best[1]:
            best = (event, score)
    return best


def _outward(center: int, size: int) -> Iterator[int]:
    center = min(max(center, 0), max(size - 1, 0))
    for distance in range(size):
        if distance == 0:
            if center < size:
                yield center
            continue
        if center + distance < size:
            yield center + distance
        if center - distance >= 0:
            yield center - distance
        if center + distance >= size and center - distance < 0:
            return
