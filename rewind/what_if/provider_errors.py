"""Provider errors as each instrumented SDK delivers them: the records ``rewind mutate`` injects.

A provider fault (rate limit, server error, overloaded, timeout, a stream whose connection
drops) is an error record shaped like the one the SDK's instrumentor writes when it
records that failure live, so the instrumentor revives it as the SDK's own exception
class with the attributes an agent's retry code reads (status, ``retry-after``, error
code). This module is the generic part: it finds the provider that made a step (the first
part of its name) and asks that provider's declaration (``ProviderSpec.faults``, built in
``instrumentors/<provider>.py``) for the record. The shapes were taken from real errors
recorded against the stub server, at the newest releases and at the floors in
``compat/``; docs/what-if.md lists the class each SDK gets for each fault. MCP requests,
which are tool steps rather than a provider's llm calls, get the JSON-RPC errors the mcp
client raises.
"""

from __future__ import annotations

from typing import Any

from rewind.engine.providers import Failure, ProviderSpec, provider_of
from rewind.instrumentors._fault_records import httpx_dropped
from rewind.instrumentors._mcp_requests import PATHS, tool_call_step
from rewind.storage.trace import Event

#: The status each fault answers with (an "overloaded" answer: the provider's own, see ``Faults``).
_STATUS = {"rate_limit": 429, "server_error": 500, "timeout": 0}


def _faulty(event: Event) -> ProviderSpec | None:
    """The declaration of the provider whose SDK made this llm call, when it can inject faults."""
    if event.kind != "llm":
        return None
    provider = provider_of(event)
    return provider if provider is not None and provider.faults is not None else None


def sdk_of(event: Event) -> str | None:
    """The instrumented SDK that made this llm call, or ``None``."""
    provider = _faulty(event)
    return None if provider is None else provider.name


def provider_error(fault: str, event: Event, retry_after: str, *, in_async: bool = False) -> dict[str, Any] | None:
    """The error record of ``fault`` at ``event`` as its SDK delivers it, or ``None`` for a step no SDK made."""
    provider = _faulty(event)
    if provider is None or provider.faults is None:
        method = mcp_method(event)
        return None if method is None else _mcp_error(fault, method)
    faults = provider.faults
    status = faults.overloaded if fault == "overloaded" else _STATUS[fault]
    waits = fault in ("rate_limit", "overloaded")
    return faults.make(Failure(fault, status, retry_after if waits else None, event, in_async=in_async))


def dropped_stream_error(event: Event, kept: list[Any], *, in_async: bool = False) -> dict[str, Any]:
    """The error an agent iterating ``event``'s stream gets after ``kept`` when the connection drops."""
    provider = _faulty(event)
    if provider is None or provider.faults is None:  # a stream rewind does not know the SDK of: httpx's error
        return httpx_dropped()
    return provider.faults.dropped(Failure("connection_reset", 0, None, event, kept, in_async))


# --------------------------------------------------------------------------- MCP


def mcp_session_request(event: Event) -> bool:
    """Whether the step is one of an MCP session's own requests (``mcp.list_tools``,
    ``mcp.initialize`` …), which its name alone tells."""
    return event.name in PATHS


def mcp_method(event: Event) -> str | None:
    """The JSON-RPC method an MCP client step sent (``tools/call`` for a tool call), or ``None``."""
    if event.name in PATHS:
        return PATHS[event.name]
    if event.kind != "tool" or not event.ok:  # before reading the step's body from the file
        return None
    return "tools/call" if tool_call_step(event.kind, event.name, event.request, event.response) else None


def _mcp_error(fault: str, method: str) -> dict[str, Any] | None:
    """What the installed mcp client raises for ``fault`` (its instrumentor module builds it)."""
    from rewind.instrumentors.mcp import fault_record

    return fault_record(fault, method)


__all__ = ["dropped_stream_error", "mcp_method", "mcp_session_request", "provider_error", "sdk_of"]
