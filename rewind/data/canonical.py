"""Turning arbitrary Python values into JSON, and JSON into a stable fingerprint.

Two jobs, kept apart on purpose:

* ``to_jsonable`` converts a value into plain JSON data (dicts, lists, str, numbers,
  bools, None) that a trace file can hold. Conversion is structural where it can be
  (dataclasses, pydantic models, sets, bytes) and falls back to ``repr`` with a
  ``LossySerializationWarning`` where it cannot.
* ``fingerprint`` hashes that JSON in a canonical spelling, so the same request has the
  same identity in every process: set order and memory addresses never leak into it.

The conversion lives in ``rewind.data.jsonable`` and the spellings both share in
``rewind.data.json_spelling``; this module re-exports them, so callers import the whole
vocabulary from here. What stays here is identity (``fingerprint``, ``canonical_text``,
``request_text``), the orjson fast paths for writing and reading trace lines
(``fast_dumps``, ``exact_loads``: each gives the standard library's exact result or
``None``), and ``from_jsonable``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

from .json_spelling import (
    BLOB,
    BYTES_HEX,
    BYTES_UTF8,
    LITERAL,
    MARKER_KEYS,
    MAX_DEPTH,
    canonical_json,
    normalize_repr,
    refuse_unconverted,
)
from .jsonable import to_jsonable, within_depth

# Re-exported: callers import the whole JSON vocabulary from here.
__all__ = [
    "BLOB",
    "BYTES_HEX",
    "BYTES_UTF8",
    "LITERAL",
    "MARKER_KEYS",
    "MAX_DEPTH",
    "canonical_json",
    "canonical_text",
    "ensure_jsonable",
    "exact_loads",
    "fast_dumps",
    "fingerprint",
    "from_jsonable",
    "normalize_repr",
    "request_text",
    "text_fingerprint",
    "to_jsonable",
    "within_depth",
]


def fingerprint(jsonable: Any) -> str:
    """sha256 over the canonical JSON of already-converted data."""
    return text_fingerprint(canonical_json(jsonable))


_CANONICAL_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=refuse_unconverted
)


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


def request_text(value: Any) -> str | None:
    """``canonical_text(value)``, faster: orjson's spelling where it is provably the
    standard library's, the standard library's everywhere else.

    Where ``canonical_text`` gives text, this gives the same text. Where it gives
    ``None`` only because of an ``enum.Enum`` or a ``uuid.UUID`` (which orjson encodes
    natively), this may give ``canonical_json(to_jsonable(value))``, the text the
    caller would build from ``None`` anyway: marker-shaped dicts and deep nesting,
    the two places those spellings part, are left to the standard library.
    """
    fast = fast_dumps(value, sort_keys=True)
    if fast is not None:
        return fast.decode("utf-8")
    return canonical_text(value)


_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib spells everything alike
    _orjson = None

# Anything orjson would encode where the standard library would not (dataclasses,
# datetimes, subclasses of str/int/dict/list) goes to ``default``, which refuses it.
_PASSTHROUGH = _SORTED = 0
if _orjson is not None:
    _PASSTHROUGH = (
        _orjson.OPT_PASSTHROUGH_SUBCLASS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
    )
    _SORTED = _PASSTHROUGH | _orjson.OPT_SORT_KEYS
# Where orjson's bytes may differ from the standard library's (what the byte scan of
# ``_scanned_dumps`` looks for; the type walk of ``_plain_items`` rules them out): a float
# below 1e-4 (repr writes 1e-05, orjson 0.00001 or 1e-8), a null (orjson writes NaN and
# the infinities as null, the standard library as NaN/Infinity) and a marker-shaped key
# (see ``request_text``). A hit inside a string only costs the fast path.
# A marker-shaped dict has one key, so it starts right after its brace. The regex's
# literal prefix starts with a rare byte: faster than a substring search here.
_MARKER_DICT = re.compile(rb'\{"__')


def fast_dumps(value: Any, *, sort_keys: bool = False) -> bytes | None:
    """The standard library's compact JSON of ``value`` (``ensure_ascii=False``, UTF-8),
    encoded by orjson, or ``None`` when orjson is missing, refuses ``value`` (integers
    beyond 64 bits, lone surrogates, non-string keys, non-JSON types) or might spell it
    differently. Callers fall back to the standard library on ``None``."""
    if _orjson is None:
        return None
    option = _SORTED if sort_keys else _PASSTHROUGH
    try:
        out: bytes = _orjson.dumps(value, option=option)
    except TypeError:  # orjson.JSONEncodeError is a TypeError; the padded dump below refuses it too
        return None
    # The proof by type: a value built only of the exact JSON types, with no float the
    # two encoders spell apart, is written alike. Walking costs per node and scanning
    # per byte, so the walk gets a node budget from the size it produced: string-heavy
    # values (chat messages) are proven by a short walk, node-dense ones by the scan.
    try:
        if _plain_items((value,), 0, _BASE_NODES + len(out) // _BYTES_PER_NODE) >= 0:
            return out
    except (RecursionError, RuntimeError):  # a stack already near its limit; a dict resized by another thread
        pass
    return _scanned_dumps(value, option)


#: The type walk's node budget: this many nodes, plus one per this many output bytes.
#: A node costs the walk (60-90 ns) what 25-35 bytes cost the scan (~2.6 ns a byte),
#: and the scan has a fixed cost of its own (a second, padded dump, ~2-3 us) that
#: about 32 nodes reach: a small value (a tool call's arguments, a provider's 500-byte
#: response with its nulls, which would send the scan to the standard library) is
#: proven by the walk whole. At one node per 64 bytes more, chat requests (a few
#: hundred bytes a node) are proven by the walk at a fraction of the scan's cost, while
#: a value denser than that (tool schemas, tables) wastes at most ~1.4 ns a byte on the
#: walk before the scan (and its second dump) takes over: up to ~1.7x the scan alone,
#: still well below the standard library's encoder.
_BASE_NODES = 32
_BYTES_PER_NODE = 64
#: Floats from here up (to the largest finite one) and zero are spelled alike.
_SMALLEST_ALIKE = 1e-4
_LARGEST_FLOAT = 1.7976931348623157e308


def _plain_items(items: Any, depth: int, budget: int) -> int:
    """The node budget left after proving ``items`` (a sized iterable) plain JSON data
    that orjson and the standard library spell alike, or -1 when that is not proven
    (a float below 1e-4 or not finite, any type but the exact JSON ones, nesting
    deeper than ``MAX_DEPTH``, or the budget spent): the byte scan decides then.

    Exact types only: ``Enum``, ``UUID``, ``orjson.Fragment`` and subclasses are what
    orjson writes its own way; a dict's keys are strings (orjson refused any other).
    Marker-shaped dicts and ``None`` need no check in plain data: both encoders write
    them as they are."""
    budget -= len(items)
    if budget < 0 or depth >= MAX_DEPTH:
        return -1
    for item in items:
        cls = type(item)  # most common first: strings, then containers
        if cls is str:
            continue
        if cls is dict:
            budget = _plain_items(item.values(), depth + 1, budget)
            if budget < 0:
                return -1
        elif cls is list or cls is tuple:
            budget = _plain_items(item, depth + 1, budget)
            if budget < 0:
                return -1
        elif cls is float:
            if not (_SMALLEST_ALIKE <= abs(item) <= _LARGEST_FLOAT or item == 0.0):
                return -1
        elif not (cls is int or cls is bool or item is None):
            return -1
    return budget


def _scanned_dumps(value: Any, option: int) -> bytes | None:
    """``fast_dumps`` for values the type walk did not prove: orjson's bytes, scanned for
    every place its spelling may differ, with nesting bounded by its recursion limit."""
    # Encoded inside just enough lists that orjson's own recursion limit refuses a value
    # nesting deeper than MAX_DEPTH (see exact_loads): the depth check costs no scan.
    padding = _take_padding(MAX_DEPTH)
    if padding is None:
        return None
    outer, inner = padding
    inner.append(value)
    try:
        padded: bytes = _orjson.dumps(outer, option=option)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    finally:
        inner.clear()
        _give_back(MAX_DEPTH, padding)
    levels = _DEPTH_LIMIT[0] - MAX_DEPTH
    out = padded[levels:-levels]
    # Probes that can only miss where the spelling is the same. Single bytes first:
    # memchr finds (or rules out) one far faster than a multi-byte search.
    if _small_exponent(out) or b"0.0000" in out or b"null" in out or (b"_" in out and _MARKER_DICT.search(out)):
        return None
    return out


def _small_exponent(out: bytes) -> bool:
    """Whether ``out`` may hold a float like ``2.5e-8``: a digit, ``e``, ``-``. Walks the
    hyphens (rare in most JSON, and found by memchr) instead of searching for ``e-``,
    which English text makes slow."""
    at = out.find(b"-")
    while at >= 0:
        if at >= 2 and out[at - 1] == 0x65 and 0x30 <= out[at - 2] <= 0x39:  # [0-9]e-
            return True
        at = out.find(b"-", at + 1)
    return False


def exact_loads(raw: bytes, *, max_depth: int | None = None) -> dict[str, Any] | None:
    """The JSON object ``raw`` holds, parsed by orjson, when ``raw`` is exactly how
    ``fast_dumps`` writes it back; else ``None`` (the caller parses it with its own
    strict reader).

    Writing the object back and comparing is what makes this safe for untrusted bytes:
    a key given twice (orjson keeps the last), whitespace, an integer orjson reads as
    a float, an escape it would spell differently or a float not in its shortest form
    all make the bytes differ. With ``max_depth`` an object nesting deeper (itself
    counted as level 1) is ``None`` too: it is written back inside just enough lists
    that orjson's own recursion limit refuses exactly those, so depth costs no scan."""
    if _orjson is None:
        return None
    try:
        data = _orjson.loads(raw)
        if type(data) is not dict:
            return None
        if max_depth is None or (len(raw) <= _COUNTED_BELOW and raw.count(b"{") + raw.count(b"[") <= max_depth):
            # Unbounded, or a short text with too few brackets to nest that deep (for a
            # few hundred bytes, counting them costs less than the padded write).
            return data if _orjson.dumps(data) == raw else None
        padding = _take_padding(max_depth)
        if padding is None:
            return None
        outer, inner = padding
        inner.append(data)
        try:
            out = _orjson.dumps(outer)
        finally:
            inner.clear()
            _give_back(max_depth, padding)
    except (ValueError, TypeError):  # orjson's decode and encode errors (the depth limit too)
        return None
    pad = (len(out) - len(raw)) // 2
    if pad * 2 + len(raw) != len(out) or not out.startswith(raw, pad):
        return None
    return data


