"""An exception's text, kept free of the credentials its request carried.

A provider, a gateway or a proxy may quote the API key it was sent in its error message
or body ("Incorrect API key provided: sk-…"). rewind records that error as a step and
puts it on the call's span, and from there it would reach the trace file and every
exporter. The failed request itself says what the credentials were: the values of its
credential-named headers (``Authorization``, ``x-api-key``, ``api-key``, …) and query
parameters (``?key=``). Those exact strings are replaced wherever the error's record
holds them, before ``redact=`` sees it; the span then gets the cleaned message and no
stack trace (a traceback ends with the raw message).

Only what the request carried is known here: a secret that reaches an exception some
other way (a tool's own error text) is ``redact=``'s to remove.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from ._http_error import is_secret_header
from .replayed_error import encode_error

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


__all__ = ["REMOVED", "annotate", "exported_message", "request_credentials", "without_credentials"]
