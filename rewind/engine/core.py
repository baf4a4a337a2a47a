"""The interception core: the one path every recorded or replayed call takes.

Decorators and SDK instrumentors both drive a ``Call``:

    call = begin_call("llm", name, request, span_name=..., attributes=...)
    if call is None:                 # no session: plain passthrough
        return invoke()
    if call.replaying:               # a recorded event answers
        return revive(call.replay_response())
    with call.activate():            # live: the span is current while the call runs
        try:
            result = invoke()
        except Exception as exc:
            call.fail(exc)
            raise
    call.succeed(to_json(result))
    return result

Canonicalization, redaction and the live call run outside the session lock; only the
matching decision, seq reservation and event append run under it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.trace import SpanKind

from rewind.data.canonical import (
    canonical_json,
    canonical_text,
    ensure_jsonable,
    request_text,
    text_fingerprint,
    to_jsonable,
)
from rewind.data.function_names import same_function
from rewind.data.replayed_error import decode_error, encode_error, is_cancellation, replayed_cancellation
from rewind.errors import DivergenceError, RedactionError, TraceFormatError, TraceWriteError
from rewind.exporters.parcels import PARCELS, Parcel
from rewind.storage.trace import Event

from . import content_capture
from .context import current_session, warn_if_threadless
from .span_errors import (
    annotate,
    client_credentials,
    environment_credentials,
    exported_message,
    request_credentials,
    without_credentials,
)
from .telemetry import STARTING, TRACERS, legacy_attributes, usage_attributes

if TYPE_CHECKING:
    from .session import Session

_NO_RESPONSE: Any = object()
_UNSET: Any = object()

OPERATIONS = {"llm": "chat", "tool": "execute_tool", "memory": "retrieval"}

#: Gives a span's name (``None``: the core's default) and its start attributes.
Describe = Callable[[], tuple[str | None, Mapping[str, Any] | None]]


class Call:
    """One intercepted call in flight: its identity, its span and its outcome."""

    __slots__ = (
        "session",
        "kind",
        "name",
        "_request",
        "_identity",
        "_raw",
        "request_text",
        "fingerprint",
        "_stored_request",
        "seq",
        "served",
        "divergence",
        "decided",
        "span",
        "span_pending",
        "ts",
        "_t0",
        "_ended",
        "_capture",
        "_details",
        "_observed",
        "_direct",
        "is_async",
        "credential_source",
        "function",
    )

    def __init__(
        self,
        session: Session,
        kind: str,
        name: str,
        request: Any,
        is_async: bool | None = None,
        function: str | None = None,
    ) -> None:
        self.session = session
        self.kind = kind
        self.name = name
        #: ``module.qualname`` of the decorated function making the call (``None`` for SDK calls).
        self.function = function
        #: Whether the agent awaits this call (``None``: the hook does not say).
        self.is_async = is_async
        self._raw = request
        self._request: Any = _UNSET
        self._identity: Any = _UNSET
        self._stored_request: Any = _UNSET
        #: Canonical JSON of the request, when it is plain JSON data (the common case):
        #: the fingerprint and the trace line both reuse it, and the request as JSON data
        #: is only built if someone asks (a diff, a fuzzy matcher, redaction).
        self.request_text: str | None = None
        if session.normalize is None:
            text = request_text(request)
            if text is None:
                # Not plain JSON data: convert now, before the agent can mutate it.
                self._request = to_jsonable(request, where="request")
                self._raw = None
                text = canonical_json(self._request)
            self.request_text = text
            self.fingerprint = text_fingerprint(text)
        else:
            self._request = to_jsonable(request, where="request")
            self._raw = None
            self.fingerprint = _identity_fingerprint(self.identity)
        self.seq: int | None = None
        if session.redact is not None:
            # Before the call runs: a redactor that fails on the request stops it here.
            self.stored_request = self._redact(self._fresh_request(), "request")
        self.served: Event | None = None
        self.divergence: DivergenceError | None = None
        self.decided = False
        self.span: trace_api.Span = trace_api.INVALID_SPAN
        self.span_pending = False
        self.ts = time.time()  # to the millisecond in the event (a replayed call writes none)
        self._t0 = time.perf_counter()
        self._ended = False
        self._capture = False
        #: The call's content for the operation-details event (event capture modes), until it ends.
        self._details: dict[str, Any] | None = None
        self._observed = True
        #: No SDK span: the event goes straight to the writer (see ``_start_span``).
        self._direct = False
        #: The SDK object that made the call (its client's credentials are kept out of errors).
        self.credential_source: Any = None

    # -- the request, as JSON data ---------------------------------------------------
    @property
    def request(self) -> Any:
        """The request as JSON data (before normalization)."""
        if self._request is _UNSET:
            if self.request_text is not None:
                self._request = json.loads(self.request_text)
            else:
                self._request = to_jsonable(self._raw, where="request")
            self._raw = None  # the JSON form is all rewind keeps of the agent's objects
        return self._request

    @property
    def identity(self) -> Any:
        """What the fingerprint covers: the request after ``normalize=``."""
        if self._identity is _UNSET:
            normalize = self.session.normalize
            # The stored request keeps its real values; only the identity is normalized.
            self._identity = normalize(self._fresh_request()) if normalize is not None else self.request
        return self._identity

    @property
    def stored_request(self) -> Any:
        """The request as written to the trace (after ``redact=``)."""
        if self._stored_request is _UNSET:
            self._stored_request = self.request
        return self._stored_request

    @stored_request.setter
    def stored_request(self, value: Any) -> None:
        self._stored_request = value

    def _fresh_request(self) -> Any:
        """A private copy of the request data, for a user function to mutate."""
        if self.request_text is not None:
            return json.loads(self.request_text)
        return json.loads(json.dumps(self.request))

    # -- start ----------------------------------------------------------------
    def _start_span(
        self,
        span_name: str | None,
        attributes: Mapping[str, Any] | None,
        describe: Describe | None = None,
    ) -> None:
        self._observed = TRACERS.observed()
        if not self._observed:
            # Nothing listens but rewind's own exporter, which reads the event, not the span:
            # no span is built and ``_commit`` writes the event itself (a replay nobody can
            # see has nothing to write). Nothing is made current either, so what the SDK
            # propagates (``traceparent``, MCP's ``_meta``) is what it is without rewind,
            # not the id of a span no backend will ever hold. The decision is the one the
            # ReplaySpanProcessor makes when a span starts.
            self._direct = True
            self.session.decide(self)
            return
        if describe is not None:
            span_name, attributes = describe()
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": OPERATIONS.get(self.kind, self.kind),
            "rewind.kind": self.kind,
            "rewind.name": self.name,
            "rewind.fingerprint": self.fingerprint,
            "rewind.mode": self.session.mode,
            "rewind.session.id": self.session.id,
        }
        if self.kind == "tool":
            attrs["gen_ai.tool.name"] = self.name
        if attributes:
            attrs.update(attributes)
        if span_name is None:
            raw = self._raw if self._request is _UNSET else self._request
            model = raw.get("model") if isinstance(raw, dict) else None
            target = model if isinstance(model, str) and self.kind == "llm" else self.name
            span_name = f"{attrs['gen_ai.operation.name']} {target}"
            if isinstance(model, str) and self.kind == "llm":
                attrs.setdefault("gen_ai.request.model", model)
        capture = content_capture.mode() if self._observed else content_capture.NO_CONTENT
        self._capture = capture.span
        if capture.span or (capture.event and self.kind == "llm"):
            # Content for other backends is opt-in, and redacted like the file.
            operation = attrs["gen_ai.operation.name"]
            content = content_capture.input_attributes(self.kind, operation, self.stored_request)
            if capture.span:
                attrs.update(content)
            if capture.event and self.kind == "llm":
                self._details = content  # the operation-details event, sent when the call ends
        attrs.update(legacy_attributes(attrs))
        token = STARTING.set(self)
        self.span_pending = True
        try:
            self.span = TRACERS.tracer().start_span(span_name, kind=SpanKind.CLIENT, attributes=attrs)
        finally:
            self.span_pending = False
            STARTING.reset(token)
        if not self.decided:
            # The span was not sampled (or OpenTelemetry is disabled), so no processor
            # saw it start: decide here, the same way.
            self.session.decide(self)

    @property
    def annotating(self) -> bool:
        """Whether attributes and exception details set on the span now can reach anyone
        (an instrumentor computes its response attributes only then)."""
        return self._observed and self.span.is_recording()

    def _end_attributes(self, response: Any = _NO_RESPONSE, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Everything learned after the span started, for ONE set_attributes call.

        Each call takes the span's lock and re-cleans every value, so batching is what
        keeps the span's cost per step small.
        """
        attrs: dict[str, Any] = {}
        if self.seq is not None:
            attrs["rewind.seq"] = self.seq
        if self.served is not None:
            attrs["rewind.replayed"] = True
            attrs["rewind.served"] = True
            attrs["rewind.replayed_step"] = self.served.seq
        elif self.session.mode != "record":
            # A live step of a replay (hybrid) or fork: said outright, so a backend can tell.
            attrs["rewind.served"] = False
        if response is not _NO_RESPONSE:
            attrs.update(usage_attributes(response))
            if self._capture or self._details is not None:
                output = content_capture.output_attributes(self.kind, response)
                if self._capture:
                    attrs.update(output)
                if self._details is not None:
                    self._details.update(output)
        if extra:
            attrs.update(extra)
        attrs.update(legacy_attributes(attrs))
        if self._details is not None:
            self.span.add_event(content_capture.OPERATION_DETAILS, self._details)
            self._details = None
        return attrs

    # -- replay -----------------------------------------------------------------
    @property
    def replaying(self) -> bool:
        """True when the recording answers this call (or the replay diverged)."""
        return self.served is not None or self.divergence is not None

    def take_served(self) -> Event:
        """The recorded event answering this call, after the session's delivery hooks.

        Raises the ``DivergenceError`` when there is none.
        """
        if self.divergence is not None:
            error = self.divergence
            self.session.divergences.append(error)
            self._end_with_error(error)
            raise error
        assert self.served is not None
        # A lazily loaded event re-reads its line on every access; this call's copy
        # reads it once, however often the hooks and the caller look at it.
        self.served = self.served.hydrated(self.request_text)
        try:
            self.served.get("response")  # read it now: a damaged trace or blob fails with the span ended
        except TraceFormatError as error:
            self._end_with_error(error)
            raise
        self.session.delivered(self.served)
        return self.served

    def replay_response(self) -> Any:
        """The recorded response (JSON data), or the recorded error raised again."""
        event = self.take_served()
        head = event.head()  # response and the recording function, read once
        if self.function is not None and event.name == self.name:  # another name is drift, said elsewhere
            recorded = head.get("function")
            if isinstance(recorded, str) and not same_function(recorded, self.function):
                self.session.note_recorded_by(event, recorded, self.function)
        if not event.ok:
            self.raise_recorded_error(event)
        self.end_replayed()
        return head.get("response")

    def raise_recorded_error(self, event: Event, error: BaseException | None = None) -> None:
        record = event.error or {}
        cancelled = replayed_cancellation(record)
        if cancelled is not None:
            error = cancelled  # the recorded call was cancelled: cancel the task replaying it
        elif error is None:
            error = decode_error(record, event.seq)
        self._end_with_error(error)
        raise error

    def end_replayed(self, attributes: Mapping[str, Any] | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        if self.annotating:
            response = self.served.response if self.served is not None else _NO_RESPONSE
            self.span.set_attributes(self._end_attributes(response, attributes))
        self.span.end()

    # -- live -------------------------------------------------------------------
    def activate(self) -> AbstractContextManager[trace_api.Span]:
        """Make this call's span current while the live call runs (HTTP spans nest under it);
        a call with no span (nobody observes) leaves the current context as it is."""
        if self.span is trace_api.INVALID_SPAN:
            return _UNCHANGED
        return _Activation(self.span)

    def succeed(
        self,
        response: Any,
        *,
        extra: Mapping[str, Any] | None = None,
        attributes: Mapping[str, Any] | None = None,
        converted: bool = False,
    ) -> Event:
        """Record the live call's response; ``converted`` when it is JSON data already."""
        data = response if converted else to_jsonable(response, where="response")
        if self.session.redact is not None:
            data = self._redact_or_record(data, "response")
        event = self._event(response=data, extra=extra)
        if self.annotating:
            attrs = self._end_attributes(data, attributes)
            if self._capture:
                # The whole step, for `rewind import` from the user's backend (fleet recording).
                attrs.update(content_capture.event_attributes(event))
            self.span.set_attributes(attrs)
        self._commit(event)
        return event

    def fail(
        self,
        exc: BaseException,
        *,
        error: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Event | None:
        """Record the live call's exception.

        An asyncio cancellation is a step (so the same program replays without a gap, and
        the step is cancelled again); other exits (``KeyboardInterrupt``, ``SystemExit``,
        ``GeneratorExit``) end the run, not the step, and are not recorded.
        """
        if is_cancellation(exc):
            record = encode_error(exc)
            record["cancelled"] = True
        elif not isinstance(exc, Exception):
            self._end_with_error(exc)
            return None
        else:
            record = dict(error) if error is not None else encode_error(exc)
        # An error that quotes a credential of its call keeps it on no span and in no file.
        credentials = self.credentials(exc)
        record = without_credentials(record, credentials)
        if self.session.redact is not None:
            record = self._redact_or_record(record, "error record")
        return self._record_error(exc, record, extra, credentials)

    def _record_error(
        self,
        exc: BaseException,
        record: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
        credentials: frozenset[str] = frozenset(),
    ) -> Event:
        event = self._event(error=record, extra=extra)
        if self.annotating:
            self._annotate_error(exc, record, credentials)
            if self._capture:
                self.span.set_attributes(content_capture.event_attributes(event))
        self._commit(event)
        return event

    def _annotate_error(
        self,
        exc: BaseException,
        record: Mapping[str, Any] | None = None,
        credentials: frozenset[str] | None = None,
    ) -> None:
        """The exception on the span: as OpenTelemetry records it, or, under ``redact=``
        or when it quotes a credential of its request, only its type and its message as
        recorded (a stack trace ends with the raw message and chains its causes', so it
        is not exported)."""
        if credentials is None:
            credentials = self.credentials(exc)
        annotate(self.span, exc, exported_message(exc, record, self.session.redact, credentials))
        self.span.set_attributes(self._end_attributes(extra={"error.type": type(exc).__qualname__}))

    def credentials(self, exc: BaseException) -> frozenset[str]:
        """Every credential rewind can know for this failed call: its request's, its client's,
        the environment's. The session remembers them for the error that ends the run."""
        found = request_credentials(exc) | client_credentials(self.credential_source) | environment_credentials()
        self.session.known_credentials.update(found)
        return found

    # -- redaction ------------------------------------------------------------------
    def redacted(self, data: Any, what: str) -> Any:
        """``data`` through the session's ``redact=`` (for an instrumentor's extras).

        A failing redactor records this step as a ``RedactionError`` and raises it.
        """
        if self.session.redact is None:
            return data
        return self._redact_or_record(data, what)

    def _redact(self, data: Any, what: str) -> Any:
        redact = self.session.redact
        assert redact is not None
        try:
            out = redact(data)
        except Exception as exc:
            # The redactor's own message may quote what it was given: it stays in the
            # chained cause (in this process), never in the error rewind records.
            raise RedactionError(self._redaction_message(redact, exc, what), step=self._step_for_errors()) from exc
        return ensure_jsonable(out, where=f"redact({what})")

    def _redact_or_record(self, data: Any, what: str) -> Any:
        try:
            return self._redact(data, what)
        except RedactionError as error:
            # The call ran: its step is this error, so the trace has no gap and a replay
            # raises it at the same place. Nothing the redactor was given is written.
            self._record_error(error, encode_error(error))
            raise

    def _redaction_message(self, redact: Any, exc: Exception, what: str) -> str:
        name = getattr(redact, "__qualname__", None) or type(redact).__qualname__
        module = getattr(redact, "__module__", None)
        label = f"{module}.{name}" if module and module != "builtins" else name
        step = self._step_for_errors()
        if what == "request":
            outcome = f"(it would have been step {step}); the call did not run and nothing of it was recorded"
        else:
            outcome = (
                f"at step {step}; the {what} was not written: the step is recorded as this error, "
                "and a replay raises it again here"
            )
        return (
            f"redact={label} raised {type(exc).__name__} on the {what} of {self.kind} call {self.name!r} "
            f"{outcome}. A redactor must accept every request, response and error record "
            "(see docs/recording.md)."
        )

    def _step_for_errors(self) -> int:
        if self.seq is not None:
            return self.seq
        return self.session.peek_seq()

    def _event(
        self, *, response: Any = None, error: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None
    ) -> Event:
        assert self.seq is not None
        # Unredacted plain requests go to the line as the canonical text already made.
        text = self.request_text if self._stored_request is _UNSET else None
        return Event(
            self.seq,
            self.kind,
            self.name,
            self.fingerprint,
            None if text is not None else self.stored_request,
            response,
            error,
            duration_ms=_thousandths((time.perf_counter() - self._t0) * 1000.0),
            ts=_thousandths(self.ts),  # milliseconds: ordering is by seq, ts is for people
            live=True,
            extra=extra,
            request_text=text,
        )

    def _commit(self, event: Event) -> None:
        if self._ended:
            return
        self._ended = True
        session = self.session
        session.append(event)
        span = self.span
        if session.writer is None:
            span.end()
            return
        if not self._direct:
            # The span exporter writes the event, so a span the application sees and the
            # line in the file come from one path.
            if span.is_recording():
                span_id = span.get_span_context().span_id
                PARCELS[span_id] = Parcel(session, event)
                span.end()
                if PARCELS.pop(span_id, None) is None:
                    return  # the exporter wrote it
            else:
                span.end()
        # Nothing listens (no SDK span), or no exporter took the event (span not exported,
        # or the export failed): write it here, where a failure raises instead of losing the step.
        try:
            session.writer.write(event)
        except TraceWriteError:
            # Not on disk, so not in the session's trace either: nothing may serve it.
            session.discard(event)
            raise

    def _end_with_error(self, exc: BaseException) -> None:
        if self._ended:
            return
        self._ended = True
        if self.annotating:
            self._annotate_error(exc)
        self.span.end()

    def abandon(self, exc: BaseException | None = None) -> None:
        """End the span without recording a step (the call never completed)."""
        if exc is not None:
            self._end_with_error(exc)
        elif not self._ended:
            self._ended = True
            self.span.end()


class _Activation(AbstractContextManager[trace_api.Span]):
    """``trace.use_span`` without the generator machinery (it runs on every live call):
    the span is current inside the block; nothing is recorded or ended on exit."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: trace_api.Span) -> None:
        self._span = span
        self._token: object | None = None

    def __enter__(self) -> trace_api.Span:
        self._token = context_api.attach(trace_api.set_span_in_context(self._span))
        return self._span

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        context_api.detach(self._token)  # type: ignore[arg-type]


_UNCHANGED: AbstractContextManager[trace_api.Span] = nullcontext(trace_api.INVALID_SPAN)


def _identity_fingerprint(identity: Any) -> str:
    """The fingerprint of what ``normalize=`` returned (plain data hashes as it always did)."""
    text = canonical_text(identity)
    if text is None:
        text = canonical_json(to_jsonable(identity, where="normalize(request)"))
    return text_fingerprint(text)


def _thousandths(value: float) -> float:
    """``value`` to three decimals, as short a float as ``round(value, 3)`` (a third of its
    cost; a value just at a half may come out a thousandth the other way)."""
    return round(value * 1000) / 1000


def begin_call(
    kind: str,
    name: str,
    request: Any,
    *,
    span_name: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    describe: Describe | None = None,
    is_async: bool | None = None,
    function: str | None = None,
) -> Call | None:
    """Start intercepting a call, or return ``None`` when no session is active.

    ``describe`` gives the span's name and start attributes in place of ``span_name`` /
    ``attributes``; it runs only when the span can reach anyone (an instrumentor's
    attributes cost a few microseconds a call that no one may read). ``is_async`` says
    whether the agent awaits the call: a fault injected there is what that flavour of the
    SDK raises (a sync client called from a coroutine raises the sync client's errors).
    ``function`` names the decorated function making the call (``module.qualname``): a
    divergence report and a replay say when a step was recorded by another one.
    """
    session = current_session()
    if session is None:
        warn_if_threadless(kind, name)
        return None
    call = Call(session, kind, name, request, is_async, function)
    call._start_span(span_name, attributes, describe)
    return call