#: Up to this many bytes, ``exact_loads`` bounds depth by counting brackets.
_COUNTED_BELOW = 1024

_PADDINGS = threading.local()
_DEPTH_LIMIT: list[int] = []


def _orjson_depth_limit() -> int:
    """The deepest nesting ``orjson.dumps`` accepts (its recursion limit), found once."""
    if not _DEPTH_LIMIT:
        low, high = 1, 4096  # low is accepted; high is refused (or beyond any real limit)
        while high - low > 1:
            middle = (low + high) // 2
            nested: list[Any] = []
            for _ in range(middle - 1):
                nested = [nested]
            try:
                _orjson.dumps(nested)
                low = middle
            except TypeError:
                high = middle
        _DEPTH_LIMIT.append(low)
    return _DEPTH_LIMIT[0]


def _take_padding(max_depth: int) -> tuple[list[Any], list[Any]] | None:
    """Lists nested so that an object inside them at depth > ``max_depth`` exceeds
    orjson's limit: (outermost, innermost), or ``None`` when that limit is too low.
    Checked out of a per-thread cache (``_give_back`` returns it), so a re-entrant use
    (a signal handler recording a call) builds its own rather than sharing one."""
    levels = _orjson_depth_limit() - max_depth
    if levels < 1:
        return None
    cached = getattr(_PADDINGS, "by_depth", None)
    if cached is None:
        cached = _PADDINGS.by_depth = {}
    padding: tuple[list[Any], list[Any]] | None = cached.pop(max_depth, None)
    if padding is None:
        inner: list[Any] = []
        outer = inner
        for _ in range(levels - 1):
            outer = [outer]
        padding = (outer, inner)
    return padding


