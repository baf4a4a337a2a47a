"""Where rewind's spans come from and how they reach the session that owns them.

Rewind never replaces the global tracer provider. When the application configured an
SDK ``TracerProvider`` (by hand or through ``opentelemetry-instrument``), rewind's spans
are created there, so they reach the user's exporters too, and one ``SessionRouter``
processor is added to it once. Otherwise rewind uses a private provider of its own.

The SDK cannot remove a span processor, so sessions never install processors: the
router, installed once per provider, hands each span to the session that made it.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from rewind.data import genai_names as names
from rewind.exporters.parcels import PARCELS

from .span_errors import annotate, environment_credentials, exported_message, request_credentials

if TYPE_CHECKING:
    from .core import Call

TRACER_NAME = "rewind"

#: The call whose span is being started right now, so processors can find it in on_start.
STARTING: ContextVar[Call | None] = ContextVar("rewind_starting_call", default=None)


class SessionRouter(SpanProcessor):
    """Routes rewind spans to their session: replay decisions on start, file writes on end."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        call = STARTING.get()
        if call is not None and call.span_pending:
            call.session.on_span_start(span, call)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None:
            return
        parcel = PARCELS.get(context.span_id)
        if parcel is not None:
            parcel.session.on_span_end(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _PrivateProvider(TracerProvider):
    """rewind's own provider, used when the application configured none.

    It remembers whether anything besides rewind's router listens to it: a replayed
    span nobody can observe is pure cost, so replay skips building it.
    """

    def __init__(self) -> None:
        # ALWAYS_ON: when rewind owns the pipeline, no step may be sampled away.
        super().__init__(sampler=ALWAYS_ON, shutdown_on_exit=False)
        self.observed = False

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        if not isinstance(span_processor, SessionRouter):
            self.observed = True
        super().add_span_processor(span_processor)


class _TracerSource:
    """Resolves the tracer to use for each call; cheap when nothing changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routed: weakref.WeakSet[TracerProvider] = weakref.WeakSet()
        self._private: _PrivateProvider | None = None
        self._last_provider: Any = None
        self._last_tracer: trace_api.Tracer | None = None
        self._checked: Any = None
        self._checked_is_sdk = False
        self._no_global = False

    def tracer(self) -> trace_api.Tracer:
        provider = trace_api.get_tracer_provider()
        if provider is self._last_provider and self._last_tracer is not None:
            return self._last_tracer
        with self._lock:
            target = provider if isinstance(provider, TracerProvider) else self.private_provider()
            if target not in self._routed:
                target.add_span_processor(SessionRouter())
                self._routed.add(target)
            from rewind._version import __version__

            tracer = target.get_tracer(TRACER_NAME, __version__)
            self._last_provider, self._last_tracer = provider, tracer
            return tracer

    def private_provider(self) -> TracerProvider:
        if self._private is None:
            self._private = _PrivateProvider()
        return self._private

    def observed(self) -> bool:
        """Whether a span made now could reach anyone but rewind itself: an application
        provider (its exporters, its sampler's decisions) or a processor someone added
        to rewind's private one."""
        provider = getattr(trace_api, "_TRACER_PROVIDER", None)
        if provider is None:
            if self._no_global:
                return self._private is not None and self._private.observed
            provider = trace_api.get_tracer_provider()
            # get_tracer_provider() looks for OTEL_PYTHON_TRACER_PROVIDER in the environment
            # on every call until a provider is set (a microsecond a call): one look that
            # found none is enough. A provider set later in code is seen above.
            self._no_global = hasattr(trace_api, "_TRACER_PROVIDER") and trace_api._TRACER_PROVIDER is None
        if provider is not self._checked:
            # Runs on every call: the ABC isinstance check only when the provider changes.
            self._checked, self._checked_is_sdk = provider, isinstance(provider, TracerProvider)
        if self._checked_is_sdk:
            return True
        return self._private is not None and self._private.observed

    def uses_private_provider(self) -> bool:
        return not isinstance(trace_api.get_tracer_provider(), TracerProvider)


TRACERS = _TracerSource()

#: The GenAI operation of the span that holds a whole run.
RUN_OPERATION = "invoke_agent"


class RunSpan:
    """The root span of a session's run, so every step of one run is one trace in a backend.

    Opened when a session starts with no span active (a span the application opened
    already groups the steps, and stays their parent). Named per the GenAI conventions
    for an agent invocation (``invoke_agent``); it ends when the session ends. Replays
    get one too, so a replayed run sits in the backend the same way as the live one.
    """

    __slots__ = ("_span", "_token")

    def __init__(self, span: trace_api.Span | None, token: object | None) -> None:
        self._span = span
        self._token = token

    @classmethod
    def open(cls, mode: str, path: str) -> RunSpan:
        if trace_api.get_current_span().get_span_context().is_valid or not TRACERS.observed():
            # Under the application's span already, or nobody could see it: costs nothing.
            return cls(None, None)
        attributes = {
            "gen_ai.operation.name": RUN_OPERATION,
            "rewind.mode": mode,
            "rewind.trace": os.path.basename(path),
        }
        span = TRACERS.tracer().start_span(RUN_OPERATION, kind=trace_api.SpanKind.INTERNAL, attributes=attributes)
        token = context_api.attach(trace_api.set_span_in_context(span))
        return cls(span, token)

    def close(
        self,
        error: BaseException | None = None,
        redact: Callable[[Any], Any] | None = None,
        known: frozenset[str] = frozenset(),
    ) -> None:
        """End the span; ``error`` (what ended the run) goes on it as the steps' errors do,
        through ``redact=`` and without the credentials of its request, of the environment,
        or ``known`` to the session (its failed calls')."""
        span, token = self._span, self._token
        self._span = self._token = None
        if span is None:
            return
        # Detach only where it was attached: in another context (a session ended by another
        # task) OpenTelemetry would log a failed detach; the span ends either way.
        if token is not None and trace_api.get_current_span() is span:
            context_api.detach(token)  # type: ignore[arg-type]
        if error is not None:
            credentials = request_credentials(error) | environment_credentials() | known
            annotate(span, error, exported_message(error, None, redact, credentials))
        span.end()


#: Set to 1 to add the older GenAI attribute names beside today's, for backends that read them.
LEGACY_ENV = "REWIND_GENAI_LEGACY_ATTRIBUTES"
#: Today's name -> the name it replaced.
LEGACY_NAMES = {
    names.PROVIDER_NAME: names.SYSTEM,
    names.USAGE_INPUT_TOKENS: names.USAGE_PROMPT_TOKENS,
    names.USAGE_OUTPUT_TOKENS: names.USAGE_COMPLETION_TOKENS,
}
_legacy: tuple[str | None, bool] = (None, False)


def legacy_names() -> bool:
    """Whether ``REWIND_GENAI_LEGACY_ATTRIBUTES`` asks for the older names too (read on every call)."""
    global _legacy
    raw = os.environ.get(LEGACY_ENV)
    if raw != _legacy[0]:
        _legacy = (raw, (raw or "").strip().lower() in ("1", "true", "yes", "on"))
    return _legacy[1]


def legacy_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The older names of the GenAI attributes in ``attrs`` (empty unless the switch is on)."""
    if not legacy_names():
        return {}
    return {old: attrs[new] for new, old in LEGACY_NAMES.items() if new in attrs}


def usage_attributes(response: Any) -> dict[str, Any]:
    """GenAI response attributes found in an OpenAI- or Anthropic-shaped JSON response."""
    attrs: dict[str, Any] = {}
    if not isinstance(response, dict):
        return attrs
    if isinstance(response.get("id"), str):
        attrs["gen_ai.response.id"] = response["id"]
    if isinstance(response.get("model"), str):
        attrs["gen_ai.response.model"] = response["model"]
    usage = response.get("usage")
    if isinstance(usage, dict):
        input_tokens = usage.get("input_tokens", usage.get("prompt_tokens"))
        output_tokens = usage.get("output_tokens", usage.get("completion_tokens"))
        if isinstance(input_tokens, int):
            attrs["gen_ai.usage.input_tokens"] = input_tokens
        if isinstance(output_tokens, int):
            attrs["gen_ai.usage.output_tokens"] = output_tokens
    choices = response.get("choices")
    if isinstance(choices, list):
        reasons = [c.get("finish_reason") for c in choices if isinstance(c, dict)]
        reasons = [r for r in reasons if isinstance(r, str)]
        if reasons:
            attrs["gen_ai.response.finish_reasons"] = reasons
    elif isinstance(response.get("stop_reason"), str):
        attrs["gen_ai.response.finish_reasons"] = [response["stop_reason"]]
    return attrs
