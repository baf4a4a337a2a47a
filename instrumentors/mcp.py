"""``MCPInstrumentor``: records and replays Model Context Protocol client calls (``rewind_mcp``).

Hooked on ``mcp.ClientSession`` (class-level, so every session, and ``mcp.Client`` of
mcp 2.x, which calls through its session, is covered):

* ``call_tool(name, arguments)``: a ``tool`` step named after the tool, span
  ``execute_tool {name}`` with ``gen_ai.tool.name``. A result with ``isError=True`` is a
  normal return value (the server reported the tool's failure): it replays as the same
  ``CallToolResult``, never as an exception. JSON-RPC errors (``McpError``/``MCPError``)
  are recorded and raised again as the SDK's class, with ``e.error`` (code, message, data).
* ``list_tools()``: a ``tool`` step ``mcp.list_tools`` (span ``tools/list``);
* ``read_resource(uri)``: a ``memory`` step ``mcp.read_resource`` (span ``resources/read {uri}``).
* the handshake, ``initialize()`` (``mcp.initialize``) and mcp 2.x's ``send_discover``
  (``mcp.discover``): ``tool`` steps; a replayed one installs the recorded result on the
  session (2.x ``adopt``) and sends nothing, ``notifications/initialized`` included. A fork
  also sends it live, so the calls after its fork point find an initialized server.
* every other request: ``send_ping``, ``set_logging_level``, ``complete``,
  ``(un)subscribe_resource`` (``tool``), ``list_prompts``, ``get_prompt``,
  ``list_resources``, ``list_resource_templates`` (``memory``: reads of what the server holds).

Replay never touches the session's transport: results revive as mcp's own pydantic types
from the trace. The transports themselves (``stdio_client``, streamable HTTP, SSE,
websocket, and the names mcp re-exports) are hooked too (``_mcp_transport``): under a
replay they launch no process and open no connection, so no MCP server needs to exist.
The identity of a call is what the server would receive (tool name and arguments, cursor,
resource URI, prompt); timeouts, progress callbacks and request ``meta`` are transport and
never part of it.

MCP is not an HTTP SDK: its hooks drive the interception core (``begin_call``) directly,
and reuse the shared ``Patcher`` (class-level and module-level hooks, exact restore, gap
warnings). mcp 2.x made ``list_tools``/``read_resource`` parameters keyword-only and added
some; requests are bound to the installed signature, so both majors record the same identity.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rewind.data.replayed_error import decode_error
from rewind.engine.core import Call, begin_call
from rewind.engine.providers import ProviderSpec
from rewind.errors import RedactionError

from ._errors import error_record
from ._fault_records import record
from ._instrumentor import SurfaceInstrumentor
from ._kit import Kit
from ._mcp_requests import REQUESTS, ROUND_KEYS, Request
from ._mcp_transport import retarget, transport_hook
from ._streams import NESTED
from ._surface import Provider, Surface

if TYPE_CHECKING:
    from pydantic import BaseModel

_SESSION = "mcp.client.session:ClientSession"
_TYPES = "mcp.types"
_KINDS = {"execute_tool": "tool", "retrieval": "memory"}
#: Call parameters that configure the client, not the request (never identity).
_TRANSPORT_KEYS = frozenset({"meta", "read_timeout_seconds", "progress_callback", "allow_input_required", "cache_mode"})
_TRANSPORT = "transport"
#: The modules defining the transport functions (the rest re-export them).
_DEFINING = frozenset({"mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.sse", "mcp.client.websocket"})
#: Connection set-up a fork's live suffix needs the server to have seen.
_HANDSHAKES = frozenset({"initialize", "send_discover"})
#: (module, function) of every client transport, re-exports before the defining modules.
_TRANSPORTS = (
    ("mcp", "stdio_client"),
    ("mcp.client.client", "stdio_client"),  # mcp 2.x Client(StdioServerParameters | url)
    ("mcp.client.client", "streamable_http_client"),
    ("mcp.client.session_group", "sse_client"),
    ("mcp.client.session_group", "streamable_http_client"),
    ("mcp.client.session_group", "streamablehttp_client"),
    ("mcp.client.stdio", "stdio_client"),
    ("mcp.client.streamable_http", "streamable_http_client"),  # 2.x and late 1.x
    ("mcp.client.streamable_http", "streamablehttp_client"),  # 1.x
    ("mcp.client.sse", "sse_client"),
    ("mcp.client.websocket", "websocket_client"),
)


class MCPProvider(Provider):
    """The three ``ClientSession`` methods, and mcp's pydantic types for revival."""

    name = "mcp"
    package = "mcp"

    def __init__(self) -> None:
        super().__init__()
        #: Revival by import path: the model's validator (``model_validate`` without its
        #: keyword handling, a tenth of a replayed call), or ``False`` for none (checked once).
        self._models: dict[str, Callable[[Any], Any] | bool] = {}

    def make_kit(self) -> Kit:
        return Kit()  # pydantic types (model_validate); no streams, no HTTP wrappers

    def surfaces(self) -> Sequence[Surface]:
        def row(request: Request) -> Surface:
            return Surface(
                _SESSION,
                request.method,
                request.name,
                request.operation,
                request.path,
                f"{_TYPES}:{request.result}" if request.result else "",
                is_async=True,
                required=request.required,
                provider=self,
            )

        def transport(owner: str, function: str) -> Surface:
            return Surface(owner, function, "mcp.transport", _TRANSPORT, "", "", required=False, provider=self)

        return [
            *(row(request) for request in REQUESTS),
            # Transports: re-exports first, so each holds the SDK's own function when wrapped.
            *(transport(owner, function) for owner, function in _TRANSPORTS),
        ]

    def hook(self, surface: Surface) -> Callable[..., Any]:
        return transport_hook() if surface.operation == _TRANSPORT else _hook(surface)

    # -- identity and telemetry ---------------------------------------------------------
    def step(self, surface: Surface, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """(step name, request) of one call."""
        request: dict[str, Any]
        if surface.method == "call_tool":
            tool = str(arguments.get("name"))
            args = arguments.get("arguments")
            if type(args) is not dict:  # the usual type first: an ABC check costs more
                args = args if isinstance(args, Mapping) else {}
            request = {"name": tool, "arguments": dict(args)}
            name = tool
        elif surface.method == "read_resource":
            request = {"uri": str(arguments.get("uri"))}
            name = surface.name
        else:
            return surface.name, _request(arguments)
        for key in ROUND_KEYS:
            if arguments.get(key) is not None:
                request[key] = arguments[key]
        return name, request

    def span(self, surface: Surface, instance: Any, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """Span name and start attributes of the call whose request is ``request``."""
        attrs: dict[str, Any] = {"mcp.method.name": surface.path}
        if surface.method == "call_tool":
            attrs["gen_ai.tool.type"] = "extension"
            return f"execute_tool {request['name']}", attrs
        if "uri" in request:
            attrs["mcp.resource.uri"] = request["uri"]
        if surface.method == "read_resource":
            return f"{surface.path} {request['uri']}", attrs
        return surface.path, attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if surface.method == "call_tool" and isinstance(data, dict) and data.get("isError") is True:
            return {"error.type": "tool_error"}  # the MCP conventions' mark for a failed tool result
        return {}

    # -- recording and revival ------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        if isinstance(result, dict):  # send_discover's raw result
            return result
        dump = getattr(result, "model_dump", None)
        if callable(dump):
            return dump(mode="json", by_alias=True, exclude_unset=True)
        return super().dump(surface, result)

    def result_type(self, surface: Surface, result: Any) -> str | None:
        """The type name to record when a call returned something other than its usual type
        (mcp 2.x ``InputRequiredResult`` or a claimed extension result)."""
        name = type(result).__name__
        return None if not surface.result or surface.result.endswith(f":{name}") else name

    def revive_as(self, surface: Surface, data: Any, type_name: Any) -> Any:
        path = surface.result
        if not path:
            return data  # a raw dict live too (send_discover)
        if isinstance(type_name, str) and type_name.isidentifier():
            path = f"{_TYPES}:{type_name}"
        validate = self._models.get(path)
        if validate is None:
            type_ = self.type_of(path)  # mcp.types is imported already: the session module uses it
            is_model = isinstance(type_, type) and issubclass(type_, _base_model())
            validate = self._models[path] = _validator(type_) if is_model else False
        if not callable(validate):
            # A trace names only a model class of mcp.types; anything else is served as data.
            self._fallback(path, "mcp.types has no such model")
            return data
        try:
            return validate(data)
        except Exception as exc:  # any revival failure degrades to the dict
            self._fallback(path, f"{type(exc).__name__}: {exc}")
            return data

    def error_record(self, exc: Exception) -> dict[str, Any]:
        return mcp_error_record(exc)

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        exc = decode_error(dict(record), step)
        data = record.get("mcp_error")
        error_type = self.type_of(f"{_TYPES}:ErrorData")
        if isinstance(data, Mapping) and error_type is not None:
            try:
                exc.error = error_type.model_validate(data)  # type: ignore[attr-defined]
            except Exception:  # the message and class still replay
                pass
        return exc


def mcp_error_record(exc: BaseException) -> dict[str, Any]:
    """The error record of a failed MCP call: McpError/MCPError keep their JSON-RPC ``ErrorData``."""
    record = error_record(exc)
    data = getattr(exc, "error", None)
    dump = getattr(data, "model_dump", None)
    if callable(dump):
        record["mcp_error"] = dump(mode="json", exclude_none=True)
    return record


def _validator(model: type[BaseModel]) -> Callable[[Any], Any]:
    """What ``model.model_validate(data)`` runs, called directly."""
    from pydantic_core import SchemaValidator

    try:
        validator = model.__pydantic_validator__
        if isinstance(validator, SchemaValidator):  # not a stand-in for a deferred build
            return validator.validate_python
    except AttributeError:
        pass
    return model.model_validate


class _Binder:
    """Binds a call's arguments to parameter names, by hand (``Signature.bind`` is slow and
    ran on every call); anything unusual takes ``Signature.bind`` for its exact semantics."""

    __slots__ = ("covering", "names", "positional", "required", "signature")

    def __init__(self, signature: inspect.Signature) -> None:
        params = list(signature.parameters.values())
        simple = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self.signature = signature
        self.positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        self.names = frozenset(p.name for p in params if p.kind in simple)
        # Only plain named parameters take the fast path (every mcp release so far).
        if len(self.names) != len(params):
            self.positional = []
            self.names = frozenset()
        self.required = frozenset(p.name for p in params if p.default is inspect.Parameter.empty)
        #: How many positional arguments supply every required parameter (more than there
        #: can be when one is keyword-only): the usual call needs no set check.
        required_at = [i for i, name in enumerate(self.positional) if name in self.required]
        covered = len(required_at) == len(self.required)
        self.covering = (required_at[-1] + 1 if required_at else 0) if covered else len(params) + 1

    def __call__(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        positional = self.positional
        if self.names and len(args) <= len(positional):
            bound = {}
            for at, value in enumerate(args):  # faster than dict(zip(...)) for a few
                bound[positional[at]] = value
            for key, value in kwargs.items():
                if key in bound or key not in self.names:
                    break
                bound[key] = value
            else:
                if len(args) >= self.covering or self.required.issubset(bound):
                    return bound
        try:
            return dict(self.signature.bind(*args, **kwargs).arguments)
        except TypeError:
            return None  # the SDK raises its own TypeError when called


_BINDERS: dict[Any, _Binder | None] = {}


def _bind(wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The call's arguments by parameter name (either mcp major), or ``None`` if they do not bind."""
    function = getattr(wrapped, "__func__", wrapped)
    binder = _BINDERS.get(function, _BINDERS)
    if binder is _BINDERS:
        try:
            binder = _Binder(inspect.signature(wrapped))
        except (TypeError, ValueError):
            binder = None
        _BINDERS[function] = binder
    return binder(args, kwargs) if isinstance(binder, _Binder) else None


def _hook(surface: Surface) -> Callable[..., Any]:
    provider: MCPProvider = surface.provider  # type: ignore[assignment]
    kind = _KINDS[surface.operation]
    owner = f"mcp.ClientSession.{surface.method}"

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if NESTED.get():  # list_tools inside a live call_tool (2.x output-schema refresh)
            return await wrapped(*args, **kwargs)
        arguments = _bind(wrapped, args, kwargs)
        if arguments is None:
            return await wrapped(*args, **kwargs)
        name, request = provider.step(surface, arguments)
        call = begin_call(
            kind, name, request, describe=lambda: provider.span(surface, instance, request), is_async=True
        )
        if call is None:
            return await wrapped(*args, **kwargs)
        if kind == "tool":
            call.session.note_owner(kind, name, owner)
        if call.replaying:
            if surface.method in _HANDSHAKES and call.session.mode == "fork":
                await _handshake_live(wrapped, args, kwargs)
            return _replay(provider, surface, call, instance)
        token = NESTED.set(True)
        try:
            with call.activate():
                result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _failed(provider, call, exc)
            raise
        finally:
            NESTED.reset(token)
        _succeeded(provider, surface, call, result)
        return result

    return wrapper


async def _handshake_live(wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A fork serves its prefix from the trace, then runs live on the same session: the
    server must have seen the handshake, so it is sent (its answer is not used; the agent
    gets the recorded one, like every replayed step)."""
    token = NESTED.set(True)
    try:
        await wrapped(*args, **kwargs)
    except Exception:  # a server that is gone fails the fork's first live call, not its prefix
        pass
    finally:
        NESTED.reset(token)


def _failed(provider: MCPProvider, call: Call, exc: BaseException) -> None:
    try:
        call.fail(exc, error=provider.error_record(exc) if isinstance(exc, Exception) else None)
    except RedactionError:
        raise  # the user's redactor failed: recorded as the step, and the agent sees it too
    except Exception:  # the agent's exception matters, not ours
        call.abandon(exc)


def _succeeded(provider: MCPProvider, surface: Surface, call: Call, result: Any) -> None:
    try:
        data = provider.dump(surface, result)
        type_name = provider.result_type(surface, result)
        call.succeed(
            data,
            extra={"mcp": {"type": type_name}} if type_name is not None else None,
            attributes=provider.response_attributes(surface, data) if call.annotating else None,
            converted=True,
        )
    except RedactionError:
        raise
    except Exception:  # bookkeeping failed: keep the agent's result
        call.abandon()


def _replay(provider: MCPProvider, surface: Surface, call: Call, instance: Any) -> Any:
    event = call.take_served()
    if not event.ok:
        call.raise_recorded_error(event, provider.revive_error(event.error or {}, event.seq))
    data = event.response
    recorded_type = (event.get("mcp") or {}).get("type")
    result = provider.revive_as(surface, data, recorded_type)
    if surface.method == "list_tools" and recorded_type is None:
        _absorb_listing(instance, result)
    elif surface.method == "initialize" and recorded_type is None:
        _adopt_handshake(instance, result)
    call.end_replayed(provider.response_attributes(surface, data) if call.annotating else None)
    return result


def _absorb_listing(session: Any, result: Any) -> None:
    """mcp 2.x sessions derive per-tool state (output schemas) from every listing they return."""
    absorb = getattr(session, "_absorb_tool_listing", None)
    if callable(absorb) and not isinstance(result, dict):
        try:
            absorb(result, complete=getattr(result, "next_cursor", None) is None)
        except Exception:  # state for output validation only; the listing itself is served
            pass


def _adopt_handshake(session: Any, result: Any) -> None:
    """Install the negotiated state a live ``initialize()`` leaves on the session (nothing is sent,
    not even ``notifications/initialized``)."""
    if isinstance(result, dict):
        return
    try:
        adopt = getattr(session, "adopt", None)
        if callable(adopt):
            adopt(result)  # mcp 2.x: protocol version, request stamping, capabilities
        elif hasattr(session, "_server_capabilities"):
            session._server_capabilities = result.capabilities  # mcp 1.x get_server_capabilities()
    except Exception:  # state for later checks only; the handshake result itself is served
        pass


def _request(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of a request: what the server receives, as JSON (pagination ``params``
    flattened to their ``cursor``; transport options and request ``meta`` left out)."""
    request: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None or key in _TRANSPORT_KEYS:
            continue
        if key == "params":
            cursor = getattr(value, "cursor", None)
            if cursor is not None:
                request["cursor"] = cursor
            continue
        request[key] = _json(value)
    return request


def _base_model() -> type[BaseModel]:
    # Imported when first needed, not with this module: rewind loads every provider's
    # declaration at replay start, and pydantic alone costs tens of milliseconds there.
    from pydantic import BaseModel

    return BaseModel


def _json(value: Any) -> Any:
    pydantic = sys.modules.get("pydantic")  # an MCP request holds models only once mcp (and pydantic) is in use
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return str(value)  # AnyUrl and friends: their wire form


PROVIDER = MCPProvider()


class MCPInstrumentor(SurfaceInstrumentor):
    """Records and replays ``mcp.ClientSession`` requests; transports go offline under a replay."""

    provider = PROVIDER
    sdk = "mcp"
    minimum = "0.9"

    def _instrument(self, **kwargs: Any) -> None:
        super()._instrument(**kwargs)
        patcher = self.__dict__.get("_rewind_patcher")
        if patcher is None or not patcher.active or self.__dict__.get("_rewind_retargeted"):
            return
        undo: list[Callable[[], None]] = []
        for module, function in _TRANSPORTS:
            if module in _DEFINING:
                try:
                    step = retarget(module, function)
                except Exception:  # the module hooks still cover calls through the module
                    step = None
                if step is not None:
                    undo.append(step)
        self._rewind_retargeted = undo

    def _uninstrument(self, **kwargs: Any) -> None:
        for step in reversed(self.__dict__.pop("_rewind_retargeted", None) or []):
            step()
        super()._uninstrument(**kwargs)


# --------------------------------------------------------------------------- provider faults

#: The provider faults an MCP request can meet: the JSON-RPC errors its client raises.
MCP_FAULTS = ("server_error", "timeout")


def fault_record(fault: str, method: str) -> dict[str, Any] | None:
    """What the installed mcp raises when a request times out (``read_timeout_seconds``) or the
    server answers a JSON-RPC internal error: built with its own classes and recorded as the
    instrumentor records it live. 2.x: ``MCPError(code, message)``, -32001 "Request 'm' timed
    out"; 1.x: ``McpError(ErrorData)`` with HTTP's 408 and its "Timed out while waiting" text."""
    if fault not in MCP_FAULTS:
        return None
    internal = (-32603, "Internal error")  # JSON-RPC's internal error, in every release
    code, message = (-32001, f"Request {method!r} timed out") if fault == "timeout" else internal
    try:
        from mcp.shared import exceptions
    except Exception:  # mcp is not installed: the newest layout, replayed as a ReplayedError
        error = {"code": code, "message": message}
        return record("mcp.shared.exceptions", "MCPError", message, args=[code, message, None], mcp_error=error)
    modern = getattr(exceptions, "MCPError", None)
    if isinstance(modern, type):  # mcp 2.x
        return mcp_error_record(modern(code=code, message=message))
    from mcp.types import ErrorData

    if fault == "timeout":
        code, message = 408, "Timed out while waiting for response to ClientRequest. Waited 60.0 seconds."
    return mcp_error_record(exceptions.McpError(ErrorData(code=code, message=message)))  # type: ignore[attr-defined]


DECLARATION = ProviderSpec(name="mcp", sdk="mcp", instrumentor="rewind.instrumentors.mcp:MCPInstrumentor")
