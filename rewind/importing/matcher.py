"""``TelemetryMatcher``: replay of an imported trace, comparing what telemetry carries.

Positional like ``strict``. A recorded step answers the call at its position when the
fingerprints are equal (a lossless import: rewind's own spans, OpenInference's
``input.value``), or, for an imported step, when the call's projection (``compare``)
equals the step's: model, messages, tool calls and results, tools when the telemetry
had them. A miss is a ``DivergenceError`` explained like any other, naming the first
difference. A step the import could not recover (content missing, truncated) is never
served: the replay stops there and says why.

``replay()`` picks this matcher by itself for an imported trace when ``match`` is left
at ``strict`` (or given as ``"telemetry"``).
"""

from __future__ import annotations

from typing import Any

from rewind.errors import DivergenceError
from rewind.matching import IncomingCall
from rewind.matching.divergence import CONTENT, TOOLS, divergence, later_than
from rewind.storage.trace import Event, Trace

from .build import IMPORTED
from .compare import first_difference, projection

UNSERVABLE = "imported step not replayable"


class TelemetryMatcher:
    """Serve imported steps in order, compared on what their telemetry carried."""

    positional = True

    def start(self, trace: Trace) -> None:
        pass

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        events = trace.events
        if cursor >= len(events):
            raise divergence(trace, cursor, call, None, unserved=later_than(cursor - 1))
        expected = events[cursor]
        imported = expected.get(IMPORTED)
        exact = expected.fingerprint == call.fingerprint and expected.kind == call.kind
        if not isinstance(imported, dict):
            if exact and expected.name == call.name:
                return expected
            raise divergence(trace, cursor, call, expected, unserved=later_than(cursor))
        blocking = [p for p in imported.get("problems") or [] if isinstance(p, dict) and p.get("blocking", True)]
        if blocking:
            raise _unservable(expected, call, blocking)
        if exact and _same_name(expected, call):
            return expected
        if expected.kind != call.kind or not _same_name(expected, call):
            raise divergence(trace, cursor, call, expected, unserved=later_than(cursor))
        compare_tools = bool(imported.get("tools_known", True))
        recorded_view = projection(expected.kind, expected.request, tools=compare_tools)
        incoming_view = projection(call.kind, call.request, tools=compare_tools)
        difference = first_difference(recorded_view, incoming_view)
        if difference is None:
            return expected
        note = (
            f"imported from {imported.get('layout')} telemetry (span {imported.get('span_id')}): compared on what "
            f"telemetry carries (the diff below), the first difference is at {difference}"
        )
        # Diff the views that were compared, not the raw requests: an imported request never
        # has the SDK's transport fields and defaults, and listing those would hide the change.
        view = IncomingCall(call.kind, call.name, call.fingerprint, incoming_view, incoming_view)
        reason = TOOLS if difference.startswith("tools") else CONTENT
        raise divergence(
            trace, cursor, view, expected.copy(request=recorded_view), reason, unserved=later_than(cursor), note=note
        )

    def __repr__(self) -> str:
        return "TelemetryMatcher()"


def _same_name(expected: Event, call: IncomingCall) -> bool:
    if expected.name == call.name:
        return True
    # A tool span names the tool; a decorated function records its qualified name.
    return expected.kind != "llm" and call.name.rsplit(".", 1)[-1] == expected.name


def _unservable(expected: Event, call: IncomingCall, problems: list[dict[str, Any]]) -> DivergenceError:
    reasons = "; ".join(f"{p.get('code')}: {p.get('detail')}" for p in problems)
    text = (
        f"rewind: replay stopped at step {expected.seq}: {UNSERVABLE}\n"
        f"  recorded step {expected.seq}: {expected.kind} {expected.name!r} (imported from telemetry)\n"
        f"  incoming call: {call.kind} {call.name!r}\n"
        f"  why: {reasons}\n"
        "  hint: the telemetry did not carry this step whole, so it is never served. Turn on content capture "
        "and raise the attribute limits where the run was recorded (docs/importing.md), or fork the trace "
        f"at {expected.seq} to run the rest live."
    )
    got = {"kind": call.kind, "name": call.name, "fingerprint": call.fingerprint, "request": call.request}
    return DivergenceError(text, step=expected.seq, reason=UNSERVABLE, expected=expected, got=got, diff="", hint="")
