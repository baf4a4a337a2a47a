"""Replay matching strategies: which recorded event answers an incoming call.

A matcher is stateful for the length of one replay: ``start`` is called when the
session opens, then ``match`` once per incoming call, under the session lock.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .errors import DivergenceError, ReplayDriftWarning
from .trace import Event, Trace


@dataclass(frozen=True)
class IncomingCall:
    """What the agent is asking for, as the matcher sees it."""

    kind: str
    name: str
    fingerprint: str
    #: The request as JSON data, before normalization (what a diff should show).
    request: Any
    #: The request after ``normalize=`` (what the fingerprint covers).
    identity: Any


@runtime_checkable
class Matcher(Protocol):
    """The strategy protocol. ``positional`` matchers serve recorded events in order,
    so the session's cursor is the index of the next event to serve."""

    positional: bool

    def start(self, trace: Trace) -> None:
        """Reset per-replay state for ``trace``."""

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        """Return the recorded event that answers ``call`` or raise ``DivergenceError``."""


class StrictMatcher:
    """The next recorded event must be this exact call: same kind, name and fingerprint."""

    positional = True

    def start(self, trace: Trace) -> None:
        pass

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        from .divergence import divergence

        if cursor >= len(trace.events):
            raise divergence(trace, cursor, call, None, "run longer than the recording")
        expected = trace.events[cursor]
        if expected.kind != call.kind or expected.name != call.name or expected.fingerprint != call.fingerprint:
            raise divergence(trace, cursor, call, expected)
        return expected


class OrderedMatcher:
    """Serve by position; a drifted request is served anyway, with a warning."""

    positional = True

    def start(self, trace: Trace) -> None:
        pass

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        from .divergence import divergence

        if cursor >= len(trace.events):
            raise divergence(trace, cursor, call, None, "run longer than the recording")
        expected = trace.events[cursor]
        if expected.kind != call.kind:
            # Serving a tool result to a model call would be nonsense, not drift.
            raise divergence(trace, cursor, call, expected)
        if expected.name != call.name or expected.fingerprint != call.fingerprint:
            warnings.warn(
                f"rewind: step {expected.seq} ({expected.kind} {expected.name!r}) was served by position "
                f"to a drifted {call.kind} call {call.name!r}; the recorded response may not fit. "
                "Use match='strict' to fail on drift instead.",
                ReplayDriftWarning,
                stacklevel=2,
            )
        return expected


_BUILTIN: dict[str, type[Any]] = {"strict": StrictMatcher, "ordered": OrderedMatcher}


def register_matcher(name: str, factory: type[Any]) -> None:
    """Make ``match=name`` resolve to ``factory()``."""
    _BUILTIN[name] = factory


def resolve_matcher(match: str | Matcher) -> Matcher:
    if isinstance(match, str):
        try:
            factory = _BUILTIN[match]
        except KeyError:
            names = ", ".join(repr(n) for n in sorted(_BUILTIN))
            raise ValueError(f"unknown match strategy {match!r}; use one of {names} or a Matcher instance") from None
        return factory()
    if not hasattr(match, "match") or not hasattr(match, "positional"):
        raise TypeError(f"match= must be a strategy name or a Matcher, not {type(match).__name__}")
    return match