def _give_back(max_depth: int, padding: tuple[list[Any], list[Any]]) -> None:
    _PADDINGS.by_depth[max_depth] = padding


def text_fingerprint(text: str) -> str:
    """sha256 of canonical JSON text (``fingerprint`` for text already encoded)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def ensure_jsonable(value: Any, *, where: str) -> Any:
    """``value`` itself when it is plain JSON data already, else ``to_jsonable(value)``.

    For values a user function returned (``redact=``, ``normalize=``): plain data is
    kept exactly as returned, marker-shaped dicts included.
    """
    if canonical_text(value) is not None:
        return value
    return to_jsonable(value, where=where)


def from_jsonable(value: Any) -> Any:
    """Undo the reversible markers of ``to_jsonable``: bytes come back as bytes.

    Always a new value (the caller may hand it to an agent that mutates it)."""
    cls = type(value)
    if cls is dict:
        if _orjson is not None:
            # No marker to undo: a copy at C speed, kept only when it equals the value
            # (a NaN orjson writes as null, a tuple it writes as a list, an Enum or a
            # UUID it writes as its value do not), else the walk below. An int- or
            # str-valued Enum member does compare equal: it comes back as that JSON value,
            # which is what a trace records of it anyway.
            try:
                raw = _orjson.dumps(value, option=_PASSTHROUGH)
            except TypeError:
                raw = b'"__'
            if b'"__' not in raw:
                copy = _orjson.loads(raw)
                if copy == value:
                    return copy
        return _revive_mapping(value)
    if cls is list:
        return _revive_items(value)
    return value


def _revive_mapping(value: dict[str, Any]) -> Any:
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == BYTES_UTF8 and isinstance(inner, str):
            return inner.encode("utf-8")
        if key == BYTES_HEX and isinstance(inner, str):
            try:
                return bytes.fromhex(inner)
            except ValueError:
                return value  # not hex (a hand-edited or hostile trace): served as recorded
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
