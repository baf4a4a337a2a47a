"""``ReplaySpanProcessor``: serves recorded events to replaying calls as their spans start.

It owns the replay state of one session (the trace, the matcher, the cursor, which
events were served) and decides, under the session lock, what answers each incoming
call: a recorded event, a ``DivergenceError``, or, past a fork point, the live call.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .errors import DivergenceError
from .matching import IncomingCall, Matcher, StrictMatcher, next_if_same
from .telemetry import STARTING
from .trace import Event, Trace

if TYPE_CHECKING:
    from .core import Call


class ReplaySpanProcessor(SpanProcessor):
    """Picks the recorded event for each call of one replay or fork session."""

    def __init__(self, trace: Trace, matcher: Matcher, lock: threading.Lock, *, fork_at: int | None = None) -> None:
        self.trace = trace
        self.matcher = matcher
        self.fork_at = fork_at
        self.cursor = 0
        self.served: set[int] = set()
        #: True once any call of a fork went live.
        self.went_live = False
        self._lock = lock
        self._positional = bool(getattr(matcher, "positional", True))
        #: Strict matching serves the next step when it is the same call: checked on the
        #: call itself, before building what a matcher is given (the common case of a replay).
        self._strict = type(matcher) is StrictMatcher
        self._serve_prefix: Any = None
        self._serve_prefix_call: Any = None
        if fork_at is not None:
            if fork_at > len(trace.events):
                raise ValueError(
                    f"fork(at={fork_at}) is past the end of {trace.path or 'the trace'}, which has "
                    f"{len(trace.events)} steps; at={len(trace.events)} extends the finished run"
                )
            if not self._positional:
                self._serve_prefix = getattr(matcher, "serve_prefix", None)
                self._serve_prefix_call = _prefix_call(matcher)
                if not callable(self._serve_prefix):
                    raise TypeError(
                        f"{type(matcher).__name__} declares positional = False but has no serve_prefix(); "
                        "fork() needs it to know which recorded steps lie before the fork point"
                    )
        matcher.start(trace)

    # -- SpanProcessor ----------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        call = STARTING.get()
        if call is not None and not call.decided:
            self.serve(call)

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # -- the decision -----------------------------------------------------------
    def serve(self, call: Call) -> None:
        """Decide what answers ``call``: sets ``call.served``, ``call.divergence`` or a live seq."""
        with self._lock:
            if call.decided:
                return
            call.decided = True
            event = self._next_if_same(call) if self._strict else None
            if event is None:
                try:
                    event = self._pick(IncomingCall.of(call))
                except DivergenceError as error:
                    call.divergence = error
                    return
            if event is None:
                self.went_live = True
                call.seq = call.session.reserve_seq_locked()
                return
            self.served.add(event.seq)
            self.cursor += 1
            call.served = event
            call.seq = event.seq
            call.session.note_served_locked(event)
        # Outside the lock: a fork copies each served step into the trace it saves.
        call.session.keep_served(event)

    def _next_if_same(self, call: Call) -> Event | None:
        if self.fork_at is not None and self.cursor >= self.fork_at:
            return None
        return next_if_same(self.trace.events, self.cursor, call)

    def _pick(self, incoming: IncomingCall) -> Event | None:
        if self.fork_at is None:
            return self.matcher.match(self.cursor, incoming, self.trace)
        if self._positional:
            # Positional matchers serve in recorded order: the cursor is the boundary.
            if self.cursor >= self.fork_at:
                return None
            return self.matcher.match(self.cursor, incoming, self.trace)
        # Out-of-order matchers decide per call which prefix step (if any) answers it.
        if self._serve_prefix_call is not None:
            return self._serve_prefix_call(self.cursor, incoming, self.trace, self.fork_at)
        return self._serve_prefix(
            self.cursor,
            incoming.kind,
            incoming.name,
            incoming.fingerprint,
            incoming.request,
            self.trace,
            self.fork_at,
        )

    def unconsumed(self) -> list[Event]:
        """Recorded events never served (before the fork point, for a fork)."""
        events = self.trace.events
        if self.fork_at is not None:
            events = events[: self.fork_at]
        return [event for event in events if event.seq not in self.served]


def _prefix_call(matcher: Any) -> Any:
    """The matcher's ``serve_prefix_call``, unless a subclass overrides ``serve_prefix`` alone
    (its own answer must not be bypassed by the one it inherits)."""
    for klass in type(matcher).__mro__:
        defined = vars(klass)
        if "serve_prefix_call" in defined:
            return getattr(matcher, "serve_prefix_call", None)
        if "serve_prefix" in defined:
            return None
    return getattr(matcher, "serve_prefix_call", None)  # set on the instance
