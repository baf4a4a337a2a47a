"""The bounded ``e.response`` of an HTTP error, as trace data and as a replay shim.

An exception carrying an HTTP response (an SDK's ``APIStatusError``, an
``httpx.HTTPStatusError`` raised inside a tool …) is recorded with the response's status
code, its headers minus credentials, and its text. At replay the error gets a
``ReplayedHTTPResponse`` with ``status_code``, ``headers`` (so ``retry-after`` backoff
reproduces), ``.text`` and ``.json()``; anything richer was never recorded, and asking
for it raises an ``AttributeError`` that says so.

When the SDK's HTTP library is at hand (every httpx-based SDK), ``http_response`` builds a
real ``httpx.Response`` instead, bound to a real ``httpx.Request`` (the method and URL the
call went to, no headers, so no credentials): framework and user handlers that read
``e.request.url`` or hand ``e.response`` on (whose ``.request`` the SDK reads) run unchanged.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from collections.abc import Mapping
from typing import Any

#: Response headers never written to a trace (credentials and cookies), by exact name.
SECRET_HEADERS = frozenset(
    {
        "set-cookie",
        "cookie",
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "openai-api-key",
        "x-goog-api-key",
        "x-auth-token",
        "x-amz-security-token",
    }
)
# ... and by shape: a server or proxy that echoes a credential back under its own name.
_SECRET_SUFFIXES = ("-key", "-token", "-secret", "-password", "-credentials")
_SECRET_PARTS = ("authorization", "cookie", "api-key", "apikey")


#: Query parameter (and header) names that carry a credential on their own.
_SECRET_NAMES = frozenset({"key", "token", "auth", "sig", "signature", "password", "secret", "credentials"})


def is_secret_header(name: str) -> bool:
    """A header (or query parameter) name that carries a credential: never recorded."""
    lowered = name.lower().replace("_", "-")
    if lowered.startswith("access-control-"):
        return False  # CORS policy (access-control-allow-credentials …) names credentials, carries none
    return (
        lowered in SECRET_HEADERS
        or lowered in _SECRET_NAMES
        or lowered.endswith(_SECRET_SUFFIXES)
        or any(part in lowered for part in _SECRET_PARTS)
    )


def without_secrets(params: Mapping[Any, Any]) -> dict[Any, Any]:
    """``params`` (query parameters, say) minus the entries named like credentials."""
    return {key: value for key, value in params.items() if not is_secret_header(str(key))}


def keep_headers(headers: Any) -> dict[str, str]:
    """Response headers worth replaying (``retry-after``, request ids …), secrets dropped."""
    out: dict[str, str] = {}
    if headers is None:
        return out
    try:
        items = headers.multi_items() if hasattr(headers, "multi_items") else headers.items()
        for key, value in items:
            name = str(key).lower()
            if is_secret_header(name):
                continue
            out[name] = f"{out[name]}, {value}" if name in out else str(value)
    except Exception:  # an odd headers object only costs us the headers
        return out
    return out


def response_record(exc: BaseException) -> dict[str, Any] | None:
    """The bounded record of ``exc.response``, or ``None`` when it has no HTTP response."""
    try:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
    except Exception:  # a property that raises: no response to record
        return None
    if not isinstance(status, int) or isinstance(status, bool):
        return None
    try:
        text = response.text  # type: ignore[union-attr]
    except Exception:  # a streamed body that was never read
        text = ""
    try:
        headers = getattr(response, "headers", None)
    except Exception:
        headers = None
    return bounded_response(status, headers, text)


def bounded_response(status: int, headers: Any, text: Any) -> dict[str, Any]:
    """What a trace keeps of an HTTP response: status, headers minus credentials, text."""
    return {"status_code": status, "headers": keep_headers(headers), "text": text if isinstance(text, str) else ""}


def _unavailable(what: str, name: str) -> AttributeError:
    return AttributeError(
        f"{what}.{name} is not available on an error replayed by rewind: only status_code, headers, "
        "text and json() of the HTTP response were recorded (the live connection never was)."
    )


class ReplayedHTTPResponse:
    """Stands in for ``e.response`` of a replayed HTTP error."""

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
        if name.startswith("__"):
            raise AttributeError(name)  # protocol lookups (pickle, copy) get a plain miss
        raise _unavailable("e.response", name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReplayedHTTPResponse, (self.status_code, self._headers, self._text))

    def __repr__(self) -> str:
        return f"<ReplayedHTTPResponse [{self.status_code}] (rewind)>"


class Unrecorded:
    """Stands in for ``e.request``: nothing of it was recorded."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unavailable(self._what, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Unrecorded, (self._what,))

    def __repr__(self) -> str:
        return f"<{self._what} (not recorded by rewind)>"


