"""Span attributes every provider shares: the client's server, and sampling parameters.

``server_attributes`` reads ``server.address``/``server.port`` from a Stainless client's
httpx base URL (cached per client), ``url_server_attributes`` from a URL string (SDKs
that keep no httpx URL), and ``parameter_attributes`` maps a provider's sampling
parameters onto the GenAI request attributes.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

_SERVERS: weakref.WeakKeyDictionary[Any, tuple[Any, dict[str, Any]]] = weakref.WeakKeyDictionary()


def parameter_attributes(
    params: Mapping[str, Any], table: Sequence[tuple[str, str]], *, stop: str | None = None
) -> dict[str, Any]:
    """GenAI request attributes of a provider's sampling parameters.

    ``table`` maps parameter names to attribute names (numbers only, never booleans);
    ``stop`` names the parameter that holds the stop sequences (one string or a list).
    """
    attrs: dict[str, Any] = {}
    for key, attr in table:
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[attr] = value
    if stop is not None:
        sequences = params.get(stop)
        if isinstance(sequences, str):
            attrs["gen_ai.request.stop_sequences"] = [sequences]
        elif isinstance(sequences, list) and all(isinstance(s, str) for s in sequences):
            attrs["gen_ai.request.stop_sequences"] = sequences
    return attrs


def url_server_attributes(url: Any) -> dict[str, Any]:
    """``server.address`` / ``server.port`` of a base URL string (SDKs that keep no httpx URL)."""
    try:
        parts = urlsplit(str(url or ""))
        host, port = parts.hostname, parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # not a URL, or a port out of range
        return {}
    if not host:
        return {}
    return {"server.address": host, "server.port": port} if port is not None else {"server.address": host}


def server_attributes(instance: Any) -> dict[str, Any]:
    """``server.address`` / ``server.port`` from the client's ``base_url`` (cached per client)."""
    client = getattr(instance, "_client", None)
    url = getattr(client, "base_url", None)
    try:
        cached = _SERVERS.get(client)
    except TypeError:  # not weak-referenceable
        cached = None
    if cached is not None and cached[0] is url:
        return cached[1]
    attrs: dict[str, Any] = {}
    host = getattr(url, "host", None)
    if host:
        attrs["server.address"] = host
        port = getattr(url, "port", None)
        if port is None:
            port = {"https": 443, "http": 80}.get(str(getattr(url, "scheme", "")))
        if isinstance(port, int):
            attrs["server.port"] = port
    try:
        _SERVERS[client] = (url, attrs)
    except TypeError:
        pass
    return attrs
