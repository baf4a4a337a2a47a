"""The pieces every SDK's fault builder is made of: error records as an instrumentor writes them.

A provider fault (rate limit, server error, overloaded, timeout, a stream whose connection
drops) is injected as an error record shaped like the one the SDK's instrumentor writes
when it records that failure live, so the instrumentor revives it as the SDK's own
exception class with the attributes an agent's retry code reads (status, ``retry-after``,
error code). Each provider module builds its own (its ``DECLARATION.faults``) from these.

Where the answer depends on the installed release (an error module that moved, the HTTP
library behind a timeout or a dropped stream), the installed SDK is asked: only the fixed
candidates of a builder are imported, never a name from a trace. Without the SDK installed
the newest layout is named, and the error replays as a plain ``ReplayedError``.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from rewind.engine.providers import Failure

REQUEST_ID = "req_rewind_fault"
PEER_CLOSED = "peer closed connection without sending complete message body (incomplete chunked read)"

#: What each fault says, where the SDK has no wording of its own.
WORDING = {
    "rate_limit": "Rate limit reached.",
    "server_error": "Internal server error.",
    "overloaded": "The service is overloaded. Please try again later.",
}


@functools.cache
def located(*candidates: str) -> tuple[str, str]:
    """``(module, qualname)`` of the first ``"module:Name"`` the installed SDK has, as a live record names it.

    Only the given fixed candidates are imported (never a name from a trace); the class's
    own ``__module__`` is what a live recording writes.
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
def http_library(*client_modules: str) -> str:
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


def record(module: str, qualname: str, message: str, **extra: Any) -> dict[str, Any]:
    """An error record naming ``module.qualname``; ``extra`` keys that are ``None`` are left out."""
    shaped: dict[str, Any] = {"type": f"{module}.{qualname}", "module": module, "qualname": qualname}
    shaped["message"] = message
    shaped.update({key: value for key, value in extra.items() if value is not None})
    return shaped


def response(status: int, failure: Failure, text: str, **headers: str) -> dict[str, Any]:
    """The bounded HTTP response a recorded status error keeps (``e.response`` at replay)."""
    kept = {"content-type": "application/json", "x-request-id": REQUEST_ID, **headers}
    if failure.retry_after is not None:
        kept["retry-after"] = failure.retry_after
    return {"status_code": status, "headers": kept, "text": text}


def read_timeout(*client_modules: str) -> dict[str, Any]:
    """The transport's read timeout, raised through the SDK unwrapped (as mistralai, cohere and google-genai do)."""
    library = http_library(*client_modules)
    if library == "requests":
        module, qualname = located("requests.exceptions:ReadTimeout")
        message = "Read timed out. (read timeout=60)"
        return record(module, qualname, message, attrs={"response": None})
    module, qualname = located(f"{library}:ReadTimeout")
    return record(module, qualname, "timed out")


def transport_dropped(*client_modules: str) -> dict[str, Any]:
    """A body that stopped short, as the SDK's HTTP library reports it (recorded live through a dropping proxy)."""
    library = http_library(*client_modules)
    if library == "requests":
        module, qualname = located("requests.exceptions:ChunkedEncodingError")
        return record(module, qualname, "Response ended prematurely", attrs={"response": None, "request": None})
    module, qualname = located(f"{library}:RemoteProtocolError")
    return record(module, qualname, PEER_CLOSED)


def httpx_dropped() -> dict[str, Any]:
    """httpx's error for a body cut short: what a stream of an SDK rewind does not know gets."""
    return record("httpx", "RemoteProtocolError", PEER_CLOSED)
