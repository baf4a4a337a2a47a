"""Provider errors as each instrumented SDK delivers them: the records ``rewind mutate`` injects.

A provider fault (rate limit, server error, overloaded, timeout, a stream whose connection
drops) is an error record shaped like the one the SDK's instrumentor writes when it
records that failure live, so the instrumentor revives it as the SDK's own exception
class with the attributes an agent's retry code reads (status, ``retry-after``, error
code). ``DELIVERIES`` is the table: one maker per SDK. The shapes were taken from real
errors recorded against the stub server, at the newest releases and at the floors in
``compat/``; docs/what-if.md lists the class each SDK gets for each fault.

Where the answer depends on the installed release (mistralai's error module, the HTTP
library behind a timeout or a dropped stream, litellm's mapping), the installed SDK is
asked: only this module's fixed candidates are imported, never a name from a trace.
Without the SDK installed the newest layout is named, and the error replays as a plain
``ReplayedError``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rewind.storage.trace import Event

REQUEST_ID = "req_rewind_fault"
_PEER_CLOSED = "peer closed connection without sending complete message body (incomplete chunked read)"


@dataclass(frozen=True)
class Failure:
    """One provider fault, as far as it is the same for every SDK."""

    fault: str
    status: int
    #: The ``retry-after`` value (seconds) the answer carries, if any.
    retry_after: str | None
    event: Event
    #: For a stream cut short: the chunks the agent got first.
    kept: list[Any] = field(default_factory=list)
    #: The call comes from a coroutine (an async client).
    in_async: bool = False


# --------------------------------------------------------------------------- locating classes


@functools.cache
def _located(*candidates: str) -> tuple[str, str]:
    """``(module, qualname)`` of the first ``"module:Name"`` the installed SDK has, as a live record names it.

    Only this module's fixed candidates are imported (never a name from a trace); the
    class's own ``__module__`` is what a live recording writes.
    """
    for candidate in candidates:
        module_name, _, name = candidate.partition(":")
        try:
            module = sys.modules.get(module_name) or importlib.import_module(module_name)
            cls = getattr(module, name)
        except Exception:  # not this layout (or the SDK is not installed)
            continue
        if isinstance(cls, type):
            return cls.__module__, cls.__qualname__
    module_name, _, name = candidates[0].partition(":")
    return module_name, name


@functools.cache
def _http_library(*client_modules: str) -> str:
    """The HTTP library the SDK's client module talks through: ``httpx2``, ``httpx`` or ``requests``."""
    for module_name in client_modules:
        try:
            module = sys.modules.get(module_name) or importlib.import_module(module_name)
        except Exception:
            continue
        found = [vars(module).get(name) for name in ("httpx2", "httpx", "requests")]
        names = [getattr(m, "__name__", None) for m in found if m is not None]
        # google-genai imports both httpx and httpx2 and uses httpx2 when it is there.
        for preferred in ("httpx2", "httpx", "requests"):
            if preferred in names:
                return preferred
    return "httpx"


#: SDK -> its modules whose globals name the HTTP library it talks through (first found wins).
_CLIENT_MODULES = {
    **{sdk: (f"{sdk}._base_client",) for sdk in ("openai", "anthropic", "groq", "together", "fireworks")},
    "mistral": ("mistralai.client.basesdk", "mistralai.basesdk"),
    "cohere": ("cohere.core.http_client",),
    "gemini": ("google.genai._api_client",),
}


def _read_timeout(sdk: str) -> dict[str, Any]:
    """The transport's read timeout, raised through the SDK unwrapped (as mistralai, cohere and google-genai do)."""
    library = _http_library(*_CLIENT_MODULES[sdk])
    if library == "requests":
        module, qualname = _located("requests.exceptions:ReadTimeout")
        message = "Read timed out. (read timeout=60)"
        return _record(module, qualname, message, attrs={"response": None})
    module, qualname = _located(f"{library}:ReadTimeout")
    return _record(module, qualname, "timed out")


