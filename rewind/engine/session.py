"""Sessions: ``record``, ``replay`` and ``fork``, and the context variable that carries them.

A session lives in a ``ContextVar``, so asyncio tasks created inside it inherit it
and unrelated tasks never see it. The session lock covers only the stateful core:
the replay decision, seq reservation and the in-memory append.
"""

from __future__ import annotations

import os
import threading
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from rewind.errors import (
    DivergenceError,
    IdentityCollisionWarning,
    RewindError,
    UnconsumedEventsWarning,
)
from rewind.exporters.rewind_file import RewindSpanExporter
from rewind.matching import Matcher, OrderedMatcher, resolve_matcher
from rewind.storage.trace import BLOBS_FORMAT_VERSION, Event, PathLike, Trace, TraceWriter, check_threshold, new_header

from . import breakpoints, context, network_guard, placeholder_keys
from .context import current_session as current_session  # rewind.session.current_session, documented
from .network_guard import check_network
from .nothing_recorded import incomplete_reason
from .replay import ReplaySpanProcessor
from .telemetry import RunSpan

if TYPE_CHECKING:
    from .core import Call
    from .policy import ReplayPolicy

Payload = Any
Redactor = Callable[[Payload], Payload]
Normalizer = Callable[[Payload], Payload]
StepCallback = Callable[[Event], Any]

# The active session and the open ones live in ``context``, a leaf the hot path reads.
ACTIVE = context.ACTIVE
_OPEN = context.OPEN


