"""Provider errors as trace data, and raised again at replay with a bounded ``e.response``.

A recorded ``openai.RateLimitError`` (or any ``APIStatusError``) replays as a
``ReplayedError`` that also subclasses the original class, so ``except
openai.RateLimitError:`` catches it. It carries the recorded scalars (``status_code``,
``code``, ``param``, ``type``, ``request_id``), the structured ``body``, and an
``e.response`` shim with ``status_code``, ``headers`` (so ``retry-after`` backoff
reproduces) and ``.text`` / ``.json()``. Everything richer was never recordable: asking
for it raises an ``AttributeError`` that says so and names rewind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rewind.canonical import to_jsonable
from rewind.errors import ReplayedError
from rewind.replayed_error import decode_error, encode_error

from ._stainless import keep_headers


def _unavailable(what: str, name: str) -> AttributeError:
    return AttributeError(
        f"{what}.{name} is not available on an error replayed by rewind: only status_code, headers, "
        "text and json() of the HTTP response were recorded (the live connection never was)."
    )


class ReplayedHTTPResponse:
    """Stands in for ``e.response`` of a replayed provider error."""

    __slots__ = ("_headers", "_text", "status_code")

    def __init__(self, status_code: int, headers: Any, text: str) -> None:
        self.status_code = status_code
        self._headers = headers
        self._text = text

    @property
    def headers(self) -> Any:
        return self._headers

    @property
    def text(self) -> str:
        return self._text

    @property
    def content(self) -> bytes:
        return self._text.encode("utf-8")

    @property
    def is_error(self) -> bool:
        return self.status_code >= 400

    def json(self) -> Any:
        return json.loads(self._text)

    def __getattr__(self, name: str) -> Any:
        raise _unavailable("e.response", name)

    def __repr__(self) -> str:
        return f"<ReplayedHTTPResponse [{self.status_code}] (rewind)>"


class _Unrecorded:
    """Stands in for ``e.request``: nothing of it was recorded."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise _unavailable(self._what, name)

    def __repr__(self) -> str:
        return f"<{self._what} (not recorded by rewind)>"


def error_record(exc: BaseException) -> dict[str, Any]:
    """``encode_error`` plus what a provider error carries beyond scalars."""
    record = encode_error(exc)
    body = getattr(exc, "body", None)
    if body is not None:
        record["body"] = to_jsonable(body)
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        try:
            text = response.text  # type: ignore[union-attr]
        except Exception:  # a streamed body that was never read
            text = ""
        record["response"] = {
            "status_code": status,
            "headers": keep_headers(getattr(response, "headers", None)),
            "text": text if isinstance(text, str) else "",
        }
    return record


def revive_error(record: Mapping[str, Any], step: int, *, httpx: Any = None) -> ReplayedError:
    """The exception recorded as ``record``, ready to raise again."""
    exc = decode_error(dict(record), step)
    if "body" in record:
        _set(exc, "body", record["body"])
    response = record.get("response")
    if isinstance(response, Mapping):
        raw_headers = response.get("headers") or {}
        headers: Any = dict(raw_headers)
        if httpx is not None:
            try:
                headers = httpx.Headers(raw_headers)  # case-insensitive, like the live one
            except Exception:
                headers = dict(raw_headers)
        status = int(response.get("status_code") or 0)
        _set(exc, "response", ReplayedHTTPResponse(status, headers, str(response.get("text") or "")))
        if "request" not in (record.get("attrs") or {}):
            _set(exc, "request", _Unrecorded("e.request"))
    return exc


def _set(exc: BaseException, name: str, value: Any) -> None:
    try:
        setattr(exc, name, value)
    except (AttributeError, TypeError):
        pass  # a read-only property on the original class
