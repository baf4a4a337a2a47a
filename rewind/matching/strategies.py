"""Replay matching strategies: which recorded event answers an incoming call.

A matcher is stateful for the length of one replay: ``start`` is called when the
session opens, then ``match`` once per incoming call, under the session lock (so a
matcher needs no locking of its own, and should be quick: every call waits on it).

===========  ================================================================
``strict``   the next recorded event must be this exact call
``ordered``  serve by position; warn (``ReplayDriftWarning``) on drift
``fuzzy``    the most similar unserved call in a look-ahead window
``parallel`` serve by exact identity, order-free; duplicates first in, first out
===========  ================================================================

Writing your own: implement ``positional``, ``start`` and ``match`` (see ``Matcher``).
A matcher with ``positional = False`` chooses events out of recorded order, so the
replay cannot tell from its cursor where a fork's boundary lies; such a matcher
must also implement ``serve_prefix`` (see ``ForkableMatcher``) to be used with
``rewind.fork``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rewind.data.canonical import canonical_json
from rewind.errors import DivergenceError, FuzzyMatchWarning, ReplayDriftWarning
from rewind.storage.trace import Event, Trace

from .divergence import LONGER, divergence, later_than, most_similar
from .incoming import IncomingCall
from .similarity import get_similarity

if TYPE_CHECKING:
    from .similarity import Similarity


@runtime_checkable
class Matcher(Protocol):
    """The strategy protocol every ``match=`` value implements.

    ``positional``
        ``True`` when the matcher serves recorded events in recorded order, so that
        the replay's ``cursor`` (how many events were served) is the index of the
        next one. ``fork(at=N)`` then goes live once the cursor reaches ``N``.
        ``False`` when it may serve any recorded event; then it must also implement
        ``serve_prefix`` to work with ``fork`` (see ``ForkableMatcher``).
    ``start(trace)``
        Called once when the replay opens: reset per-replay state, build indexes.
    ``match(cursor, call, trace)``
        Return the ``Event`` from ``trace.events`` that answers ``call``, or raise
        ``DivergenceError`` (build it with ``rewind.divergence.divergence`` to get the
        explained message). ``cursor`` is how many events were served so far. Each
        returned event is marked served; returning one twice serves it twice.

    Warnings (``ReplayDriftWarning``, ``FuzzyMatchWarning``) may be emitted from
    ``match``; they surface in the agent's call.
    """

    positional: bool

    def start(self, trace: Trace) -> None:
        """Reset per-replay state for ``trace``."""

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        """Return the recorded event that answers ``call`` or raise ``DivergenceError``."""


@runtime_checkable
class ForkableMatcher(Matcher, Protocol):
    """A non-positional matcher that can serve a fork's recorded prefix.

    ``serve_prefix(cursor, kind, name, fp, request, trace, limit)`` is called
    instead of ``match`` during ``fork(at=limit)``. It returns the recorded event to
    serve, which must be one of ``trace.events[:limit]``, or ``None`` to make this
    call live. ``fp`` is the call's fingerprint (over the normalized request) and
    ``request`` the incoming request as JSON data, comparable to ``Event.request``.
    It is asked for every call of the fork, so it decides itself whether a call past
    the prefix ends replay for good (``FuzzyMatcher`` does) or whether later calls
    may still be served from the prefix (``ParallelMatcher`` does, because
    concurrent calls reach the boundary in any order). It may raise
    ``DivergenceError`` like ``match``.

    A matcher may also define ``serve_prefix_call(cursor, call, trace, limit)``, the same
    question given the ``IncomingCall`` itself (``call.is_async`` included); the fork
    asks that one when it exists.
    """

    def serve_prefix(
        self, cursor: int, kind: str, name: str, fp: str, request: Any, trace: Trace, limit: int
    ) -> Event | None:
        """The prefix event answering this call, or ``None`` to go live."""


def next_if_same(events: Sequence[Event], cursor: int, call: Any) -> Event | None:
    """The event at ``cursor`` when it is ``call`` (same fingerprint, name and kind), else ``None``.

    ``call`` is anything with those three attributes: the replay's strict path passes the
    intercepted call itself, and builds an ``IncomingCall`` only when this says no."""
    if cursor < len(events):
        expected = events[cursor]
        if expected.fingerprint == call.fingerprint and expected.name == call.name and expected.kind == call.kind:
            return expected
    return None


class StrictMatcher:
    """The next recorded event must be this exact call: same kind, name and fingerprint."""

    positional = True

    def start(self, trace: Trace) -> None:
        pass

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        events = trace.events
        expected = next_if_same(events, cursor, call)
        if expected is not None:
            return expected

        if cursor >= len(events):
            raise divergence(trace, cursor, call, None, unserved=later_than(cursor - 1))
        raise divergence(trace, cursor, call, events[cursor], unserved=later_than(cursor))

    def __repr__(self) -> str:
        return "StrictMatcher()"


class OrderedMatcher:
    """Serve by position; a drifted request is served anyway, with a warning.

    It counts what it served and how much of it drifted: a replay on which every served
    step drifted was fed another run's answers, and fails at its end unless drift is
    tolerated (``replay(tolerate_drift=True)``)."""

    positional = True

    def __init__(self) -> None:
        self.served = 0
        self.drifted = 0

    def start(self, trace: Trace) -> None:
        self.served = 0
        self.drifted = 0

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        if cursor >= len(trace.events):

            raise divergence(trace, cursor, call, None, unserved=later_than(cursor - 1))
        expected = trace.events[cursor]
        if expected.kind != call.kind:

            # Serving a tool result to a model call would be nonsense, not drift.
            raise divergence(trace, cursor, call, expected, unserved=later_than(cursor))
        self.served += 1
        if expected.name != call.name or expected.fingerprint != call.fingerprint:
            self.drifted += 1
            warn_at_caller(
                f"rewind: step {expected.seq} ({expected.kind} {expected.name!r}) was served by position "
                f"to a drifted {call.kind} call {call.name!r}; the recorded response may not fit. "
                "Use match='strict' to fail on drift instead.",
                ReplayDriftWarning,
            )
        return expected

    def drift_failure(self, path: str) -> str | None:
        """Why this replay fails for its drift (every served step drifted), or ``None``."""
        if not self.served or self.drifted < self.served:
            return None
        steps = "the one step" if self.served == 1 else f"all {self.served} steps"
        return (
            f"rewind: replay of {path} served {steps} by position to calls that did not match their "
            "recording: the program was given another run's answers. Re-record the trace with this "
            "program (rewind.record(path)), or pass tolerate_drift=True if serving drifted steps is "
            "what you want."
        )

    def __repr__(self) -> str:
        return "OrderedMatcher()"


class ParallelMatcher:
    """Serve by exact identity regardless of order; identical calls first in, first out.

    For agents whose concurrent calls finish in a different order every run. Still
    exact: a call whose kind, name and fingerprint match no unserved recorded event
    raises ``DivergenceError``.
    """

    positional = False

    def __init__(self) -> None:
        self._queues: dict[tuple[str, str, str], deque[int]] = {}
        self._served = bytearray()
        self._low = 0

    def start(self, trace: Trace) -> None:
        queues: dict[tuple[str, str, str], deque[int]] = {}
        for index, event in enumerate(trace.events):
            key = (event.kind, event.name, event.fingerprint)
            queue = queues.get(key)
            if queue is None:
                queues[key] = queue = deque()
            queue.append(index)
        self._queues = queues
        self._served = bytearray(len(trace.events))
        self._low = 0

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        queue = self._queues.get((call.kind, call.name, call.fingerprint))
        if queue:
            return self._take(queue.popleft(), trace)
        raise self._miss(cursor, call, trace)

    def take_same(self, call: Any, trace: Trace) -> Event | None:
        """The first unserved event with ``call``'s kind, name and fingerprint, taken, or
        ``None`` (then ``match`` says why). ``call`` is anything with those three
        attributes: a hybrid replay passes the intercepted call and builds an
        ``IncomingCall`` only when this says no."""
        queue = self._queues.get((call.kind, call.name, call.fingerprint))
        if queue:
            return self._take(queue.popleft(), trace)
        return None

    def serve_prefix(
        self, cursor: int, kind: str, name: str, fp: str, request: Any, trace: Trace, limit: int
    ) -> Event | None:
        # No latch: concurrent calls cross the fork point in any order, so a prefix
        # call arriving after a live one must still be served from the recording.
        queue = self._queues.get((kind, name, fp))
        if queue and queue[0] < limit:
            return self._take(queue.popleft(), trace)
        return None

    def _take(self, index: int, trace: Trace) -> Event:
        self._served[index] = 1
        return trace.events[index]

    def _unserved(self, index: int) -> bool:
        return not self._served[index]

    def _miss(self, cursor: int, call: IncomingCall, trace: Trace) -> DivergenceError:

        events = trace.events
        while self._low < len(events) and self._served[self._low]:
            self._low += 1
        if (call.kind, call.name, call.fingerprint) in self._queues:
            count = sum(
                1
                for e in events
                if e.fingerprint == call.fingerprint and e.name == call.name and e.kind == call.kind
            )
            return divergence(
                trace,
                cursor,
                call,
                None,
                LONGER,
                unserved=self._unserved,
                note=f"this exact call was recorded {count} time(s) and every one was already served",
            )
        if self._low >= len(events):
            return divergence(trace, cursor, call, None, unserved=self._unserved)
        same = [i for i in range(self._low, len(events)) if not self._served[i] and events[i].kind == call.kind]
        named = [i for i in same if events[i].name == call.name] or same
        expected = events[most_similar(call.request, named, trace)] if named else events[self._low]
        return divergence(
            trace,
            cursor,
            call,
            expected,
            unserved=self._unserved,
            note="parallel matching serves only exact calls; this one matches no unserved recorded call",
        )

    def __repr__(self) -> str:
        return "ParallelMatcher()"


class FuzzyMatcher:
    """Serve the most similar unserved recorded call near the replay's position.

    Candidates must have the call's kind and name. The search looks ``window``
    recorded steps ahead of the last step served, plus steps it passed over within
    the last ``window`` positions (so two swapped calls are both found); it never
    returns to a served step. An exact fingerprint wins outright; otherwise the
    highest ``similarity`` wins if it reaches ``threshold``, else the replay diverges.
    Approximate or out-of-position matches emit ``FuzzyMatchWarning``; steps passed
    over and never served are reported at the end like any unconsumed step.

    ``similarity`` defaults to the backend installed with ``rewind.set_similarity``
    (``lexical_similarity`` unless changed), looked up at each call.
    """

    positional = False

    def __init__(self, threshold: float = 0.6, window: int = 8, *, similarity: Similarity | None = None) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
            raise ValueError(f"FuzzyMatcher(threshold=...) must be a number in [0, 1], not {threshold!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"FuzzyMatcher(window=...) must be a whole number of steps >= 1, not {window!r}")
        if similarity is not None and not callable(similarity):
            raise TypeError(f"FuzzyMatcher(similarity=...) must be a callable (a, b) -> float, not {similarity!r}")
        self.threshold = float(threshold)
        self.window = window
        self.similarity = similarity
        self._served = bytearray()
        self._texts: dict[int, str] = {}
        self._top = -1
        self._low = 0
        self._live = False

    def start(self, trace: Trace) -> None:
        self._served = bytearray(len(trace.events))
        self._texts = {}
        self._top = -1
        self._low = 0
        self._live = False

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        return self._serve(cursor, call, trace, len(trace.events), go_live=False)  # type: ignore[return-value]

    def serve_prefix(
        self, cursor: int, kind: str, name: str, fp: str, request: Any, trace: Trace, limit: int
    ) -> Event | None:
        if self._live:
            return None
        call = IncomingCall(kind, name, fp, request, request)
        return self._serve(cursor, call, trace, min(limit, len(trace.events)), go_live=True)

    # -- the search ---------------------------------------------------------------
    def _serve(self, cursor: int, call: IncomingCall, trace: Trace, limit: int, *, go_live: bool) -> Event | None:
        events = trace.events
        while self._low < len(events) and self._served[self._low]:
            self._low += 1
        lo = max(self._low, self._top + 1 - self.window)
        hi = min(limit, self._top + 1 + self.window)
        exact = -1
        same: list[int] = []
        for index in range(lo, hi):
            if self._served[index]:
                continue
            event = events[index]
            if event.kind != call.kind or event.name != call.name:
                continue
            if event.fingerprint == call.fingerprint:
                exact = index
                break
            same.append(index)
        if exact >= 0:
            return self._take(exact, None, trace)
        best, best_score = -1, -1.0
        if same:
            score = self.similarity or _active_similarity()
            incoming = canonical_json(call.request)
            for index in same:
                value = float(score(incoming, self._text(index, events[index])))
                if value > best_score:
                    best, best_score = index, value
        if best >= 0 and best_score >= self.threshold:
            return self._take(best, best_score, trace)
        if go_live:
            self._live = True
            return None
        raise self._miss(cursor, call, trace, lo, hi, best, best_score)

    def _text(self, index: int, event: Event) -> str:
        text = self._texts.get(index)
        if text is None:
            text = self._texts[index] = canonical_json(event.request)
        return text

    def _take(self, index: int, score: float | None, trace: Trace) -> Event:
        """Serve step ``index``; ``score`` is ``None`` for an exact match."""
        events = trace.events
        frontier = self._top + 1
        self._served[index] = 1
        self._texts.pop(index, None)
        self._top = max(self._top, index)
        # Texts of steps that fell out of reach are never needed again.
        for stale in [i for i in self._texts if i < self._top + 1 - self.window]:
            del self._texts[stale]
        event = events[index]
        # Only newly passed-over steps are news: earlier ones were reported when passed.
        passed = [events[i].seq for i in range(frontier, index) if not self._served[i]]
        behind = index < frontier
        if score is not None or passed or behind:
            parts = [f"rewind: fuzzy replay served step {event.seq} ({event.kind} {event.name!r})"]
            if score is not None:
                parts.append(
                    f"to a call that differs from the recording (similarity {score:.2f}, "
                    f"threshold {self.threshold:.2f})"
                )
            if passed:
                steps = ", ".join(str(s) for s in passed[:8]) + (" …" if len(passed) > 8 else "")
                parts.append(f"out of position, passing over unserved step(s) {steps}")
            if behind:
                parts.append("out of position, going back to a step passed over earlier")
            parts[-1] += "."
            parts.append("Use match='strict' to fail on any difference instead.")
            warn_at_caller(" ".join(parts), FuzzyMatchWarning)
        return event

    def _miss(
        self,
        cursor: int,
        call: IncomingCall,
        trace: Trace,
        lo: int,
        hi: int,
        best: int,
        best_score: float,
    ) -> DivergenceError:

        events = trace.events
        served = self._served

        def unserved(index: int) -> bool:
            return not served[index]

        # The step a positional replay would have served: the first unserved one at the
        # frontier, else the first unserved one passed over.
        open_steps = [i for i in range(lo, hi) if not served[i]]
        ahead = [i for i in open_steps if i > self._top]
        first_open = (ahead or open_steps or [-1])[0]

        note: str | None
        if best >= 0:
            note = (
                f"fuzzy: the closest unserved {call.kind} {call.name!r} call within the window "
                f"(step {events[best].seq}) is {best_score:.0%} similar, below the threshold {self.threshold:.0%}"
            )
            return divergence(trace, cursor, call, events[best], unserved=unserved, note=note)
        if first_open < 0:
            left = [events[i].seq for i in range(self._low, len(events)) if not served[i]]
            note = None
            if left:
                steps = ", ".join(str(s) for s in left[:8]) + (" …" if len(left) > 8 else "")
                note = f"fuzzy: every step within reach was served; step(s) {steps} were passed over for good"
            return divergence(trace, cursor, call, None, unserved=unserved, note=note)
        span = f"steps {events[lo].seq}–{events[hi - 1].seq}" if hi > lo else "an empty window"
        note = (
            f"fuzzy: no unserved {call.kind} {call.name!r} call within the window ({span}); "
            "fuzzy never crosses kind or name"
        )
        return divergence(trace, cursor, call, events[first_open], unserved=unserved, note=note)

    def __repr__(self) -> str:
        return f"FuzzyMatcher(threshold={self.threshold}, window={self.window})"


_internal_dirs: tuple[str, ...] | None = None


def _internal() -> tuple[str, ...]:
    global _internal_dirs
    if _internal_dirs is None:
        dirs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # all of rewind/
        for module in ("rewind.instrumentors", "rewind.exporters", "opentelemetry.trace", "wrapt"):
            found = sys.modules.get(module)
            path = getattr(found, "__file__", None)
            if path:
                folder = os.path.dirname(os.path.abspath(path))
                # opentelemetry is a namespace package: cover api and sdk alike.
                dirs.append(os.path.dirname(folder) if module == "opentelemetry.trace" else folder)
        _internal_dirs = tuple(d + os.sep for d in dirs)
    return _internal_dirs


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """Warn at the agent's line: the first frame outside rewind and OpenTelemetry.

    Matchers run deep inside span creation, so a fixed ``stacklevel`` would point
    at library internals.
    """
    frame = sys._getframe(1)
    level = 2  # stacklevel 1 is this function, 2 its caller
    internal = _internal()
    while frame is not None and frame.f_code.co_filename.startswith(internal):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _active_similarity() -> Similarity:
    return get_similarity()