class Session:
    """An active record, replay or fork. Use it as a context manager (sync or async)."""

    def __init__(
        self,
        mode: str,
        *,
        path: PathLike,
        meta: dict[str, Any] | None = None,
        redact: Redactor | None = None,
        normalize: Normalizer | None = None,
        match: str | Matcher = "strict",
        on_step: StepCallback | None = None,
        break_at: int | None = None,
        require_full_consumption: bool = False,
        tolerate_drift: bool = False,
        fork_at: int | None = None,
        save_as: PathLike | None = None,
        externalize: int | None = None,
        network: str = "allow",
        allow_hosts: Sequence[str] = (),
        provenance: dict[str, Any] | None = None,
        policy: ReplayPolicy | None = None,
    ) -> None:
        if redact is not None and not callable(redact):
            raise TypeError(f"redact= must be a callable payload -> payload, not {type(redact).__name__}")
        if normalize is not None and not callable(normalize):
            raise TypeError(f"normalize= must be a callable payload -> payload, not {type(normalize).__name__}")
        if on_step is not None and not callable(on_step):
            raise TypeError(f"on_step= must be a callable taking an Event, not {type(on_step).__name__}")
        if meta is not None and not isinstance(meta, dict):
            raise TypeError(f"meta= must be a dict, not {type(meta).__name__}")
        self.mode = mode
        #: Names this run on every span it makes (runs recorded across a fleet are told apart by it).
        self.id = uuid.uuid4().hex
        self.path = os.fspath(path)
        self.redact = redact
        self.normalize = normalize
        self.on_step = on_step
        self.break_at = break_at
        self.require_full_consumption = require_full_consumption
        self.tolerate_drift = tolerate_drift
        self.new_events: list[Event] = []
        #: Every DivergenceError raised in this session, even ones the agent swallowed.
        self.divergences: list[DivergenceError] = []
        self.writer: TraceWriter | None = None
        self._meta = meta
        self._match = match
        self._fork_at = fork_at
        self._save_as = os.fspath(save_as) if save_as is not None else None
        self._externalize = check_threshold(externalize)
        self._network = check_network(network, allow_hosts)
        self._allow_hosts = tuple(allow_hosts)
        self._network_hold: network_guard.Hold | None = None
        self._keys_release: Callable[[], None] | None = None
        #: Credentials of this run's failed calls (``Call.credentials``), kept off the run's span.
        self.known_credentials: set[str] = set()
        #: Connections a ``network="block"`` replay refused (even ones the program swallowed).
        self.network_blocked: list[network_guard.NetworkBlockedError] = []
        #: What a what-if fork changed (an edit), kept in the saved fork's ``forked_from``.
        self._provenance = provenance
        #: What runs live in this replay or fork, and what never may (docs/hybrid.md).
        self.policy = policy
        self._lock = threading.Lock()
        self._next_seq = 0
        self._replayer: ReplaySpanProcessor | None = None
        self._export: SimpleSpanProcessor | None = None
        self._token: Token[Session | None] | None = None
        self._thread = threading.current_thread()
        self._warned_threadless = False
        self._entered = False
        self._run_span = RunSpan(None, None)
        self._owners: dict[tuple[str, str], str] = {}
        self._collided: set[tuple[str, ...]] = set()
        self.trace = Trace(path=self.path)

    # -- public state -------------------------------------------------------------
    @property
    def cursor(self) -> int:
        """How many recorded events have been served (the next position, for positional matchers)."""
        return self._replayer.cursor if self._replayer is not None else 0

    @property
    def matcher(self) -> Matcher | None:
        return self._replayer.matcher if self._replayer is not None else None

    def __repr__(self) -> str:
        return (
            f"Session(mode={self.mode!r}, path={self.path!r}, cursor={self.cursor}, new_events={len(self.new_events)})"
        )

    # -- lifecycle ----------------------------------------------------------------
    def __enter__(self) -> Session:
        if self._entered:
            raise RewindError("a rewind session can be entered only once; call record()/replay() again")
        self._entered = True
        self._open()
        self._run_span = RunSpan.open(self.mode, self.path)  # one run, one trace in a backend
        self._token = ACTIVE.set(self)
        _OPEN.add(self)
        if self.mode == "replay":
            # SDK clients refuse to be built without a key, even to be replayed (keyless CI).
            self._keys_release = placeholder_keys.hold()
        if self._network == "block":
            # Last, so nothing after it can fail and leave it installed; removed in __exit__.
            self._network_hold = network_guard.block(self.path, self._allow_hosts)
            self.network_blocked = self._network_hold.blocked
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _OPEN.discard(self)
        if self._token is not None:
            try:
                ACTIVE.reset(self._token)
            except ValueError:  # exited in another context (e.g. a different task)
                ACTIVE.set(None)
            self._token = None
        try:
            self._run_span.close(exc, self.redact, frozenset(self.known_credentials))
            self._close(keep=exc_type is None)
            if exc_type is None:
                self._check_drift()
                self._check_consumption()
        finally:
            hold, self._network_hold = self._network_hold, None
            if hold is not None:
                hold.release()
            keys, self._keys_release = self._keys_release, None
            if keys is not None:
                keys()

    async def __aenter__(self) -> Session:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def _open(self) -> None:
        if self.mode == "record":
            self.writer = TraceWriter(
                self.path, new_header(self._meta), externalize=self._externalize, release_bodies=True
            )
            self.trace = Trace(header=self.writer.header, path=self.path)
        else:
            source = Trace.open(self.path)
            incomplete = incomplete_reason(source.header)
            if incomplete is not None:
                raise RewindError(
                    f"rewind: {self.path} is incomplete: {incomplete}. It holds no step to replay; "
                    "fix the program and record it again"
                )
            self.trace = source
            self._check_break_at(source)
            matcher = resolve_matcher(self._match)
            if self._match == "strict" and isinstance(source.header.get("imported"), dict):
                # Rebuilt from telemetry: its requests are not the SDK's bytes, so it is
                # compared on what telemetry carries (rewind.importing.matcher).
                matcher = resolve_matcher("telemetry")
            self._replayer = ReplaySpanProcessor(source, matcher, self._lock, fork_at=self._fork_at, policy=self.policy)
            if self._fork_at is not None:
                # Live steps number after the whole prefix, even when an out-of-order
                # matcher goes live before every prefix step was served.
                self._next_seq = max((e.seq for e in source.events[: self._fork_at]), default=-1) + 1
            if self._save_as is not None:
                strategy = self._match if isinstance(self._match, str) else type(self._match).__name__
                origin = {"path": self.path, "created": source.header.get("created"), "match": strategy}
                if self._replayer.hybrid:
                    # Which steps ran live is the policy's rule here and each step's ``live``.
                    assert self.policy is not None
                    header = new_header(
                        self._meta if self._meta is not None else source.meta,
                        hybrid_of={**origin, **self.policy.describe()},
                    )
                else:
                    header = new_header(
                        self._meta if self._meta is not None else source.meta,
                        forked_from={**origin, "at": self._fork_at, **(self._provenance or {})},
                    )
                # A fork of a blob-externalizing trace keeps externalizing, or its
                # served prefix would inline every big payload again.
                inherited = source.header.get("externalize") if source.version >= BLOBS_FORMAT_VERSION else None
                threshold = self._externalize or inherited
                # Saved onto its own source, the fork is written beside it and renamed over it
                # at the end: truncating the file being replayed would destroy both.
                onto_source = _same_file(self._save_as, self.path)
                self.writer = TraceWriter(
                    self._save_as, header, externalize=threshold, release_bodies=True, replace_on_close=onto_source
                )
        if self.writer is not None:
            self._export = SimpleSpanProcessor(RewindSpanExporter(self.writer))

    def _check_break_at(self, source: Trace) -> None:
        if self.break_at is None or any(event.seq == self.break_at for event in source.events):
            return
        count = len(source.events)
        last = f" (steps 0-{source.events[-1].seq})" if count else ""
        raise ValueError(
            f"replay(break_at={self.break_at}) is past the end of {self.path}, which has {count} "
            f"steps{last}; no step {self.break_at} will ever be served"
        )

    def _close(self, *, keep: bool = True) -> None:
        # A fork saved onto its own source replaces it only when the block succeeded.
        if self.writer is not None:
            self.writer.close(keep=keep)

    def _check_drift(self) -> None:
        """An ordered replay that drifted on every step it served ran on another run's answers."""
        matcher = self.matcher
        if self.mode != "replay" or self.tolerate_drift or not isinstance(matcher, OrderedMatcher):
            return
        failure = matcher.drift_failure(self.path)
        if failure is not None:
            raise RewindError(failure)

    def _check_consumption(self) -> None:
        if self._replayer is None:
            return
        left = self._replayer.unconsumed()
        if not left:
            return
        steps = ", ".join(str(e.seq) for e in left[:10]) + (" …" if len(left) > 10 else "")
        noun = "step" if len(left) == 1 else "steps"
        message = (
            f"rewind: replay of {self.path} ended with {len(left)} recorded {noun} never served "
            f"({noun} {steps}); the run ended earlier than the recording or skipped steps."
        )
        if self.require_full_consumption:
            raise RewindError(message + " require_full_consumption=True makes this a failure.")
        warnings.warn(message, UnconsumedEventsWarning, stacklevel=3)

    # -- used by the interception core ------------------------------------------------
    def decide(self, call: Call) -> None:
        """Decide what answers ``call``: a recorded event (replay) or a fresh seq (live)."""
        if self._replayer is not None:
            self._replayer.serve(call)
            return
        with self._lock:
            if not call.decided:
                call.decided = True
                call.seq = self.reserve_seq_locked()

    def note_recorded_by(self, event: Event, recorded: str, owner: str) -> None:
        """Warn once per pair when a step recorded by one function is served to another
        sharing its name (the documented contract serves it: the name is the identity)."""
        key = (event.kind, event.name, recorded, owner)
        if key in self._collided:
            return
        self._collided.add(key)
        warnings.warn(
            f"rewind: step {event.seq} ({event.kind} {event.name!r}) was recorded by {recorded} and is served "
            f"to {owner}: both record under the name {event.name!r}, so a replay cannot tell them apart. Give "
            "each its own name= and re-record, if they are not the same function renamed.",
            IdentityCollisionWarning,
            stacklevel=4,
        )

    def note_owner(self, kind: str, name: str, owner: str) -> None:
        """Warn once when two different functions record under one (kind, name) in this run:
        calls of both with the same arguments would be indistinguishable at replay."""
        key = (kind, name)
        first = self._owners.setdefault(key, owner)
        if first == owner or key in self._collided:
            return
        self._collided.add(key)
        warnings.warn(
            f"rewind: {first} and {owner} both record {kind} calls named {name!r} in this {self.mode} "
            "session, so their calls with the same arguments share one identity and a replay cannot "
            "tell them apart. Give each its own name= (a name is part of a call's identity).",
            IdentityCollisionWarning,
            stacklevel=4,
        )

    def peek_seq(self) -> int:
        """The seq the next live call would take (for messages; nothing is reserved)."""
        return self._next_seq

    def reserve_seq_locked(self) -> int:
        seq = self._next_seq
        self._next_seq += 1
        return seq

    def note_served_locked(self, event: Event) -> None:
        # A fork's live suffix continues numbering after the last served step.
        if event.seq >= self._next_seq:
            self._next_seq = event.seq + 1

    def keep_served(self, event: Event, seq: int) -> None:
        """A saved fork or hybrid run holds the steps it served, marked as not live; one
        served as step ``seq`` of this run (not its recorded place) says which it was."""
        if self.writer is None or self.mode == "record":
            return
        if seq == event.seq:
            self.writer.write(event.copy(live=False))
        else:
            self.writer.write(event.copy(live=False, seq=seq, served_from=event.seq))

    def on_span_start(self, span: Span, call: Call) -> None:
        if self._replayer is not None:
            self._replayer.on_start(span)
        else:
            self.decide(call)

    def on_span_end(self, span: ReadableSpan) -> None:
        if self._export is not None:
            self._export.on_end(span)

    def discard(self, event: Event) -> None:
        """Forget a step whose line could not be written (it must never be served)."""
        with self._lock:
            for events in (self.new_events, self.trace.events if self.mode == "record" else []):
                for index in range(len(events) - 1, -1, -1):
                    if events[index] is event:
                        del events[index]
                        break

    def append(self, event: Event) -> None:
        with self._lock:
            self.new_events.append(event)
            if self.mode == "record":
                self.trace.events.append(event)

    def delivered(self, event: Event) -> None:
        """Hooks that run after the lock, once a recorded event is about to be served."""
        if self.on_step is not None:
            self.on_step(event)
        if self.break_at is not None and event.seq == self.break_at:
            # In the agent's own frame, honouring PYTHONBREAKPOINT (=0 disables, =ipdb.set_trace, …).
            breakpoints.pause(event, self.path)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def record(
    path: PathLike,
    *,
    meta: dict[str, Any] | None = None,
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
    externalize: int | None = None,
) -> Session:
    """Record a live run to ``path``, one flushed line per call.

    ``externalize`` (a byte threshold) stores every payload leaf of that size or more
    once, content-addressed, under ``<path>.blobs/`` (trace format v2).
    """
    check_threshold(externalize)  # fail on a bad threshold now, not when the session opens
    return Session("record", path=path, meta=meta, redact=redact, normalize=normalize, externalize=externalize)