def _transport_dropped(sdk: str) -> dict[str, Any]:
    """A body that stopped short, as the SDK's HTTP library reports it (recorded live through a dropping proxy)."""
    library = _http_library(*_CLIENT_MODULES.get(sdk, ()))
    if library == "requests":
        module, qualname = _located("requests.exceptions:ChunkedEncodingError")
        return _record(module, qualname, "Response ended prematurely", attrs={"response": None, "request": None})
    module, qualname = _located(f"{library}:RemoteProtocolError")
    return _record(module, qualname, _PEER_CLOSED)


# --------------------------------------------------------------------------- record shapes


def _record(module: str, qualname: str, message: str, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": f"{module}.{qualname}", "module": module, "qualname": qualname}
    record["message"] = message
    record.update({key: value for key, value in extra.items() if value is not None})
    return record


def _response(status: int, failure: Failure, text: str, **headers: str) -> dict[str, Any]:
    """The bounded HTTP response a recorded status error keeps (``e.response`` at replay)."""
    kept = {"content-type": "application/json", "x-request-id": REQUEST_ID, **headers}
    if failure.retry_after is not None:
        kept["retry-after"] = failure.retry_after
    return {"status_code": status, "headers": kept, "text": text}


_WORDING = {
    "rate_limit": "Rate limit reached.",
    "server_error": "Internal server error.",
    "overloaded": "The service is overloaded. Please try again later.",
}


# --------------------------------------------------------------------------- the SDKs


def _stainless(failure: Failure) -> dict[str, Any]:
    """openai, anthropic, groq, together, fireworks: the generated client's status errors."""
    sdk = failure.event.name.split(".", 1)[0]
    if failure.fault == "timeout":
        return _record(sdk, "APITimeoutError", "Request timed out.")
    anthropic = sdk == "anthropic"
    kind = {
        "rate_limit": "rate_limit_error" if anthropic else "rate_limit_exceeded",
        "server_error": "api_error" if anthropic else "server_error",
        "overloaded": "overloaded_error",
    }[failure.fault]
    text = {**_WORDING, "overloaded": "Overloaded"}  # Anthropic's own word for a 529
    if anthropic:
        body: Any = {"type": "error", "error": {"type": kind, "message": text[failure.fault]}}
    else:
        body = {"error": {"message": text[failure.fault], "type": kind, "code": kind}}
    qualname = {"rate_limit": "RateLimitError", "server_error": "InternalServerError"}.get(failure.fault)
    # Anthropic has a class of its own for 529; the others map every 5xx to InternalServerError.
    qualname = qualname or ("OverloadedError" if anthropic else "InternalServerError")
    message = f"Error code: {failure.status} - {body}"
    return _record(
        sdk,
        qualname,
        message,
        attrs={"message": message, "status_code": failure.status, "request_id": REQUEST_ID},
        response=_response(failure.status, failure, json.dumps(body)),
        body=body,
    )


def _mistral(failure: Failure) -> dict[str, Any]:
    """mistralai: every non-422 status is an ``SDKError`` keeping the body text and the raw response."""
    if failure.fault == "timeout":
        return _read_timeout("mistral")
    module, qualname = _located("mistralai.client.errors:SDKError", "mistralai.models:SDKError")
    kind, code = {"rate_limit": ("rate_limited", "1300")}.get(failure.fault, ("internal_server_error", None))
    text = json.dumps(
        {"object": "error", "message": _WORDING[failure.fault], "type": kind, "param": None, "code": code}
    )
    if module.startswith("mistralai.models"):  # 1.x: the status and body on lines of their own
        message, short = f"API error occurred: Status {failure.status}\n{text}", "API error occurred"
    else:
        message = short = f"API error occurred: Status {failure.status}. Body: {text}"
    return _record(
        module,
        qualname,
        message,
        attrs={"message": short, "status_code": failure.status, "body": text},
        body=text,
        response=_response(failure.status, failure, text),
    )


_COHERE_CLASSES = {
    429: "cohere.errors.too_many_requests_error:TooManyRequestsError",
    500: "cohere.errors.internal_server_error:InternalServerError",
    503: "cohere.errors.service_unavailable_error:ServiceUnavailableError",
}


def _cohere(failure: Failure) -> dict[str, Any]:
    """cohere (Fern): an ``ApiError`` subclass per status, with the status, headers and parsed body."""
    if failure.fault == "timeout":
        return _read_timeout("cohere")
    module, qualname = _located(_COHERE_CLASSES[failure.status])
    body = {"id": REQUEST_ID, "message": _WORDING[failure.fault]}
    response = _response(failure.status, failure, json.dumps(body))
    record = _record(
        module,
        qualname,
        f"headers: {response['headers']}, status_code: {failure.status}, body: {body}",
        attrs={"status_code": failure.status},
        body=body,
        response=response,
    )
    if failure.status == 429:
        # Older releases (5.13) parse a 429's body into a model of their own; the instrumentor
        # revives it as that model. _located imported its module only if the SDK has it.
        typed = _located("cohere.types.too_many_requests_error_body:TooManyRequestsErrorBody")
        if typed[0] in sys.modules:
            record["body_type"] = f"{typed[0]}:{typed[1]}"
    return record


_GOOGLE_STATUS = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_GOOGLE_WORDING = {
    "rate_limit": "Resource has been exhausted (e.g. check quota).",
    "server_error": "An internal error has occurred. Please retry.",
    "overloaded": "The model is overloaded. Please try again later.",  # what the Gemini API says
}


def _gemini(failure: Failure) -> dict[str, Any]:
    """google-genai: ``errors.ClientError`` (4xx) / ``ServerError`` (5xx) with ``code``, ``status``, ``details``."""
    if failure.fault == "timeout":
        if failure.in_async and _gemini_async_over_aiohttp():
            return _record("builtins", "TimeoutError", "")  # aiohttp's total timeout, as asyncio raises it
        return _read_timeout("gemini")
    status = _GOOGLE_STATUS[failure.status]
    error: dict[str, Any] = {"code": failure.status, "message": _GOOGLE_WORDING[failure.fault], "status": status}
    if failure.retry_after is not None and failure.fault == "rate_limit":
        # The API's own back-off hint: a google.rpc.RetryInfo detail ("30s").
        delay = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{failure.retry_after}s"}
        error["details"] = [delay]
    details = {"error": error}
    qualname = "ClientError" if failure.status < 500 else "ServerError"
    module, qualname = _located(f"google.genai.errors:{qualname}")
    return _record(
        module,
        qualname,
        f"{failure.status} {status}. {details}",
        attrs={"message": error["message"], "status": status, "code": failure.status},
        response=_response(failure.status, failure, json.dumps(details)),
        details=details,
    )


def _gemini_async_over_aiohttp() -> bool:
    """google-genai's async client talks through aiohttp whenever aiohttp is installed (newer releases)."""
    try:
        client = sys.modules.get("google.genai._api_client") or importlib.import_module("google.genai._api_client")
    except Exception:
        return False
    return vars(client).get("has_aiohttp") is True


def _gemini_dropped(failure: Failure) -> dict[str, Any]:
    if failure.in_async and _gemini_async_over_aiohttp():
        module, qualname = _located("aiohttp.client_exceptions:ClientPayloadError")
        message = (
            "Response payload is not completed: <TransferEncodingError: 400, "
            "message='Not enough data to satisfy transfer length header.'>"
        )
        return _record(module, qualname, message)
    return _dropped(failure)


_BEDROCK_OPERATIONS = {
    "bedrock.converse": "Converse",
    "bedrock.converse_stream": "ConverseStream",
    "bedrock.invoke_model": "InvokeModel",
    "bedrock.invoke_model_with_response_stream": "InvokeModelWithResponseStream",
}
_BEDROCK_CODES = {
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an internal error."),
    503: ("ServiceUnavailableException", "The service is overloaded. Please try again later."),
}


def _bedrock(failure: Failure) -> dict[str, Any]:
    """boto3: a ``ClientError`` whose ``response`` has the error code; revived as the client's modeled class."""
    operation = _BEDROCK_OPERATIONS.get(failure.event.name, "Converse")
    if failure.fault == "timeout":
        module, qualname = _located("botocore.exceptions:ReadTimeoutError")
        message = 'Read timeout on endpoint URL: "bedrock-runtime (timed out by rewind mutate)"'
        return _record(module, qualname, message, attrs={"request": None, "response": None})
    code, text = _BEDROCK_CODES[failure.status]
    response = {
        "Error": {"Message": text, "Code": code},
        "message": text,
        "ResponseMetadata": {"RequestId": REQUEST_ID, "HTTPStatusCode": failure.status},
    }
    return _record(
        "botocore.errorfactory",
        code,
        f"An error occurred ({code}) when calling the {operation} operation: {text}",
        attrs={"operation_name": operation},
        aws={"response": response, "operation": operation},
    )


def _litellm(failure: Failure) -> dict[str, Any]:
    """litellm: the class litellm's own exception mapping picks for this route and status (it moved over releases)."""
    provider, model = _litellm_route(failure.event)
    exc = _litellm_mapped(failure, provider, model)
    if exc is None:  # litellm is not installed: name its classes as the newest release maps an OpenAI error
        name = {429: "RateLimitError", 500: "InternalServerError", 503: "ServiceUnavailableError"}.get(
            failure.status, "Timeout"
        )
        message = f"litellm.{name}: {_WORDING.get(failure.fault, 'Request timed out.')}"
        status = failure.status or 408
        response = _response(status, failure, "{}") if failure.status else None
        attrs = {"message": message, "status_code": status, "llm_provider": provider, "model": model}
        return _record("litellm.exceptions", name, message, attrs=attrs, response=response)
    from rewind.instrumentors.litellm import PROVIDER  # the instrumentor's own encoding of litellm errors

    return PROVIDER.error_record(exc)


def _litellm_mapped(failure: Failure, provider: str, model: str) -> Exception | None:
    """The error litellm raises when the provider answers ``failure``: an OpenAI-SDK error run through
    litellm's ``exception_type``, which is how litellm turns every provider's failure into its classes."""
    try:
        import litellm
        import openai
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type

        # openai 3.x is built on httpx2: its errors hold the responses of the library it uses.
        httpx: Any = importlib.import_module(_http_library("openai._base_client"))
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
        body = {"message": _WORDING[failure.fault], "type": kind, "param": None, "code": None}
        status = 529 if failure.fault == "overloaded" and provider == "anthropic" else failure.status
        headers = {"content-type": "application/json", "x-request-id": REQUEST_ID}
        if failure.retry_after is not None:
            headers["retry-after"] = failure.retry_after
        response = httpx.Response(status, headers=headers, json={"error": body}, request=request)
        cls = {429: openai.RateLimitError}.get(status, openai.InternalServerError)
        original = cls(f"Error code: {status} - {{'error': {body}}}", response=response, body=body)
    quiet = litellm.suppress_debug_info
    litellm.suppress_debug_info = True  # its "Give Feedback" banner is for errors the user met
    try:
        exception_type(model=model, original_exception=original, custom_llm_provider=provider)
    except Exception as exc:
        return exc
    finally:
        litellm.suppress_debug_info = quiet
    return None


def _litellm_route(event: Event) -> tuple[str, str]:
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


_GRPC = {
    "rate_limit": ("RESOURCE_EXHAUSTED", "Rate limit exceeded. Please try again later."),
    "server_error": ("INTERNAL", "Internal server error."),
    "overloaded": ("UNAVAILABLE", "The service is overloaded. Please try again later."),
    "timeout": ("DEADLINE_EXCEEDED", "Deadline Exceeded"),
    "connection_reset": ("UNAVAILABLE", "Socket closed"),
}


def _xai(failure: Failure) -> dict[str, Any]:
    """xai-sdk (gRPC): the channel's ``RpcError`` with ``code()`` / ``details()``."""
    code, details = _GRPC[failure.fault]
    # A sync channel raises its private _InactiveRpcError (replayed as grpc.RpcError), grpc.aio AioRpcError.
    module, qualname = _located("grpc.aio:AioRpcError") if failure.in_async else ("grpc._channel", "_InactiveRpcError")
    message = (
        f"<{qualname} of RPC that terminated with:\n"
        f'\tstatus = StatusCode.{code}\n\tdetails = "{details}"\n\tdebug_error_string = "{code}:{details}"\n>'
    )
    return _record(module, qualname, message, grpc={"code": code, "details": details})


# --------------------------------------------------------------------------- a stream cut short


def _sdk(failure: Failure) -> str:
    return failure.event.name.split(".", 1)[0]


def _dropped(failure: Failure) -> dict[str, Any]:
    """mistralai, cohere, google-genai: the HTTP library's error comes through unwrapped."""
    return _transport_dropped(_sdk(failure))


def _stainless_dropped(failure: Failure) -> dict[str, Any]:
    """The generated clients let the transport's error through, except where the stream wraps it
    (``APIConnectionError`` in newer openai releases, whose ``_streaming`` module imports it for that)."""
    sdk = _sdk(failure)
    try:
        streaming = sys.modules.get(f"{sdk}._streaming") or importlib.import_module(f"{sdk}._streaming")
    except Exception:
        streaming = None
    if streaming is not None and "APIConnectionError" in vars(streaming):
        message = "Connection error."
        attrs = {"message": message, "body": None, "code": None, "param": None, "type": None}
        return _record(sdk, "APIConnectionError", message, attrs=attrs)
    return _transport_dropped(sdk)


def _bedrock_dropped(failure: Failure) -> dict[str, Any]:
    """botocore reads an event stream through urllib3, whose error it lets through."""
    module, qualname = _located("urllib3.exceptions:ProtocolError")
    return _record(module, qualname, "Response ended prematurely")


def _litellm_dropped(failure: Failure) -> dict[str, Any]:
    """litellm maps the provider's connection error; newer releases wrap that, with the text
    streamed so far, in ``MidStreamFallbackError`` (its signal that a fallback may take over)."""
    provider, model = _litellm_route(failure.event)
    exc = _litellm_mapped(failure, provider, model)
    if exc is None:
        message = "litellm.APIConnectionError: APIConnectionError: Connection error."
        attrs = {"message": message, "status_code": 500, "llm_provider": provider, "model": model}
        return _record("litellm.exceptions", "APIConnectionError", message, attrs=attrs)
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
    from rewind.instrumentors.litellm import PROVIDER

    return PROVIDER.error_record(exc)


def _xai_dropped(failure: Failure) -> dict[str, Any]:
    return _xai(failure)  # gRPC reports a dropped connection as UNAVAILABLE


@dataclass(frozen=True)
class Delivery:
    """How one SDK delivers the provider faults."""

    #: The record of a status error or a timeout.
    make: Callable[[Failure], dict[str, Any]]
    #: The record of a connection that dropped mid-stream (``Failure.kept``: the chunks before).
    dropped: Callable[[Failure], dict[str, Any]] = _dropped
    #: The status of an "overloaded" answer: 529 where the provider uses it, else its 503.
    overloaded: int = 503


#: SDK (the first part of a recorded call's name) -> how it delivers provider errors.
DELIVERIES: dict[str, Delivery] = {
    **{
        sdk: Delivery(_stainless, _stainless_dropped, overloaded=529)
        for sdk in ("openai", "anthropic", "groq", "together", "fireworks")
    },
    "mistral": Delivery(_mistral),
    "cohere": Delivery(_cohere),
    "gemini": Delivery(_gemini, _gemini_dropped),
    "bedrock": Delivery(_bedrock, _bedrock_dropped),
    "litellm": Delivery(_litellm, _litellm_dropped),
    "xai": Delivery(_xai, _xai_dropped),
}


def sdk_of(event: Event) -> str | None:
    """The instrumented SDK that made this llm call, or ``None``."""
    module = event.name.split(".", 1)[0]
    return module if event.kind == "llm" and module in DELIVERIES else None


def provider_error(fault: str, event: Event, retry_after: str, *, in_async: bool = False) -> dict[str, Any] | None:
    """The error record of ``fault`` at ``event`` as its SDK delivers it, or ``None`` for a step no SDK made."""
    sdk = sdk_of(event)
    if sdk is None:
        method = mcp_method(event)
        return None if method is None else _mcp_error(fault, method)
    delivery = DELIVERIES[sdk]
    status = {"rate_limit": 429, "server_error": 500, "overloaded": delivery.overloaded, "timeout": 0}[fault]
    waits = fault in ("rate_limit", "overloaded")
    return delivery.make(Failure(fault, status, retry_after if waits else None, event, in_async=in_async))


def dropped_stream_error(event: Event, kept: list[Any], *, in_async: bool = False) -> dict[str, Any]:
    """The error an agent iterating ``event``'s stream gets after ``kept`` when the connection drops."""
    sdk = sdk_of(event)
    if sdk is None:  # a stream rewind does not know the SDK of: httpx's error, the common case
        return _record("httpx", "RemoteProtocolError", _PEER_CLOSED)
    return DELIVERIES[sdk].dropped(Failure("connection_reset", 0, None, event, kept, in_async))


# --------------------------------------------------------------------------- MCP


#: The provider faults an MCP request can meet: the JSON-RPC errors its client raises.
MCP_FAULTS = ("server_error", "timeout")


def mcp_session_request(event: Event) -> bool:
    """Whether the step is one of an MCP session's own requests (``mcp.list_tools``,
    ``mcp.initialize`` …), which its name alone tells."""
    from rewind.instrumentors._mcp_requests import PATHS

    return event.name in PATHS


def mcp_method(event: Event) -> str | None:
    """The JSON-RPC method an MCP client step sent (``tools/call`` for a tool call), or ``None``."""
    from rewind.instrumentors._mcp_requests import PATHS, tool_call_step

    if event.name in PATHS:
        return PATHS[event.name]
    if event.kind != "tool" or not event.ok:  # before reading the step's body from the file
        return None
    return "tools/call" if tool_call_step(event.kind, event.name, event.request, event.response) else None


def _mcp_error(fault: str, method: str) -> dict[str, Any] | None:
    """What the installed mcp raises when a request times out (``read_timeout_seconds``) or the
    server answers a JSON-RPC internal error: built with its own classes and recorded as the
    instrumentor records it live. 2.x: ``MCPError(code, message)``, -32001 "Request 'm' timed
    out"; 1.x: ``McpError(ErrorData)`` with HTTP's 408 and its "Timed out while waiting" text."""
    if fault not in MCP_FAULTS:
        return None
    internal = (-32603, "Internal error")  # JSON-RPC's internal error, in every release
    code, message = (-32001, f"Request {method!r} timed out") if fault == "timeout" else internal
    try:
        from mcp.shared import exceptions
    except Exception:  # mcp is not installed: the newest layout, replayed as a ReplayedError
        error = {"code": code, "message": message}
        return _record("mcp.shared.exceptions", "MCPError", message, args=[code, message, None], mcp_error=error)
    from rewind.instrumentors.mcp import mcp_error_record

    modern = getattr(exceptions, "MCPError", None)
    if isinstance(modern, type):  # mcp 2.x
        return mcp_error_record(modern(code=code, message=message))
    from mcp.types import ErrorData

    if fault == "timeout":
        code, message = 408, "Timed out while waiting for response to ClientRequest. Waited 60.0 seconds."
    return mcp_error_record(exceptions.McpError(ErrorData(code=code, message=message)))  # type: ignore[attr-defined]
