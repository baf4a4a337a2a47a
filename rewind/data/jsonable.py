"""Python values into JSON data a trace file can hold: ``to_jsonable`` and ``within_depth``.

Conversion is structural where it can be (dataclasses, pydantic models, sets, bytes)
and falls back to ``repr`` with a ``LossySerializationWarning`` where it cannot. It
never raises: cycles, nesting deeper than ``MAX_DEPTH`` and dict keys that collide once
stringified are recorded as placeholders (or kept apart) and warned about, naming the
path. Sets are ordered by their canonical spelling, so a value converts the same way
in every process. ``rewind.data.canonical.from_jsonable`` undoes the reversible markers.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import enum
import json
import pathlib
import uuid
import warnings
from collections.abc import Mapping
from typing import Any

from rewind.errors import LossySerializationWarning

from .json_spelling import BYTES_HEX, BYTES_UTF8, LITERAL, MARKER_KEYS, MAX_DEPTH, canonical_json, normalize_repr

_SCALARS = (str, int, float, bool, type(None))


class _Careful(Exception):
    """The fast walk met something only the careful walk handles (see ``to_jsonable``)."""


def within_depth(value: Any, *, where: str) -> Any:
    """JSON data ``value`` with anything nested deeper than ``MAX_DEPTH`` replaced by a
    placeholder string, with a ``LossySerializationWarning`` naming the path.

    For plain data the fast walks wrote whole (the encoders nest to the interpreter's
    recursion limit, the trace readers only to ``_safe_read.MAX_DEPTH``).
    """
    return _CarefulWalk(where).walk(value)


def to_jsonable(value: Any, *, where: str = "value") -> Any:
    """Convert ``value`` into JSON data, losslessly where the type allows.

    Never raises: a value with no JSON form is recorded as its repr, a cycle or nesting
    deeper than ``MAX_DEPTH`` as a placeholder string, and dict keys that collide once
    stringified are kept apart; each with a ``LossySerializationWarning`` naming the
    path (``where`` names the root: ``request``, ``response``, ``meta`` …).

    A fast walk converts ordinary data. Anything lossy (or a ``RecursionError``) sends
    the value through a careful walk that tracks the path, the containers being
    walked and the depth; both walks share every conversion, so they spell a value
    the same way.
    """
    try:
        return _convert(value)
    except Exception:  # _Careful, RecursionError, or a user type's own conversion failing
        return _CarefulWalk(where).walk(value)


def _convert(value: Any) -> Any:
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None:
        return value
    if cls is float:
        return value
    if cls is dict:
        return _convert_mapping(value)
    if cls is list or cls is tuple:
        return _convert_items(value)
    return _convert_other(value, _FAST)


# The two walkers below inline the scalar checks of ``_convert``: payloads are
# mostly strings and numbers, and a function call per leaf is most of the walk.


def _convert_items(items: Any) -> list[Any]:
    out: list[Any] = []
    append = out.append
    for item in items:
        cls = type(item)
        if cls is str or cls is int or cls is float or cls is bool or item is None:
            append(item)
        elif cls is dict:
            append(_convert_mapping(item))
        else:
            append(_convert(item))
    return out


def _convert_mapping(mapping: Mapping[Any, Any]) -> Any:
    out: dict[str, Any] = {}
    for key, item in mapping.items():
        cls = type(item)
        if cls is str or cls is int or cls is float or cls is bool or item is None:
            converted = item
        elif cls is dict:
            converted = _convert_mapping(item)
        elif cls is list or cls is tuple:
            converted = _convert_items(item)
        else:
            converted = _convert(item)
        out[key if type(key) is str else _key_to_str(key, _FAST)] = converted
    if len(out) != len(mapping):
        raise _Careful  # two keys stringify alike ({1: .., "1": ..}): keep both, and say so
    if len(out) == 1 and next(iter(out)) in MARKER_KEYS:
        # A user dict that looks like one of our markers must not be revived as one.
        return {LITERAL: out}
    return out


def _escaped(out: dict[str, Any]) -> dict[str, Any]:
    if len(out) == 1 and next(iter(out)) in MARKER_KEYS:
        # A user dict that looks like one of our markers must not be revived as one.
        return {LITERAL: out}
    return out


def _key_to_str(key: Any, walker: _Walker) -> str:
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, (int, float)):
        return json.dumps(key)
    # Frozensets, tuples, custom objects: stringify through the same ladder so the
    # key is as stable across processes as a value would be.
    return canonical_json(walker.key(key))


class _Walker:
    """How ``_convert_other`` reaches children: the fast walk or the careful one."""

    def child(self, value: Any, step: str | int | None) -> Any:
        """``value`` converted, one ``step`` (a key, an index, ``None``: same place) deeper."""
        raise NotImplementedError

    def mapping(self, value: Mapping[Any, Any]) -> Any:
        raise NotImplementedError

    def key(self, key: Any) -> Any:
        raise NotImplementedError

    def lossy(self, value: Any) -> str:
        """The repr standing in for a value with no JSON form."""
        raise NotImplementedError


class _FastWalker(_Walker):
    def child(self, value: Any, step: str | int | None) -> Any:
        return _convert(value)

    def mapping(self, value: Mapping[Any, Any]) -> Any:
        return _convert_mapping(value)

    def key(self, key: Any) -> Any:
        return _convert(key)

    def lossy(self, value: Any) -> str:
        raise _Careful  # only the careful walk knows the path to name in the warning


_FAST = _FastWalker()


def _convert_other(value: Any, walker: _Walker) -> Any:
    if isinstance(value, Mapping):
        return walker.mapping(value)
    if isinstance(value, enum.Enum):
        return walker.child(value.value, None)
    if isinstance(value, (str, int, float, bool)):
        # Subclasses of the scalar types (IntEnum handled above, str subclasses here).
        for base in _SCALARS[:-1]:
            if isinstance(value, base):
                return base(value)
    if isinstance(value, (list, tuple)):
        return [walker.child(item, index) for index, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        items = [walker.child(item, "{}") for item in value]
        return sorted(items, key=canonical_json)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return {BYTES_UTF8: raw.decode("utf-8")}
        except UnicodeDecodeError:
            return {BYTES_HEX: raw.hex()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: walker.child(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        try:
            dumped = model_dump(mode="json")
        except Exception:
            pass
        else:
            return walker.child(_stable_sets(value, dumped), None)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (uuid.UUID, decimal.Decimal, pathlib.PurePath)):
        return str(value)
    if isinstance(value, (range, type(reversed([])))):
        return [walker.child(item, index) for index, item in enumerate(value)]
    return walker.lossy(value)


def _stable_sets(model: Any, dumped: Any) -> Any:
    """A pydantic JSON dump with its sets in the same order in every process.

    ``model_dump(mode="json")`` lists a set in iteration order, which for strings (and
    anything hashed through them) changes with ``PYTHONHASHSEED``: those lists are
    sorted. A set of numbers iterates in the same order in every process and keeps
    pydantic's order, so fingerprints recorded before stay valid.
    """
    try:
        python = model.model_dump()
        return _sort_set_lists(python, dumped)
    except Exception:  # a model whose python dump fails: its JSON dump is all there is
        return dumped


_NUMBERS = (int, float)


def _sort_set_lists(python: Any, dumped: Any) -> Any:
    if isinstance(python, (set, frozenset)):
        if type(dumped) is list and not all(type(item) in _NUMBERS or type(item) is bool for item in python):
            try:
                return sorted(dumped, key=canonical_json)
            except (TypeError, ValueError, RecursionError):
                return dumped
        return dumped
    if isinstance(python, dict) and type(dumped) is dict and len(python) == len(dumped):
        return {key: _sort_set_lists(inner, item) for (key, item), inner in zip(dumped.items(), python.values())}
    if isinstance(python, (list, tuple)) and type(dumped) is list and len(python) == len(dumped):
        return [_sort_set_lists(inner, item) for item, inner in zip(dumped, python)]
    return dumped


class _CarefulWalk(_Walker):
    """The walk for values the fast one gave up on: knows its path, stack and depth."""

    def __init__(self, root: str) -> None:
        self._path: list[str | int] = [root]
        # id -> path of every container being walked right now: meeting one again is a cycle.
        self._open: dict[int, str] = {}

    def walk(self, value: Any) -> Any:
        cls = type(value)
        if cls is str or cls is int or cls is float or cls is bool or value is None:
            return value
        if len(self._path) > MAX_DEPTH:
            return self._warn(
                f"<nested deeper than {MAX_DEPTH} levels>",
                f"nests deeper than {MAX_DEPTH} levels; the rest was recorded as a placeholder string",
            )
        ident = id(value)
        seen = self._open.get(ident)
        if seen is not None:
            return self._warn(f"<cycle: refers back to {seen}>", f"refers back to {seen} (a cycle)")
        self._open[ident] = self._where()
        try:
            if cls is dict:
                return self.mapping(value)
            if cls is list or cls is tuple:
                return [self.child(item, index) for index, item in enumerate(value)]
            try:
                return _convert_other(value, self)
            except Exception:  # a mapping whose items() raises, a dataclass field that is unset …
                return self.lossy(value)
        finally:
            del self._open[ident]

    def child(self, value: Any, step: str | int | None) -> Any:
        if step is None:
            return self.walk(value)
        self._path.append(step)
        try:
            return self.walk(value)
        finally:
            self._path.pop()

    def key(self, key: Any) -> Any:
        return self.child(key, "<key>")

    def mapping(self, value: Mapping[Any, Any]) -> Any:
        spelled: list[tuple[Any, str, Any]] = []
        for key, item in value.items():
            name = key if type(key) is str else _key_to_str(key, self)
            spelled.append((key, name, self.child(item, name)))
        out: dict[str, Any] = {}
        if len({name for _, name, _ in spelled}) == len(spelled):
            for _, name, item in spelled:
                out[name] = item
            return _escaped(out)
        # Keys that collide once stringified ({1: "a", "1": "b"}): a string key keeps its
        # spelling, a non-string one adds its type, whatever order the dict was built in.
        counts: dict[str, int] = {}
        for _, name, _ in spelled:
            counts[name] = counts.get(name, 0) + 1
        for key, name, item in spelled:
            if counts[name] > 1 and not isinstance(key, str):
                name = f"{name} ({type(key).__qualname__})"
            if name in out:
                self._warn(None, f"has two keys spelled {name!r}; only the last one was recorded")
            out[name] = item
        for name, count in counts.items():
            if count > 1:
                self._warn(
                    None,
                    f"has keys of different types that stringify to {name!r}; the non-string ones "
                    "were recorded with their type name appended",
                )
        return _escaped(out)

    def lossy(self, value: Any) -> str:
        cls = type(value)
        try:
            text = normalize_repr(repr(value))
        except Exception as exc:  # a broken __repr__ must not break the agent
            text = f"<{cls.__module__}.{cls.__qualname__} (repr raised {type(exc).__name__})>"
        self._warn(
            None,
            f"is a {cls.__module__}.{cls.__qualname__}, recorded as its repr {text[:80]!r}; it will replay "
            "as a string. Return JSON-able data (or a dataclass / pydantic model) from intercepted calls "
            "to keep full fidelity",
        )
        return text

    def _where(self) -> str:
        parts = [str(self._path[0])]
        for step in self._path[1:]:
            parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
        if len(parts) > 12:
            parts = [*parts[:5], f"…({len(parts) - 10} levels)…", *parts[-5:]]
        return "".join(parts)

    def _warn(self, placeholder: str | None, what: str) -> Any:
        warnings.warn(
            f"rewind could not record {self._where()} losslessly: it {what}.", LossySerializationWarning, stacklevel=2
        )
        return placeholder