def replay(
    path: PathLike,
    *,
    match: str | Matcher | None = None,
    require_full_consumption: bool = False,
    on_step: StepCallback | None = None,
    break_at: int | None = None,
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
    network: str = "allow",
    allow_hosts: Sequence[str] = (),
    live: Sequence[str] | str | None = None,
    never_live: Sequence[str] | str | None = None,
    on_missing: str = "error",
    model_map: Mapping[str, str] | None = None,
    save_as: PathLike | None = None,
    policy: ReplayPolicy | None = None,
    tolerate_drift: bool = False,
) -> Session:
    """Replay ``path`` offline: every recorded call is served from the file.

    ``network="block"`` makes offline a guarantee: while the session is open, any
    connection to a host other than loopback or ``allow_hosts`` raises
    ``NetworkBlockedError`` naming the host and the code that tried (docs/what-if.md).

    A hybrid replay (docs/hybrid.md): ``live=["llm"]`` runs those calls live and serves
    the rest by identity (``match`` defaults to ``"parallel"`` then); ``never_live`` names
    calls that must never run for real; ``on_missing="live"`` runs a served call the
    recording has no answer for; ``model_map`` rewrites the model of live LLM calls;
    ``save_as`` writes the run. ``policy=`` passes all four as one ``ReplayPolicy``.
    ``tolerate_drift=True`` lets a ``match="ordered"`` replay end well when every step it
    served drifted (by default that fails: the program ran on another run's answers).
    """
    check_network(network, allow_hosts)
    policy = session_policy(policy, live, never_live, on_missing, model_map)
    hybrid = policy is not None and policy.hybrid
    if match is None:
        match = "parallel" if hybrid else "strict"
    elif hybrid and getattr(resolve_matcher(match), "positional", False):
        raise ValueError(
            f"replay(live=...) serves the rest of the run by identity, so match= must be 'parallel' or "
            f"'fuzzy' (or a matcher with positional = False), not {match!r}: the live side shifts every position"
        )
    resolve_matcher(match)  # fail on a bad strategy name now, not at the first call
    if break_at is not None and (not isinstance(break_at, int) or isinstance(break_at, bool) or break_at < 0):
        raise ValueError(f"replay(break_at=...) must be a step number >= 0, not {break_at!r}")
    if save_as is not None and not hybrid:
        raise ValueError("replay(save_as=...) writes a hybrid run: pass live= (or use fork(at=..., save_as=...))")
    return Session(
        "replay",
        path=path,
        match=match,
        require_full_consumption=require_full_consumption,
        tolerate_drift=tolerate_drift,
        on_step=on_step,
        break_at=break_at,
        redact=redact,
        normalize=normalize,
        network=network,
        allow_hosts=allow_hosts,
        save_as=save_as,
        policy=policy,
    )


def session_policy(
    policy: ReplayPolicy | None,
    live: Sequence[str] | str | None,
    never_live: Sequence[str] | str | None,
    on_missing: str,
    model_map: Mapping[str, str] | None,
) -> ReplayPolicy | None:
    """The session's policy: ``policy=`` as given, else one built from the separate arguments."""
    from .policy import ReplayPolicy

    if policy is not None:
        if not isinstance(policy, ReplayPolicy):
            raise TypeError(f"policy= must be a rewind.ReplayPolicy, not {type(policy).__name__}")
        if live or never_live or model_map or on_missing != "error":
            raise ValueError("pass policy= or live=/never_live=/on_missing=/model_map=, not both")
        return policy
    built = ReplayPolicy.of(live=live, never_live=never_live, on_missing=on_missing, model_map=model_map)
    return built if built != ReplayPolicy() else None
