"""Provider faults as the Stainless-generated SDKs deliver them (openai, anthropic, groq, together, fireworks).

The generated clients raise one status-error class per status (``RateLimitError``,
``InternalServerError``, anthropic's ``OverloadedError`` for 529) carrying the parsed body,
the response and its request id, and ``APITimeoutError`` for a timeout; see
``_fault_records`` for how a record becomes the SDK's exception at replay.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

from rewind.engine.providers import Failure, Faults

from ._fault_records import REQUEST_ID, WORDING, record, response, transport_dropped


def _sdk(failure: Failure) -> str:
    return failure.event.name.split(".", 1)[0]


def status_error(failure: Failure) -> dict[str, Any]:
    """The generated client's status error (or its timeout) for ``failure``."""
    sdk = _sdk(failure)
    if failure.fault == "timeout":
        return record(sdk, "APITimeoutError", "Request timed out.")
    anthropic = sdk == "anthropic"
    kind = {
        "rate_limit": "rate_limit_error" if anthropic else "rate_limit_exceeded",
        "server_error": "api_error" if anthropic else "server_error",
        "overloaded": "overloaded_error",
    }[failure.fault]
    text = {**WORDING, "overloaded": "Overloaded"}  # Anthropic's own word for a 529
    if anthropic:
        body: Any = {"type": "error", "error": {"type": kind, "message": text[failure.fault]}}
    else:
        body = {"error": {"message": text[failure.fault], "type": kind, "code": kind}}
    qualname = {"rate_limit": "RateLimitError", "server_error": "InternalServerError"}.get(failure.fault)
    # Anthropic has a class of its own for 529; the others map every 5xx to InternalServerError.
    qualname = qualname or ("OverloadedError" if anthropic else "InternalServerError")
    message = f"Error code: {failure.status} - {body}"
    return record(
        sdk,
        qualname,
        message,
        attrs={"message": message, "status_code": failure.status, "request_id": REQUEST_ID},
        response=response(failure.status, failure, json.dumps(body)),
        body=body,
    )


def dropped(failure: Failure) -> dict[str, Any]:
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
        return record(sdk, "APIConnectionError", message, attrs=attrs)
    return transport_dropped(f"{sdk}._base_client")


#: How every Stainless-generated SDK delivers provider faults (they answer "overloaded" with 529).
STAINLESS_FAULTS = Faults(status_error, dropped, overloaded=529)