def http_response(record: Mapping[str, Any], httpx: Any, method: str, url: str) -> Any:
    """A real ``httpx.Response`` with the recorded status, headers and body, bound to a real
    ``httpx.Request(method, url)`` (credentials in the URL's query dropped).

    The recorded text is the decoded body: a recorded ``content-encoding`` the standard
    library can produce is applied again, so headers and body agree as they did live.
    """
    raw_headers = record.get("headers")
    headers = {str(k): str(v) for k, v in raw_headers.items()} if isinstance(raw_headers, Mapping) else {}
    text = record.get("text")
    body = (text if isinstance(text, str) else "").encode("utf-8")
    body = encode_body(body, headers)
    status = record.get("status_code")
    request = httpx.Request(method, public_url(httpx, url))
    return httpx.Response(
        status if isinstance(status, int) and not isinstance(status, bool) else 0,
        headers=headers,
        content=body,
        request=request,
    )


def encode_body(body: bytes, headers: dict[str, str]) -> bytes:
    """``body`` encoded as the recorded ``content-encoding`` says (httpx decodes it again).

    An encoding the standard library cannot produce is dropped from ``headers``: the body
    then goes as it was decoded.
    """
    name = next((k for k in headers if k.lower() == "content-encoding"), None)
    encoding = headers[name].strip().lower() if name else ""
    if encoding == "gzip":
        return gzip.compress(body, mtime=0)
    if encoding == "deflate":
        return zlib.compress(body)
    if name is not None:
        del headers[name]
    return body


def public_url(httpx: Any, url: str) -> Any:
    """``url`` as an ``httpx.URL`` without the query parameters that carry credentials."""
    parsed = httpx.URL(url)
    params = parsed.params
    if any(is_secret_header(str(key)) for key in params):
        parsed = parsed.copy_with(params=[(k, v) for k, v in params.multi_items() if not is_secret_header(str(k))])
    return parsed


def bind_request(
    exc: BaseException, httpx: Any, method: str, url: str, carries_request: tuple[type, ...] = ()
) -> BaseException:
    """Give a replayed error whose ``e.response`` is the shim a real ``httpx`` response and
    request (``http_response``). An error with no recorded response that is one of
    ``carries_request`` (an SDK's errors that always hold the request, a failure mid-stream
    say) gets the request alone. Anything else is returned untouched."""
    shim = getattr(exc, "response", None)
    if httpx is None:
        return exc
    if not isinstance(shim, ReplayedHTTPResponse):
        if carries_request and isinstance(exc, carries_request) and "request" not in vars(exc):
            try:
                exc.request = httpx.Request(method, public_url(httpx, url))  # type: ignore[attr-defined]
            except Exception:  # a read-only property, an odd URL: as before
                pass
        return exc
    try:
        record = {"status_code": shim.status_code, "headers": dict(shim.headers.items()), "text": shim.text}
        response = http_response(record, httpx, method, url)
    except Exception:  # an odd record keeps the shim
        return exc
    try:
        exc.response = response  # type: ignore[attr-defined]
        if isinstance(getattr(exc, "request", None), Unrecorded):
            exc.request = response.request  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass  # a read-only property on the original class
    return exc


def replayed_response(record: Mapping[str, Any], httpx: Any = None) -> ReplayedHTTPResponse:
    """The shim for a recorded response; headers are case-insensitive when httpx is loaded."""
    raw_headers = record.get("headers")
    plain = {str(k): str(v) for k, v in raw_headers.items()} if isinstance(raw_headers, Mapping) else {}
    headers: Any = plain
    module = httpx if httpx is not None else sys.modules.get("httpx")  # never imported for this
    if module is not None:
        try:
            headers = module.Headers(plain)  # case-insensitive, like the live one
        except Exception:
            headers = plain
    status = record.get("status_code")
    text = record.get("text")
    return ReplayedHTTPResponse(
        status if isinstance(status, int) and not isinstance(status, bool) else 0,
        headers,
        text if isinstance(text, str) else "",
    )
