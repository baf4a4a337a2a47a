"""Provider errors as trace data, and raised again at replay with a bounded ``e.response``.

A recorded ``openai.RateLimitError`` (or any ``APIStatusError``) replays as a
``ReplayedError`` that also subclasses the original class, so ``except
openai.RateLimitError:`` catches it. It carries the recorded scalars (``status_code``,
``code``, ``param``, ``type``, ``request_id``), the structured ``body``, and an
``e.response`` shim with ``status_code``, ``headers`` (so ``retry-after`` backoff
reproduces) and ``.text`` / ``.json()``. Everything richer was never recordable: asking
for it raises an ``AttributeError`` that says so and names rewind.

The response shim is the core's (``rewind._http_error``): a decorated tool that raised an
HTTP client error replays with the same one. What is provider-specific is the ``body``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rewind.data.canonical import to_jsonable
from rewind.data.http_error import ReplayedHTTPResponse, Unrecorded, bounded_response, keep_headers
from rewind.data.replayed_error import decode_error, encode_error
from rewind.errors import ReplayedError

__all__ = ["ReplayedHTTPResponse", "Unrecorded", "add_response", "error_record", "keep_headers", "revive_error"]


def error_record(exc: BaseException) -> dict[str, Any]:
    """``encode_error`` (class, message, scalars, bounded response) plus the error's body."""
    record = encode_error(exc)
    try:
        body = getattr(exc, "body", None)
    except Exception:  # a property that raises only costs us the body
        body = None
    if body is not None:
        record["body"] = to_jsonable(body, where="error.body")
    return record


def add_response(record: dict[str, Any], status: Any, headers: Any, text: Callable[[], Any]) -> None:
    """Give ``record`` the bounded response an error keeps as its own fields, not as ``e.response``.

    Fern, Speakeasy and google-genai errors carry the status, headers and body beside
    (or instead of) an HTTP response ``encode_error`` can read; a record that already has
    one keeps it. ``text`` is called only when needed (a streamed body may never be read).
    """
    if "response" in record or not isinstance(status, int) or isinstance(status, bool):
        return
    try:
        body = text()
    except Exception:  # a streamed body that was never read
        body = ""
    record["response"] = bounded_response(status, headers, body)


def revive_error(record: Mapping[str, Any], step: int, *, httpx: Any = None) -> ReplayedError:
    """The exception recorded as ``record``, ready to raise again."""
    exc = decode_error(record, step, httpx=httpx)
    if "body" in record:
        try:
            exc.body = record["body"]  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass  # a read-only property on the original class
    return exc
