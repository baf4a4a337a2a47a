"""Provider faults as litellm delivers them: the class litellm's own exception mapping picks.

litellm turns every provider's failure into its own classes (``litellm.RateLimitError``,
``ServiceUnavailableError`` …) with ``exception_type``, and that mapping moved over
releases; so a fault is built the way litellm builds it: an OpenAI-SDK error for the
status, run through the installed litellm's ``exception_type``, then recorded as the
instrumentor records a live litellm error. Without litellm installed, the classes the
newest release picks are named.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

from rewind.engine.providers import Failure, Faults
from rewind.storage.trace import Event

from ._fault_records import REQUEST_ID, WORDING, http_library, record, response

#: How the instrumentor records a live litellm error (``LiteLLMProvider.error_record``).
Encoder = Callable[[Exception], dict[str, Any]]


def litellm_faults(encode: Encoder) -> Faults:
    """How litellm delivers provider faults, recorded with the instrumentor's own ``encode``."""
    return Faults(lambda failure: _fault(failure, encode), lambda failure: _dropped(failure, encode))


def _fault(failure: Failure, encode: Encoder) -> dict[str, Any]:
    """litellm: the class litellm's own exception mapping picks for this route and status (it moved over releases)."""
    provider, model = _route(failure.event)
    exc = _mapped(failure, provider, model)
    if exc is None:  # litellm is not installed: name its classes as the newest release maps an OpenAI error
        name = {429: "RateLimitError", 500: "InternalServerError", 503: "ServiceUnavailableError"}.get(
            failure.status, "Timeout"
        )
        message = f"litellm.{name}: {WORDING.get(failure.fault, 'Request timed out.')}"
        status = failure.status or 408
        answer = response(status, failure, "{}") if failure.status else None
        attrs = {"message": message, "status_code": status, "llm_provider": provider, "model": model}
        return record("litellm.exceptions", name, message, attrs=attrs, response=answer)
    return encode(exc)


def _mapped(failure: Failure, provider: str, model: str) -> Exception | None:
    """The error litellm raises when the provider answers ``failure``: an OpenAI-SDK error run through
    litellm's ``exception_type``, which is how litellm turns every provider's failure into its classes."""
    try:
        import litellm
        import openai
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type

        # openai 3.x is built on httpx2: its errors hold the responses of the library it uses.
        httpx: Any = importlib.import_module(http_library("openai._base_client"))
    except ImportError:
        return None
    request = httpx.Request("POST", "https://provider.invalid/v1/chat/completions")
    original: Exception
    if failure.fault == "timeout":
        original = openai.APITimeoutError(request=request)
    elif failure.fault == "connection_reset":
        original = openai.APIConnectionError(request=request)
    else:
        kind = "overloaded_error" if failure.fault == "overloaded" else failure.fault
        body = {"message": WORDING[failure.fault], "type": kind, "param": None, "code": None}
        status = 529 if failure.fault == "overloaded" and provider == "anthropic" else failure.status
        headers = {"content-type": "application/json", "x-request-id": REQUEST_ID}
        if failure.retry_after is not None:
            headers["retry-after"] = failure.retry_after
        answer = httpx.Response(status, headers=headers, json={"error": body}, request=request)
        cls = {429: openai.RateLimitError}.get(status, openai.InternalServerError)
        original = cls(f"Error code: {status} - {{'error': {body}}}", response=answer, body=body)
    quiet = litellm.suppress_debug_info
    litellm.suppress_debug_info = True  # its "Give Feedback" banner is for errors the user met
    try:
        exception_type(model=model, original_exception=original, custom_llm_provider=provider)
    except Exception as exc:
        return exc
    finally:
        litellm.suppress_debug_info = quiet
    return None


def _route(event: Event) -> tuple[str, str]:
    """(provider, model) as litellm named them for this call: from its recorded private state, else the model."""
    state = event.get("litellm")
    hidden = state.get("hidden_params") if isinstance(state, Mapping) else None
    provider = hidden.get("custom_llm_provider") if isinstance(hidden, Mapping) else None
    request = event.request if isinstance(event.request, Mapping) else {}
    model = str(request.get("model") or "")
    route, _, name = model.partition("/")
    if not isinstance(provider, str) or not provider:
        provider = route if name else "openai"
    if name and route == provider:
        model = name
    return provider, model


def _dropped(failure: Failure, encode: Encoder) -> dict[str, Any]:
    """litellm maps the provider's connection error; newer releases wrap that, with the text
    streamed so far, in ``MidStreamFallbackError`` (its signal that a fallback may take over)."""
    provider, model = _route(failure.event)
    exc: Exception | None = _mapped(failure, provider, model)
    if exc is None:
        message = "litellm.APIConnectionError: APIConnectionError: Connection error."
        attrs = {"message": message, "status_code": 500, "llm_provider": provider, "model": model}
        return record("litellm.exceptions", "APIConnectionError", message, attrs=attrs)
    wrapper = getattr(sys.modules.get("litellm.exceptions"), "MidStreamFallbackError", None)
    if isinstance(wrapper, type):
        text = "".join(
            str(((choice.get("delta") or {}).get("content")) or "")
            for chunk in failure.kept
            if isinstance(chunk, Mapping)
            for choice in chunk.get("choices") or []
            if isinstance(choice, Mapping)
        )
        offered = {
            "message": str(exc),
            "model": model,
            "llm_provider": provider,
            "original_exception": exc,
            "generated_content": text,
            "is_pre_first_chunk": not failure.kept,
        }
        accepted = inspect.signature(wrapper).parameters
        try:
            exc = wrapper(**{key: value for key, value in offered.items() if key in accepted})
        except Exception:  # a release whose wrapper wants more: the mapped error as it is
            pass
    return encode(exc)
