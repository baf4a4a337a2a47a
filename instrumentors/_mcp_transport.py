"""MCP client transports that, under a replay, reach no server at all.

``stdio_client(...)`` launches the server command, ``streamable_http_client(url)`` and
``sse_client(url)`` connect to it. A replay answers every hooked ``ClientSession`` call from
the trace, so those processes and connections are not needed; on a machine without the
server (CI) they would fail before the agent's first hooked call.

The hook wraps each transport function so that it returns a ``Transport``: an async
context manager deciding when it is *entered* (``mcp.Client`` builds its transport when
constructed, possibly before the replay starts) whether the current session replays:

* ``replay`` session: an offline stream pair. Writes are accepted and dropped; a request
  (a message with an ``id`` and a ``method``) is answered at once with a JSON-RPC error
  ``not recorded by rewind: <method>``, so an unhooked request fails clearly instead of
  waiting for a server that does not exist.
* record, fork (its calls after the fork point run live) or no session: the SDK's own
  transport, built from the same arguments when it was called, entered unchanged.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

from rewind.engine.context import current_session

#: The JSON-RPC code of the offline answer: "method not found", what a server says to a
#: request it does not know; mcp raises it as ``McpError``/``MCPError``.
METHOD_NOT_FOUND = -32601
NOT_RECORDED = "not recorded by rewind: "


class Transport:
    """The SDK's transport, or an offline one when entered under a replay."""

    __slots__ = ("_active", "_live", "_session_id")

    def __init__(self, live: Any, session_id: bool) -> None:
        self._live = live  # the SDK's context manager; its body runs only when entered
        self._session_id = session_id
        self._active: Any = None

    async def __aenter__(self) -> Any:
        session = current_session()
        replaying = session is not None and session.mode == "replay"
        self._active = offline_streams(self._session_id) if replaying else self._live
        return await self._active.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._active.__aexit__(exc_type, exc, tb)


def transport_hook() -> Callable[..., Any]:
    """The ``wrapt`` wrapper patched over a transport function (module-level, no instance)."""

    shapes: dict[Any, bool] = {}

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        live = wrapped(*args, **kwargs)
        if isinstance(live, Transport):  # already ours (a re-export wrapped twice)
            return live
        session_id = shapes.get(wrapped)
        if session_id is None:
            session_id = shapes[wrapped] = _yields_session_id(wrapped)
        return Transport(live, session_id)

    return wrapper


def retarget(module_name: str, function_name: str) -> Callable[[], None] | None:
    """Make the SDK's transport function itself choose offline streams under a replay, so
    names imported from it *before* patching (``from mcp.client.stdio import stdio_client``
    at the top of an agent or framework module) are covered too. Returns the undo.

    An ``asynccontextmanager`` function keeps its generator function in a closure cell and
    calls it when called; that cell is pointed at a function returning the SDK's own
    generator (no replay) or an offline one (replay), decided at call time."""
    module = sys.modules.get(module_name)
    helper: Any = getattr(module, function_name, None) if module is not None else None
    for _ in range(3):  # under the module attribute hook (a wrapt proxy) sits the SDK's function
        inner = getattr(helper, "__wrapped__", None)
        if inner is None or inspect.isasyncgenfunction(inner):
            break
        helper = inner
    if not inspect.isasyncgenfunction(inner):
        return None  # not an asynccontextmanager function (another layout): module hooks only
    cells = [c for c in getattr(helper, "__closure__", None) or () if _contents(c) is inner]
    if len(cells) != 1:
        return None
    (cell,) = cells
    session_id = _yields_session_id(helper)

    def choose(*args: Any, **kwargs: Any) -> Any:
        session = current_session()
        if session is not None and session.mode == "replay":
            return _offline_generator(session_id)
        return inner(*args, **kwargs)  # the SDK's own generator, untouched

    cell.cell_contents = choose

    def undo() -> None:
        if _contents(cell) is choose:
            cell.cell_contents = inner

    return undo


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


async def _offline_generator(session_id: bool) -> AsyncIterator[tuple[Any, ...]]:
    async with offline_streams(session_id) as streams:
        yield streams


def _yields_session_id(function: Callable[..., Any]) -> bool:
    """mcp 1.x streamable HTTP transports yield ``(read, write, get_session_id)``; every
    other transport (and 2.x's) yields ``(read, write)``. Their annotations say which."""
    try:
        annotation = inspect.signature(function).return_annotation
    except (TypeError, ValueError):
        return False
    return "GetSessionIdCallback" in str(annotation)


def _no_session_id() -> None:
    return None  # an offline stream has no server-assigned session


@asynccontextmanager
async def offline_streams(session_id: bool = False) -> AsyncIterator[tuple[Any, ...]]:
    """``(read, write)`` for a ``ClientSession`` with nobody on the other end (and a
    ``get_session_id`` answering ``None`` where the SDK's transport yields one)."""
    import anyio  # here, not at the top: the module is imported with the mcp declaration, before any session

    to_server, inbox = anyio.create_memory_object_stream(math.inf)  # type: ignore[var-annotated]
    outbox, from_server = anyio.create_memory_object_stream(math.inf)  # type: ignore[var-annotated]
    async with anyio.create_task_group() as tasks, to_server, inbox, outbox, from_server:
        tasks.start_soon(_answer, inbox, outbox)
        try:
            yield (from_server, to_server, _no_session_id) if session_id else (from_server, to_server)
        finally:
            tasks.cancel_scope.cancel()


async def _answer(inbox: Any, outbox: Any) -> None:
    """Drop notifications and responses; refuse every request at once."""
    import anyio

    try:
        async for item in inbox:
            reply = refusal(item)
            if reply is not None:
                await outbox.send(reply)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass  # the session went away


def refusal(item: Any) -> Any:
    """The JSON-RPC error answering ``item`` if it is a request, in the shape it came in:
    a ``SessionMessage`` (mcp 1.8+), a ``JSONRPCMessage`` root model (older 1.x) or a
    bare message (2.x)."""
    import mcp.types as types

    message = getattr(item, "message", item)
    root = getattr(message, "root", message)
    method, request_id = getattr(root, "method", None), getattr(root, "id", None)
    if not isinstance(method, str) or request_id is None:
        return None
    error: Any = types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=METHOD_NOT_FOUND, message=NOT_RECORDED + method),
    )
    if root is not message:
        error = type(message)(error)  # the 1.x root model
    if message is not item:
        error = type(item)(message=error)
    return error
