"""``ReplaySpanProcessor``: serves recorded events to replaying calls as their spans start.

It owns the replay state of one session (the trace, the matcher, the cursor, which
events were served) and decides, under the session lock, what answers each incoming
call: a recorded event, a ``DivergenceError``, or, past a fork point, the live call.

A ``ReplayPolicy`` makes some calls live in a plain replay (a *hybrid* replay: the
matcher then sees only the recorded steps of the served side, so it finds them by
identity however the live side changed the run) and keeps ``never_live`` calls from
ever running: one with no recorded answer raises ``NeverLiveError`` instead.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from rewind.errors import DivergenceError, NeverLiveError
from rewind.matching.strategies import IncomingCall, Matcher, ParallelMatcher, StrictMatcher, next_if_same
from rewind.storage.trace import Event, Trace

from .telemetry import STARTING

if TYPE_CHECKING:
    from .core import Call
    from .policy import ReplayPolicy


class ReplaySpanProcessor(SpanProcessor):
    """Picks the recorded event for each call of one replay or fork session."""

    def __init__(
        self,
        trace: Trace,
        matcher: Matcher,
        lock: threading.Lock,
        *,
        fork_at: int | None = None,
        policy: ReplayPolicy | None = None,
    ) -> None:
        self.trace = trace
        self.matcher = matcher
        self.fork_at = fork_at
        self.cursor = 0
        self.served: set[int] = set()
        #: True once any call of a fork (or a hybrid replay) went live.
        self.went_live = False
        self._lock = lock
        self._positional = bool(getattr(matcher, "positional", True))
        self.policy = policy
        #: A hybrid replay: some calls run live, the rest are served (``policy.hybrid``).
        self.hybrid = policy is not None and policy.hybrid and fork_at is None
        self._guard = policy if policy is not None and policy.never_live else None
        #: What the matcher serves from: in a hybrid replay, only the served side's steps.
        self.served_side = trace
        if self.hybrid:
            assert policy is not None
            side = [event for event in trace.events if not policy.runs_live(event.kind, event.name)]
            self.served_side = Trace(side, header=trace.header, path=trace.path)
        #: Strict matching serves the next step when it is the same call: checked on the
        #: call itself, before building what a matcher is given (the common case of a replay).
        self._strict = type(matcher) is StrictMatcher and not self.hybrid
        #: Likewise a hybrid replay by identity serves a served call straight from the
        #: matcher's queues, without building an ``IncomingCall`` for it.
        self._by_identity = self.hybrid and type(matcher) is ParallelMatcher
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
        matcher.start(self.served_side)

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
            # A step served out of its recorded place (a hybrid replay, a never_live answer
            # past a fork point) takes the next step number of this run, not its recorded one.
            renumber = self.hybrid
            if self._strict:
                event = self._next_if_same(call)
            elif self._by_identity and not self.policy.runs_live(call.kind, call.name):  # type: ignore[union-attr]
                event = self.matcher.take_same(call, self.served_side)  # type: ignore[attr-defined]
            else:
                event = None
            if event is None:
                try:
                    event = self._hybrid_pick(call) if self.hybrid else self._pick(IncomingCall.of(call))
                    if event is None and self._guard is not None and self._guard.forbids(call.kind, call.name):
                        event = self._recorded_answer(call)
                        renumber = True
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
            if renumber:
                call.seq = call.session.reserve_seq_locked()
            else:
                call.seq = event.seq
                call.session.note_served_locked(event)
        # Outside the lock: a fork (or a saved hybrid run) copies each served step into the
        # trace it saves.
        call.session.keep_served(event, call.seq)

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

    def _hybrid_pick(self, call: Call) -> Event | None:
        """A hybrid replay's decision: ``None`` (live) for a call the policy runs live, else
        the served side's recorded answer, found by the matcher; a miss follows ``on_missing``."""
        policy = self.policy
        assert policy is not None
        if policy.runs_live(call.kind, call.name):
            return None
        incoming = IncomingCall.of(call)
        try:
            return self.matcher.match(self.cursor, incoming, self.served_side)
        except DivergenceError as error:
            if policy.forbids(call.kind, call.name):
                raise self._never_live(call, error) from None
            if policy.on_missing == "live":
                return None
            raise _hybrid_miss(error, policy) from None

    def _recorded_answer(self, call: Call) -> Event:
        """A never_live call about to go live: the unserved recorded step with its identity
        answers it, or the run stops here."""
        for event in self.trace.events:
            if (
                event.seq not in self.served
                and event.fingerprint == call.fingerprint
                and event.name == call.name
                and event.kind == call.kind
            ):
                return event
        raise self._never_live(call, None)

    def _never_live(self, call: Call, miss: DivergenceError | None) -> NeverLiveError:
        step = call.session.peek_seq()
        source = self.trace.path or "the trace"
        lines = [
            f"rewind: never_live: {call.kind} call {call.name!r} (step {step} of this run) must never run "
            f"for real, and {source} has no recorded answer that fits it; the call did not run.",
        ]
        if miss is not None:
            lines.append("  what the recording has instead:")
            lines.extend("    " + line for line in str(miss).splitlines()[1:])
        else:
            lines.append(
                f"  no unserved recorded {call.kind} {call.name!r} step has this call's request "
                "(fingerprint); the agent asked for something the recording never answered."
            )
        lines.append(
            "  Record a run that makes this call, or change the agent; never_live= keeps it from running live."
        )
        return NeverLiveError(
            "\n".join(lines),
            step=step,
            reason="never live",
            expected=miss.expected if miss is not None else None,
            got=f"{call.kind} {call.name!r}",
            diff=miss.diff if miss is not None else "",
        )

    def unconsumed(self) -> list[Event]:
        """Recorded events never served (before the fork point, for a fork; of the served
        side, for a hybrid replay)."""
        events = self.served_side.events
        if self.fork_at is not None:
            events = events[: self.fork_at]
        return [event for event in events if event.seq not in self.served]


def _hybrid_miss(error: DivergenceError, policy: ReplayPolicy) -> DivergenceError:
    """The matcher's divergence, saying what a hybrid replay can do about it."""
    live = ", ".join(map(str, policy.live)) or "none"
    line = (
        f"  hybrid replay (live: {live}): this call is served from the recording, which has no answer "
        "for it; on_missing='live' (--on-missing live) runs such a call live instead"
    )
    message = str(error).rstrip("\n") + "\n" + line
    return type(error)(
        message,
        step=error.step,
        reason=error.reason,
        expected=error.expected,
        got=error.got,
        diff=error.diff,
        hint=error.hint,
    )


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
