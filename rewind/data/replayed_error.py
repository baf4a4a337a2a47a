"""Recording exceptions as data, and raising them again at replay.

A trace is data: turning an error record back into an exception never imports a
module, never runs a module's lazy ``__getattr__``, and never revives anything but an
``Exception`` subclass. The original class is used only when its module is already in
``sys.modules`` (the agent imported it, so it can catch it) and it is found by walking
module and class dictionaries. Only scalar attributes with plain public names are set
on the revived error.

A recorded error whose exception carried an HTTP response (an ``httpx.HTTPStatusError``
raised inside a tool, an SDK's status error) replays with the bounded ``e.response``
shim of ``rewind._http_error``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any

from rewind.errors import ReplayedError

from .canonical import to_jsonable
from .http_error import Unrecorded, replayed_response, response_record

_SCALARS = (str, int, float, bool, type(None))
_CLASS_CACHE: dict[type[BaseException], type[ReplayedError]] = {}
#: What ReplayedError itself sets: a recorded attribute never overrides these.
_RESERVED = frozenset({"original_type", "original_message", "step", "args"})


def is_cancellation(exc: BaseException) -> bool:
    """An asyncio task cancellation (recorded as a step; see ``Call.fail``)."""
    return isinstance(exc, asyncio.CancelledError)


def replayed_cancellation(record: Mapping[str, Any]) -> asyncio.CancelledError | None:
    """The cancellation to raise for a recorded cancelled step, when replaying in a task.

    Outside a running asyncio task a cancellation would escape as a process-level
    ``BaseException``, so the step replays as a plain ``ReplayedError`` instead.
    """
    if record.get("cancelled") is not True:
        return None
    try:
        in_task = asyncio.current_task() is not None
    except RuntimeError:  # no running event loop
        in_task = False
    return asyncio.CancelledError() if in_task else None


def encode_error(exc: BaseException) -> dict[str, Any]:
    """The JSON record of an exception: its class, message and scalar attributes."""
    cls = type(exc)
    attrs: dict[str, Any] = {}
    for key, value in getattr(exc, "__dict__", {}).items():
        if _plain_name(key) and isinstance(value, _SCALARS):
            attrs[key] = value
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not break the agent's call
        message = f"<{cls.__qualname__} (str() raised)>"
    record: dict[str, Any] = {
        "type": f"{cls.__module__}.{cls.__qualname__}",
        "module": cls.__module__,
        "qualname": cls.__qualname__,
        "message": message,
    }
    if attrs:
        record["attrs"] = attrs
    args = [a for a in exc.args if isinstance(a, _SCALARS)]
    if args and len(args) == len(exc.args) and [str(a) for a in args] != [record["message"]]:
        record["args"] = to_jsonable(args, where="error.args")
    response = response_record(exc)
    if response is not None:
        record["response"] = response
    return record


def _plain_name(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not key.startswith("_")


def resolve_class(module: str, qualname: str) -> type[Exception] | None:
    """The exception class named by a record, only from modules already imported.

    Walks ``vars(module)`` and class ``__dict__``s: a module's lazy ``__getattr__`` (which
    may import hundreds of modules) never runs, and neither does any descriptor.
    """
    obj: Any = sys.modules.get(module)
    if obj is None:
        return None
    for part in qualname.split("."):
        if part == "<locals>" or not part.isidentifier():
            return None
        try:
            namespace = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            return None
        obj = namespace.get(part) if isinstance(namespace, Mapping) else None
        if obj is None:
            return None
    # Only Exception subclasses: a record naming SystemExit, KeyboardInterrupt,
    # GeneratorExit or any other BaseException must not end the process or a test run;
    # nor may the few Exception subclasses that are control flow.
    if isinstance(obj, type) and issubclass(obj, Exception) and not _is_control_flow(obj):
        return obj
    return None


#: Exception subclasses that steer the program rather than report a failure: ending a
#: loop or generator, quitting the debugger, ending a pytest session.
_CONTROL_FLOW = (
    ("builtins", "StopIteration"),
    ("builtins", "StopAsyncIteration"),
    ("bdb", "BdbQuit"),
    ("_pytest.outcomes", "Exit"),
)


def _is_control_flow(cls: type) -> bool:
    for module, name in _CONTROL_FLOW:
        loaded = sys.modules.get(module)
        target = vars(loaded).get(name) if loaded is not None else None
        if isinstance(target, type) and issubclass(cls, target):
            return True
    return False


def replayed_class(original: type[BaseException] | None) -> type[ReplayedError]:
    """A ``ReplayedError`` subclass that is also an ``original`` (cached per class)."""
    if original is None or not issubclass(original, Exception) or issubclass(original, ReplayedError):
        return ReplayedError
    cached = _CLASS_CACHE.get(original)
    if cached is not None:
        return cached
    try:
        cls: type[ReplayedError] = type(
            original.__name__,
            (ReplayedError, original),
            {
                "__module__": original.__module__,
                "__qualname__": original.__qualname__,
                "__init__": ReplayedError.__init__,
                "__str__": ReplayedError.__str__,
                "__rewind_original__": original,
                "__reduce__": reduce_replayed,
            },
        )
    except TypeError:  # e.g. an instance-layout conflict with a C exception type
        cls = ReplayedError
    _CLASS_CACHE[original] = cls
    return cls


def decode_error(record: Mapping[str, Any], step: int, *, httpx: Any = None) -> ReplayedError:
    """Rebuild the exception recorded as ``record`` at ``step``."""
    module = _text(record.get("module"))
    qualname = _text(record.get("qualname"))
    message = _text(record.get("message"))
    original = resolve_class(module, qualname) if module and qualname else None
    cls = replayed_class(original)
    args = record.get("args")
    scalar_args = [a for a in args if isinstance(a, _SCALARS)] if isinstance(args, list) else []
    exc = _instance(cls, scalar_args or [message])
    cls = type(exc)
    exc.original_type = _text(record.get("type")) or f"{module}.{qualname}"
    exc.original_message = message
    exc.step = step
    attrs = record.get("attrs")
    if isinstance(attrs, Mapping):
        for key, value in attrs.items():
            if _settable(cls, key, value):
                _set(exc, key, value)
    response = record.get("response")
    if isinstance(response, Mapping):
        _set(exc, "response", replayed_response(response, httpx))
        if not (isinstance(attrs, Mapping) and "request" in attrs):
            _set(exc, "request", Unrecorded("e.request"))
    return exc


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _instance(cls: type[ReplayedError], args: list[Any]) -> ReplayedError:
    try:
        exc = cls.__new__(cls)
    except Exception:
        # An original class that cannot be built bare (pydantic's ValidationError wants its
        # line errors): the error replays as a plain ReplayedError, from now on at once.
        original = vars(cls).get("__rewind_original__")
        if original is not None:
            _CLASS_CACHE[original] = ReplayedError
        exc = ReplayedError.__new__(ReplayedError)
    BaseException.__init__(exc, *args)
    return exc


def _settable(cls: type, key: Any, value: Any) -> bool:
    """A recorded attribute is set only when it is a scalar under a plain public name
    that the class does not define as a method, property or other descriptor."""
    if not _plain_name(key) or key in _RESERVED or not isinstance(value, _SCALARS):
        return False
    for klass in cls.__mro__:
        if key in vars(klass):
            member = vars(klass)[key]
            return isinstance(member, _SCALARS)  # a class-level default may be shadowed
    return True


def _set(exc: BaseException, name: str, value: Any) -> None:
    try:
        setattr(exc, name, value)
    except (AttributeError, TypeError):
        pass  # a read-only property on the original class


def _rebuild(module: str, qualname: str, args: tuple[Any, ...], state: dict[str, Any]) -> ReplayedError:
    """Unpickle a replayed error: the original class again when the receiving process
    has it imported, else plain ``ReplayedError`` (never importing anything)."""
    original = resolve_class(module, qualname) if module and qualname else None
    exc = _instance(replayed_class(original), list(args))
    for key, value in state.items():
        _set(exc, key, value)
    return exc


def reduce_replayed(error: ReplayedError) -> tuple[Any, ...]:
    """``__reduce__`` of the classes ``replayed_class`` makes: such a class is named like its
    original, so pickle's default (look the class up by name) would find the original."""
    original = getattr(type(error), "__rewind_original__", None)
    module = original.__module__ if original is not None else ""
    qualname = original.__qualname__ if original is not None else ""
    return (_rebuild, (module, qualname, error.args, dict(vars(error))))
