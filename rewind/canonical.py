"""Turning arbitrary Python values into JSON, and JSON into a stable fingerprint.

Two jobs, kept apart on purpose:

* ``to_jsonable`` converts a value into plain JSON data (dicts, lists, str, numbers,
  bools, None) that a trace file can hold. Conversion is structural where it can be
  (dataclasses, pydantic models, sets, bytes) and falls back to ``repr`` with a
  ``LossySerializationWarning`` where it cannot.
* ``fingerprint`` hashes that JSON in a canonical spelling, so the same request has the
  same identity in every process: set order and memory addresses never leak into it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import enum
import hashlib
import json
import pathlib
import re
import uuid
import warnings
from collections.abc import Mapping
from typing import Any

from .errors import LossySerializationWarning

BYTES_UTF8 = "__bytes_utf8__"
BYTES_HEX = "__bytes_hex__"
LITERAL = "__rewind_literal__"
#: Marks a payload leaf stored in the trace's blob folder (``rewind.blobs``).
BLOB = "__rewind_blob__"
MARKER_KEYS = frozenset({BYTES_UTF8, BYTES_HEX, LITERAL, BLOB})

# Process-dependent spellings: ``<Foo object at 0x7f3a...>`` and ``id=140234...``.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")

_SCALARS = (str, int, float, bool, type(None))


def normalize_repr(text: str) -> str:
    """Remove memory addresses from a repr so it is identical across processes."""
    return _ADDRESS.sub("0x…", text)


def canonical_json(value: Any) -> str:
    """The one spelling of JSON data used for fingerprints: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_no_default)


def fingerprint(jsonable: Any) -> str:
    """sha256 over the canonical JSON of already-converted data."""
    return text_fingerprint(canonical_json(jsonable))


def _no_default(value: Any) -> Any:
    raise TypeError(f"not JSON data: {type(value).__name__}; call to_jsonable first")


_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_no_default)


def canonical_text(value: Any) -> str | None:
    """The canonical JSON of ``value`` in one C-speed pass, or ``None`` when ``value``
    is not plain JSON data (sets, bytes, models, objects …: use ``to_jsonable`` first).

    For plain data this is the same text as ``canonical_json(to_jsonable(value))``,
    except for two spellings this pass keeps as they are: integer dict keys sort as
    numbers, and a dict that looks like one of rewind's markers is not escaped. Both
    are deterministic for a given value, which is all identity needs.
    """
    try:
        return _CANONICAL_ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        return None


def text_fingerprint(text: str) -> str:
    """sha256 of canonical JSON text (``fingerprint`` for text already encoded)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` into JSON data, losslessly where the type allows."""
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None:
        return value
    if cls is float:
        return value
    if cls is dict:
        return _convert_mapping(value)
    if cls is list or cls is tuple:
        return _convert_items(value)
    return _convert_other(value)


# The two walkers below inline the scalar checks of ``to_jsonable``: payloads are
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
            append(to_jsonable(item))
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
            converted = to_jsonable(item)
        out[key if type(key) is str else _key_to_str(key)] = converted
    if len(out) == 1 and next(iter(out)) in MARKER_KEYS:
        # A user dict that looks like one of our markers must not be revived as one.
        return {LITERAL: out}
    return out


def _key_to_str(key: Any) -> str:
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, (int, float)):
        return json.dumps(key)
    # Frozensets, tuples, custom objects: stringify through the same ladder so the
    # key is as stable across processes as a value would be.
    return canonical_json(to_jsonable(key))


def _convert_other(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _convert_mapping(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, (str, int, float, bool)):
        # Subclasses of the scalar types (IntEnum handled above, str subclasses here).
        for base in _SCALARS[:-1]:
            if isinstance(value, base):
                return base(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [to_jsonable(item) for item in value]
        return sorted(items, key=canonical_json)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return {BYTES_UTF8: raw.decode("utf-8")}
        except UnicodeDecodeError:
            return {BYTES_HEX: raw.hex()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        try:
            return to_jsonable(model_dump(mode="json"))
        except Exception:
            pass
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (uuid.UUID, decimal.Decimal, pathlib.PurePath)):
        return str(value)
    if isinstance(value, (range, type(reversed([])))):
        return [to_jsonable(item) for item in value]
    text = normalize_repr(repr(value))
    warnings.warn(
        f"rewind recorded a {type(value).__module__}.{type(value).__qualname__} as its repr {text[:80]!r}; "
        "it will replay as a string. Return JSON-able data (or a dataclass / pydantic model) "
        "from intercepted calls to keep full fidelity.",
        LossySerializationWarning,
        stacklevel=4,
    )
    return text


def from_jsonable(value: Any) -> Any:
    """Undo the reversible markers of ``to_jsonable``: bytes come back as bytes."""
    cls = type(value)
    if cls is dict:
        return _revive_mapping(value)
    if cls is list:
        return _revive_items(value)
    return value


def _revive_mapping(value: dict[str, Any]) -> Any:
    if len(value) == 1:
        (key, inner), = value.items()
        if key == BYTES_UTF8 and isinstance(inner, str):
            return inner.encode("utf-8")
        if key == BYTES_HEX and isinstance(inner, str):
            return bytes.fromhex(inner)
        if key == LITERAL and isinstance(inner, dict):
            value = inner  # the user's own dict: its key is not a marker
    out: dict[str, Any] = {}
    for key, item in value.items():
        cls = type(item)
        out[key] = _revive_mapping(item) if cls is dict else _revive_items(item) if cls is list else item
    return out


def _revive_items(value: list[Any]) -> list[Any]:
    out: list[Any] = []
    append = out.append
    for item in value:
        cls = type(item)
        append(_revive_mapping(item) if cls is dict else _revive_items(item) if cls is list else item)
    return out
