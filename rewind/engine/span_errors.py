"""An exception's text, kept free of the credentials its request carried.

A provider, a gateway or a proxy may quote the API key it was sent in its error message
or body ("Incorrect API key provided: sk-…"). rewind records that error as a step and
puts it on the call's span, and from there it would reach the trace file and every
exporter. The failed request itself says what the credentials were: the values of its
credential-named headers (``Authorization``, ``x-api-key``, ``api-key``, …) and query
parameters (``?key=``). Those exact strings are replaced wherever the error's record
holds them, before ``redact=`` sees it; the span then gets the cleaned message and no
stack trace (a traceback ends with the raw message).

Newer SDK releases strip those headers from the request they keep on the error (openai
3.x does), so the request is only one source. The credentials rewind can know are all
removed, wherever an SDK release keeps them: the failed request's (``request_credentials``),
the client's that made the call (``client_credentials``: its API key, auth headers,
credential-named default headers and query parameters), and the values of the
environment variables SDKs read keys from (``environment_credentials``). A session
remembers the credentials of its failed calls, so the error that ends the run is cleaned
the same way on the run's span.

A secret that reaches an exception some other way (a tool's own error text) is
``redact=``'s to remove.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from rewind.data.http_error import is_secret_header
from rewind.data.replayed_error import encode_error

from .placeholder_keys import PLACEHOLDER

#: What a credential found in an error is replaced with.
REMOVED = "[credential removed by rewind]"
# Shorter values are not credentials worth the risk of rewriting ordinary words.
_MIN_LENGTH = 8
_SCHEMES = ("bearer ", "basic ", "token ", "key ")


def request_credentials(exc: BaseException) -> frozenset[str]:
    """The credentials the request that failed with ``exc`` carried (empty when ``exc``
    names no HTTP request, the common case of a tool's own error)."""
    found: set[str] = set()
    for request in _requests(exc):
        try:
            headers = request.headers
            items = headers.multi_items() if hasattr(headers, "multi_items") else headers.items()
            _collect(found, ((str(name), value) for name, value in items))
            url = getattr(request, "url", None)
            params = getattr(url, "params", None)
            if params is not None:
                _collect(found, ((str(name), value) for name, value in params.multi_items()))
        except Exception:  # an odd request object only costs us what it would have told
            continue
    return frozenset(found)


#: Environment variables provider SDKs read credentials from (besides the pattern below).
ENVIRONMENT_KEYS = (
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "MISTRAL_API_KEY",
    "CO_API_KEY",
    "COHERE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "XAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "HF_TOKEN",
)
# Any other provider's key variable, by its shape (LiteLLM reads dozens: DEEPSEEK_API_KEY, ...).
_ENVIRONMENT_KEY = re.compile(r"(_API_KEY|_AUTH_TOKEN|_ACCESS_TOKEN|_SECRET_ACCESS_KEY|_SESSION_TOKEN)$")
#: Values that are not credentials (rewind's own placeholder for keyless replays).
_NOT_CREDENTIALS = frozenset({PLACEHOLDER})

# Where SDK clients keep what they authenticate with: followed from the object that made
# the call (a resource such as ``client.chat.completions``) a few links deep.
_CLIENT_LINKS = ("_client", "_client_wrapper", "_api_client", "sdk_configuration", "security", "client")
_KEY_ATTRIBUTES = (
    "api_key",
    "_api_key",
    "auth_token",
    "bearer_token",
    "access_token",
    "_azure_ad_token",
    "token",
    "_token",
)
_HEADER_ATTRIBUTES = ("auth_headers", "_custom_headers", "default_headers", "custom_headers", "_headers")
_QUERY_ATTRIBUTES = ("_custom_query", "default_query")
_MAX_LINKS = 3


def environment_credentials(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values of the credential variables set in the environment."""
    env = os.environ if environ is None else environ
    found: set[str] = set()
    for name, value in list(env.items()):
        if name in ENVIRONMENT_KEYS or _ENVIRONMENT_KEY.search(name):
            _add(found, value)
    return frozenset(found)


def client_credentials(source: Any) -> frozenset[str]:
    """What the SDK client behind ``source`` authenticates with (empty when nothing is found)."""
    found: set[str] = set()
    seen: set[int] = set()
    layer = [source]
    for _ in range(_MAX_LINKS + 1):
        following: list[Any] = []
        for owner in layer:
            if owner is None or id(owner) in seen or isinstance(owner, (str, bytes, int, float)):
                continue
            seen.add(id(owner))
            for name in _KEY_ATTRIBUTES:
                _add(found, _attribute(owner, name))
            for name in (*_HEADER_ATTRIBUTES, *_QUERY_ATTRIBUTES):
                pairs = _attribute(owner, name)
                if isinstance(pairs, Mapping):
                    try:
                        _collect(found, ((str(key), value) for key, value in pairs.items()))
                    except Exception:  # an odd mapping only costs us what it would have told
                        pass
            following.extend(_attribute(owner, name) for name in _CLIENT_LINKS)
        layer = following
    return frozenset(found)


def _add(found: set[str], value: Any) -> None:
    if isinstance(value, str):
        value = value.strip()
        if len(value) >= _MIN_LENGTH and value not in _NOT_CREDENTIALS:
            found.add(value)


def _requests(exc: BaseException) -> Iterable[Any]:
    for owner, attribute in ((exc, "request"), (_attribute(exc, "response"), "request")):
        request = _attribute(owner, attribute)
        if request is not None and hasattr(request, "headers"):
            yield request


def _attribute(owner: Any, name: str) -> Any:
    if owner is None:
        return None
    try:
        return getattr(owner, name, None)
    except Exception:  # httpx raises RuntimeError for a response built without its request
        return None


def _collect(found: set[str], pairs: Iterable[tuple[str, Any]]) -> None:
    for name, value in pairs:
        if not isinstance(value, str) or not is_secret_header(name):
            continue
        value = value.strip()
        lowered = value.lower()
        for scheme in _SCHEMES:
            if lowered.startswith(scheme):
                token = value[len(scheme) :].strip()
                if len(token) >= _MIN_LENGTH:
                    found.add(token)
        if len(value) >= _MIN_LENGTH:
            found.add(value)


def without_credentials(value: Any, credentials: frozenset[str]) -> Any:
    """``value`` (JSON data) with every credential in its strings (and keys) replaced."""
    if not credentials:
        return value
    # Longest first: a header's "Bearer sk-…" goes whole before its token alone.
    ordered = sorted(credentials, key=len, reverse=True)
    return _replace(value, ordered)


def _replace(value: Any, credentials: list[str]) -> Any:
    if isinstance(value, str):
        for credential in credentials:
            if credential in value:
                value = value.replace(credential, REMOVED)
        return value
    if isinstance(value, Mapping):
        return {_replace(key, credentials): _replace(item, credentials) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_replace(item, credentials) for item in value]
    return value


def exported_message(
    exc: BaseException,
    record: Mapping[str, Any] | None,
    redact: Callable[[Any], Any] | None,
    credentials: frozenset[str],
) -> str | None:
    """The message a span may carry for ``exc``: ``None`` when its own text may go out as
    it is (no ``redact=``, no credential in it), else the recorded, cleaned message."""
    if redact is None and not credentials:
        return None
    if record is None:
        record = without_credentials(encode_error(exc), credentials)
        if redact is not None:
            try:
                record = redact(record)
            except Exception:
                record = None
    message = record.get("message") if isinstance(record, Mapping) else None
    return message if isinstance(message, str) else "(message withheld: redact= could not scrub it)"


def annotate(span: Span, exc: BaseException, message: str | None) -> None:
    """Put ``exc`` on ``span``: as OpenTelemetry records an exception when ``message`` is
    ``None``, else its type and ``message`` alone (no stack trace, which ends with the raw text)."""
    if message is None:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:256]))
        return
    span.add_event(
        "exception",
        {"exception.type": type(exc).__qualname__, "exception.message": message, "exception.escaped": "False"},
    )
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"[:256]))


__all__ = [
    "REMOVED",
    "annotate",
    "client_credentials",
    "environment_credentials",
    "exported_message",
    "request_credentials",
    "without_credentials",
]
