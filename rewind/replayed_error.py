"""Recording exceptions as data, and raising them again at replay.

A trace is data: turning an error record back into an exception never imports a
module. The original class is used only when its module is already in
``sys.modules`` (the agent imported it, so it can catch it).
"""

from __future__ import annotations

import sys
from typing import Any

from .canonical import to_jsonable
from .errors import ReplayedError

_SCALARS = (str, int, float, bool, type(None))
_CLASS_CACHE: dict[type[BaseException], type[ReplayedError]] = {}


def encode_error(exc: BaseException) -> dict[str, Any]:
    """The JSON record of an exception: its class, message and scalar attributes."""
    cls = type(exc)
    attrs: dict[str, Any] = {}
    for key, value in getattr(exc, "__dict__", {}).items():
        if not key.startswith("_") and isinstance(value, _SCALARS):
            attrs[key] = value
    record: dict[str, Any] = {
        "type": f"{cls.__module__}.{cls.__qualname__}",
        "module": cls.__module__,
        "qualname": cls.__qualname__,
        "message": str(exc),
    }
    if attrs:
        record["attrs"] = attrs
    args = [a for a in exc.args if isinstance(a, _SCALARS)]
    if args and len(args) == len(exc.args) and [str(a) for a in args] != [record["message"]]:
        record["args"] = to_jsonable(args)
    return record


def resolve_class(module: str, qualname: str) -> type[BaseException] | None:
    """The exception class named by a record, only from modules already imported."""
    obj: Any = sys.modules.get(module)
    if obj is None:
        return None
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return obj
    return None


def replayed_class(original: type[BaseException] | None) -> type[ReplayedError]:
    """A ``ReplayedError`` subclass that is also an ``original`` (cached per class)."""
    if original is None or issubclass(original, ReplayedError):
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
            },
        )
    except TypeError:  # e.g. an instance-layout conflict with a C exception type
        cls = ReplayedError
    _CLASS_CACHE[original] = cls
    return cls


def decode_error(record: dict[str, Any], step: int) -> ReplayedError:
    """Rebuild the exception recorded as ``record`` at ``step``."""
    module = str(record.get("module", ""))
    qualname = str(record.get("qualname", ""))
    message = str(record.get("message", ""))
    original = resolve_class(module, qualname) if module and qualname else None
    cls = replayed_class(original)
    exc = cls.__new__(cls)
    args = record.get("args")
    BaseException.__init__(exc, *(args if isinstance(args, list) and args else [message]))
    exc.original_type = str(record.get("type", f"{module}.{qualname}"))
    exc.original_message = message
    exc.step = step
    for key, value in (record.get("attrs") or {}).items():
        try:
            setattr(exc, key, value)
        except (AttributeError, TypeError):
            pass  # a read-only property on the original class
    return exc
