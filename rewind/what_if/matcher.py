"""``WhatIfMatcher``: the replay matcher that serves a changed step.

Edit-and-continue and fault injection are not a second replay engine: they are this
matcher on the ordinary replay path (``ReplaySpanProcessor``). It wraps a positional
matcher (``strict`` or ``ordered``), keeps its own position in the recording, and at
the changed step serves a replacement event instead of the recorded one. The
instrumentor revives the replacement exactly like a recorded event, so the agent gets
the SDK's own response types and exception classes.

Two kinds of change:

* an **edit** replaces the step: the recorded step is used up, the next call is
  matched against the step after it;
* a **fault** is served once in front of the step: the recorded step stays next, so an
  agent that retries the same request is answered from the recording; an agent that
  moves on instead (a failed tool reported to the model) is matched against the step
  after it.

Where the run goes after the change depends on how the matcher is driven:

* in a plain replay (``match``) every later call must match the recording, else the
  replay diverges (a fault run offline);
* in a fork (``serve_prefix``) ``then="live"`` sends every call after the change live,
  ``then="replay"`` keeps serving recorded steps while the requests match them and
  goes live, for good, at the first that does not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewind.errors import DivergenceError
from rewind.matching.strategies import IncomingCall, Matcher
from rewind.storage.trace import Event, Trace

#: What a fork does once the changed step is served.
THEN = ("live", "replay")


@dataclass(frozen=True)
class Change:
    """What to serve at one recorded step (by index in the trace)."""

    index: int
    event: Event
    #: True for an edit (the recorded step is replaced), False for a fault (it stays next).
    replaces: bool
    label: str
    #: Served instead of ``event`` to an awaited call, where the SDK's async client fails
    #: with other classes (``None``: ``event`` either way).
    async_event: Event | None = None

    def event_for_call(self, call: IncomingCall) -> Event:
        """``async_event`` for a call the agent awaits, else ``event``. A hook that does not
        say which it is (``call.is_async`` is ``None``) is taken to be async when it runs
        in an asyncio task."""
        if self.async_event is None:
            return self.event
        awaited = call.is_async
        if awaited is None:
            awaited = _in_a_task()
        return self.async_event if awaited else self.event


def _in_a_task() -> bool:
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no running event loop in this thread
        return False


class WhatIfMatcher:
    """Serve ``changes`` in place of recorded steps; everything else as ``inner`` would."""

    positional = False

    def __init__(self, inner: Matcher, changes: Mapping[int, Change], *, then: str = "replay") -> None:
        if not getattr(inner, "positional", False):
            raise ValueError(
                f"edits and faults need a positional match strategy ('strict' or 'ordered'), not {inner!r}"
            )
        if then not in THEN:
            raise ValueError(f"then= must be one of {', '.join(repr(t) for t in THEN)}, not {then!r}")
        self.inner = inner
        self.changes = dict(changes)
        self.then = then
        self._pos = 0
        self._pending: set[int] = set()
        #: The step whose fault was just served, until the agent retries it or moves past it.
        self._faulted: int | None = None
        self._live = False
        #: Index of the recorded step where the run went live (``None`` while it replays).
        self.live_from: int | None = None
        #: Why it went live there, when a request stopped matching the recording.
        self.divergence: DivergenceError | None = None
        #: The changes served so far, in order (their labels).
        self.served_changes: list[str] = []

    def start(self, trace: Trace) -> None:
        for index in self.changes:
            if not 0 <= index < len(trace.events):
                raise ValueError(f"no step at index {index} in {trace.path or 'the trace'} ({len(trace.events)} steps)")
        self.inner.start(trace)
        self._pos = 0
        self._pending = set(self.changes)
        self._faulted = None
        self._live = False
        self.live_from = None
        self.divergence = None
        self.served_changes = []

    # -- a plain replay: every call is answered from the recording (or diverges) --------
    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        event = self._next(call, trace, may_go_live=False)
        assert event is not None
        return event

    # -- a fork: the processor asks for every call; None makes it live --------------------
    def serve_prefix(
        self, cursor: int, kind: str, name: str, fp: str, request: Any, trace: Trace, limit: int
    ) -> Event | None:
        return self.serve_prefix_call(cursor, IncomingCall(kind, name, fp, request, request), trace, limit)

    def serve_prefix_call(self, cursor: int, call: IncomingCall, trace: Trace, limit: int) -> Event | None:
        """``serve_prefix`` given the whole incoming call (which a fault needs: is it awaited?)."""
        # The fork's own limit is the step after the last change; with then="replay" this
        # matcher goes on serving later recorded steps that still match, which is why it
        # keeps its own position instead of stopping at ``limit``.
        if self._live:
            return None
        if not self._pending and self.then == "live":
            return self._go_live()
        return self._next(call, trace, may_go_live=not self._pending)

    def _next(self, call: IncomingCall, trace: Trace, *, may_go_live: bool) -> Event | None:
        index = self._pos
        if index >= len(trace.events) and may_go_live:
            return self._go_live()
        try:
            recorded = self.inner.match(index, call, trace)
        except DivergenceError as error:
            moved_on = self._past_fault(index, call, trace)
            if moved_on is not None:
                return moved_on
            if may_go_live:
                self.divergence = error
                return self._go_live()
            raise
        self._faulted = None
        if index in self._pending:
            self._pending.discard(index)
            change = self.changes[index]
            self.served_changes.append(change.label)
            if change.replaces:
                self._pos += 1
            else:
                self._faulted = index
            return change.event_for_call(call)
        self._pos += 1
        return recorded

    def _past_fault(self, index: int, call: IncomingCall, trace: Trace) -> Event | None:
        """After a fault the agent may not retry (a failed tool it reports and moves past):
        then the faulted step is skipped and the call is matched against the next one."""
        if self._faulted != index or index + 1 >= len(trace.events):
            return None
        try:
            recorded = self.inner.match(index + 1, call, trace)
        except DivergenceError:
            return None
        self._faulted = None
        self._pos = index + 2
        return recorded

    def _go_live(self) -> Event | None:
        """Every call from now on runs live (answers ``None``)."""
        self._live = True
        self.live_from = self._pos
        return None

    def __repr__(self) -> str:
        labels = ", ".join(change.label for change in self.changes.values())
        return f"WhatIfMatcher({self.inner!r}, [{labels}], then={self.then!r})"
