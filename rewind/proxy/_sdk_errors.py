"""A provider's error answer as the error its Python SDK raises, recorded as its instrumentor does.

A trace recorded through the proxy must replay in a Python agent as one recorded by the
SDK: ``openai.RateLimitError`` with the SDK's own message, attributes and body. When the
SDK is installed beside the proxy, the answer is handed to the SDK's own error factory
(what its client does with an error response or an error event) and the instrumentor's
``error_record`` writes it; without the SDK, the caller writes a record of the same shape
by hand. Only the Stainless SDKs (openai, anthropic) have one factory for every status.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import Any

_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()
_CLASSES = {"openai": "OpenAI", "anthropic": "Anthropic"}


def _sdk(provider: str) -> tuple[Any, Any] | None:
    """``(client, instrumentor provider)`` for a Stainless SDK that is installed, else ``None``."""
    if provider not in _CLASSES:
        return None
    with _LOCK:
        if provider not in _CLIENTS:
            try:
                module = importlib.import_module(provider)
                client = getattr(module, _CLASSES[provider])(api_key="rewind-proxy", base_url="http://127.0.0.1")
                strategy = importlib.import_module(f"rewind.instrumentors.{provider}").PROVIDER
                _CLIENTS[provider] = (client, strategy)
            except Exception:  # not installed, or not the SDK we know: records are written by hand
                _CLIENTS[provider] = None
        return _CLIENTS[provider]


def _response(strategy: Any, status: int, headers: Mapping[str, str], body: bytes, url: str) -> Any:
    from rewind.instrumentors._kit import httpx_response

    content_type = headers.get("content-type", "application/json")
    return httpx_response(
        strategy.kit.httpx, url=url, status_code=status, body=body, content_type=content_type, headers=headers
    )


def status_error(
    provider: str, status: int, headers: Mapping[str, str], body: bytes, url: str
) -> dict[str, Any] | None:
    """The record of the error the SDK raises for an HTTP error answer (``None``: no SDK here)."""
    sdk = _sdk(provider)
    if sdk is None:
        return None
    client, strategy = sdk
    try:
        exc = client._make_status_error_from_response(_response(strategy, status, headers, body, url))
        return dict(strategy.error_record(exc))
    except Exception:  # the SDK's internals moved: the hand-written record stands in
        return None


def stream_error(provider: str, data: Any, status: int, headers: Mapping[str, str], url: str) -> dict[str, Any] | None:
    """The record of the error the SDK raises at an error event in a stream (``None``: no SDK here)."""
    sdk = _sdk(provider)
    if sdk is None or not isinstance(data, dict):
        return None
    client, strategy = sdk
    try:
        response = _response(strategy, status, headers, b"", url)
        if provider == "anthropic":
            exc = client._make_status_error(f"{data}", body=data, response=response)
        else:
            import openai

            inner = data.get("error")
            if not isinstance(inner, dict):
                return None
            message = inner.get("message") or "An error occurred during streaming"
            exc = openai.APIError(message=message, request=response.request, body=inner)
        return dict(strategy.error_record(exc))
    except Exception:  # the SDK's internals moved: the hand-written record stands in
        return None
