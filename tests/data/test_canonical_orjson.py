"""orjson writes exactly what the standard library encoder writes, or steps aside.

Fingerprints hash canonical JSON text and trace lines are JSON text, so the fast
encoder (``rewind.canonical.fast_dumps`` / ``request_text``) must spell every value
it accepts byte for byte as ``json`` does (sorted keys, ``ensure_ascii=False``,
compact separators), and fall back to ``json`` for everything it might spell
differently: floats below 1e-4, NaN and the infinities, integers beyond 64 bits,
lone surrogates, non-string keys, subclasses, marker-shaped dicts, deep nesting.

orjson's bytes are proven alike in one of two ways, and every property below runs
with each forced (``PROOFS``): a walk over the value's types (exact JSON types, floats
spelled alike), or a scan of the bytes for the spellings that differ.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import json
import math
import sys
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewind.data.canonical as canonical
from rewind.data.canonical import canonical_json, canonical_text, fast_dumps, request_text, to_jsonable

orjson = pytest.importorskip("orjson")

EDGE_FLOATS = [
    0.0,
    -0.0,
    1e16,
    1e15,
    9999999999999998.0,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    1e-4,
    1e-5,
    0.00012,
    9.9e-5,
    -2.5e-8,
    1e22,
    1e21,
    123456789012345.6,
    0.1,
    1 / 3,
    math.nan,
    math.inf,
    -math.inf,
]
EDGE_INTS = [0, -1, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 2**70, -(2**100), 10**40]
EDGE_TEXT = [
    "",
    "\ud800",
    "a\udfffb",
    "\x00\x1f\x7f",
    "\u2028\u2029",
    '"\\/',
    "\b\f\n\r\t",
    "café ☕",
    "\U0001f600",
    "\uffff",
    "__bytes_utf8__",
    "1e-5 null 0.00001",
]


class Colour(enum.Enum):
    RED = "red"
    TINY = 1e-5


class Level(enum.IntEnum):
    LOW = 1


class Tag(str):
    pass


@dataclasses.dataclass
class Point:
    x: float


ODD = [
    Colour.RED,
    Colour.TINY,
    Level.LOW,
    Tag("t"),
    uuid.UUID(int=7),
    Point(1.0),
    datetime.datetime(2024, 1, 2, 3, 4, 5),
    {1, 2},
    b"bytes",
    {"__bytes_utf8__": "x"},
    {"__rewind_literal__": {"a": 1}},
    {1: "a", 2: "b"},
    {True: 1},
    (1, 2.5),
]

# Every code point, lone surrogates included (the standard library writes them raw).
any_char = st.characters(codec=None, categories=None)
texts = st.one_of(st.text(any_char, max_size=12), st.sampled_from(EDGE_TEXT))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(EDGE_FLOATS))
ints = st.one_of(st.integers(), st.integers(min_value=-(2**80), max_value=2**80), st.sampled_from(EDGE_INTS))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts)
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(texts, inner, max_size=5),
    ),
    max_leaves=30,
)
anything = st.recursive(
    st.one_of(scalars, st.sampled_from(ODD)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=20,
)

SETTINGS = settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: How fast_dumps proves orjson's bytes: as it chooses, by the type walk whenever it can,
#: or by the byte scan always.
PROOFS = ["chosen", "walk", "scan"]


@contextmanager
def proven_by(proof: str) -> Iterator[None]:
    """Force the walk (a budget no value exhausts) or the scan (no budget at all)."""
    saved = canonical._BASE_NODES, canonical._BYTES_PER_NODE
    if proof == "walk":
        canonical._BASE_NODES, canonical._BYTES_PER_NODE = 1 << 40, 1
    elif proof == "scan":
        canonical._BASE_NODES, canonical._BYTES_PER_NODE = -1, 1 << 40
    try:
        yield
    finally:
        canonical._BASE_NODES, canonical._BYTES_PER_NODE = saved


def stdlib_line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("proof", PROOFS)
@SETTINGS
@given(value=plain)
def test_sorted_fast_path_is_the_canonical_text_or_steps_aside(proof: str, value: Any) -> None:
    expected = canonical_text(value)
    with proven_by(proof):
        fast = fast_dumps(value, sort_keys=True)
        text = request_text(value)
    if fast is not None:
        assert expected is not None
        assert fast == expected.encode("utf-8", "surrogatepass")
    assert text == expected


@pytest.mark.parametrize("proof", PROOFS)
@SETTINGS
@given(value=plain)
def test_unsorted_fast_path_is_the_stdlib_line_or_steps_aside(proof: str, value: Any) -> None:
    with proven_by(proof):
        fast = fast_dumps(value)
    try:
        expected = stdlib_line(value)
    except (TypeError, ValueError):
        assert fast is None
        return
    assert fast is None or fast == expected


@pytest.mark.parametrize("proof", PROOFS)
@SETTINGS
@given(value=anything)
def test_request_text_of_any_value_is_what_a_call_would_record(proof: str, value: Any) -> None:
    """For values canonical_text refuses, request_text is None or the text the call
    builds instead (canonical JSON of to_jsonable): the fingerprint is the same."""
    with proven_by(proof):
        text = request_text(value)
    expected = canonical_text(value)
    if expected is not None:
        assert text == expected
    elif text is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reprs of odd types: not what is checked here
            assert text == canonical_json(to_jsonable(value))


@pytest.mark.parametrize("proof", PROOFS)
@pytest.mark.parametrize("value", [*EDGE_FLOATS, *EDGE_INTS, *EDGE_TEXT, *ODD], ids=repr)
def test_edge_values(value: Any, proof: str) -> None:
    for wrapped in (value, [value], {"k": value}, {"k": [value, {"z": value, "a": 1}]}):
        expected = canonical_text(wrapped)
        with proven_by(proof):
            fast = fast_dumps(wrapped, sort_keys=True)
        if fast is None:
            continue
        if expected is None:  # an Enum or a UUID: what the call records through to_jsonable
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = canonical_json(to_jsonable(wrapped))
        assert fast == expected.encode("utf-8", "surrogatepass")


@pytest.mark.parametrize(
    "value",
    [2**64, -(2**63) - 1, "\ud800", {1: "a"}, Tag("t"), Point(1.0), datetime.date(2024, 1, 1), {1, 2}],
    ids=repr,
)
def test_orjson_refusals_fall_back(value: Any) -> None:
    assert fast_dumps(value, sort_keys=True) is None
    assert fast_dumps([value]) is None


@pytest.mark.parametrize("proof", PROOFS)
@pytest.mark.parametrize("value", [1e-5, -2.5e-8, math.nan, math.inf, -math.inf], ids=repr)
def test_spellings_that_differ_fall_back(value: Any, proof: str) -> None:
    with proven_by(proof):
        assert fast_dumps({"v": value}, sort_keys=True) is None
        assert fast_dumps([{"v": [value]}, "text " * 100]) is None


@pytest.mark.parametrize("value", [None, {"__bytes_hex__": "00"}, {"__rewind_literal__": {"a": None}}], ids=repr)
def test_plain_values_the_scan_refuses_are_proven_by_the_walk(value: Any) -> None:
    """A null or a marker-shaped dict is spelled alike in plain data; only the scan, which
    cannot tell a null from a NaN or plain data from an Enum's, has to refuse them."""
    wrapped = {"v": value, "messages": [{"role": "user", "content": "hi"}]}
    with proven_by("scan"):
        assert fast_dumps(wrapped, sort_keys=True) is None
    assert fast_dumps(wrapped, sort_keys=True) == canonical_text(wrapped).encode()  # type: ignore[union-attr]


@SETTINGS
@given(floats)
def test_the_walk_accepts_only_floats_spelled_alike(value: float) -> None:
    if canonical._plain_items((value,), 0, 1) >= 0:
        assert orjson.dumps(value) == json.dumps(value).encode()
    else:
        assert not 1e-4 <= abs(value) <= 1.7976931348623157e308 and value != 0.0


NOT_PLAIN = [
    *(value for value in ODD if type(value) not in (dict, tuple)),
    orjson.Fragment(b'{"a":1}'),
    collections.OrderedDict(a=1),
]


@pytest.mark.parametrize("value", NOT_PLAIN, ids=lambda v: type(v).__name__)
def test_the_walk_takes_exact_json_types_only(value: Any) -> None:
    """Enums, UUIDs, orjson fragments, subclasses, sets, bytes …: orjson writes them its
    own way (or refuses them); the walk never vouches for one, at any depth."""
    for wrapped in (value, [value], {"k": [1, {"z": value}]}):
        assert canonical._plain_items((wrapped,), 0, 1 << 40) == -1


def test_a_node_dense_value_is_proven_by_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its node budget the walk stops and the byte scan decides; for string-heavy
    values the walk decides alone."""
    scanned: list[Any] = []
    scan = canonical._scanned_dumps

    def spy(value: Any, option: int) -> bytes | None:
        scanned.append(value)
        return scan(value, option)

    monkeypatch.setattr(canonical, "_scanned_dumps", spy)
    dense = {"tools": [{"name": f"t{i}", "parameters": {"a": 1, "b": [True, None]}} for i in range(200)]}
    assert fast_dumps(dense, sort_keys=True) is None  # the scan refuses its nulls
    assert scanned == [dense]
    chat = {"messages": [{"role": "user", "content": "word " * 80, "name": None}] * 12, "temperature": 0.2}
    assert fast_dumps(chat, sort_keys=True) == canonical_text(chat).encode()  # type: ignore[union-attr]
    assert scanned == [dense]


def test_a_stack_near_its_limit_falls_back_to_the_scan() -> None:
    value = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}

    def nested(levels: int) -> bytes | None:
        if levels:
            return nested(levels - 1)
        return fast_dumps(value, sort_keys=True)

    limit = sys.getrecursionlimit()
    for headroom in range(1, 12):
        try:
            out = nested(limit - headroom)
        except RecursionError:
            continue
        assert out == canonical_text(value).encode()  # type: ignore[union-attr]


@pytest.mark.parametrize("proof", PROOFS)
def test_deep_nesting_falls_back_and_shallow_many_brackets_does_not(proof: str) -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(canonical.MAX_DEPTH + 5):
        child: list[Any] = []
        node.append(child)
        node = child
    wide = [{"a": [1]} for _ in range(500)]
    with proven_by(proof):
        assert fast_dumps(deep) is None
        assert fast_dumps(wide) == stdlib_line(wide)


def test_the_plain_fast_path_is_taken() -> None:
    """An ordinary chat request goes through orjson (the point of the dependency), proven
    by the type walk, nulls and all."""
    request = {"messages": [{"role": "user", "content": "hi ☕", "name": None}], "model": "m", "temperature": 0.5}
    with proven_by("chosen"):
        assert fast_dumps(request, sort_keys=True) == canonical_text(request).encode()  # type: ignore[union-attr]
    assert canonical._plain_items((request,), 0, canonical._BASE_NODES) >= 0


@SETTINGS
@given(anything)
def test_without_orjson_everything_is_the_stdlib(value: Any) -> None:
    saved = canonical._orjson
    canonical._orjson = None
    try:
        assert fast_dumps(value) is None
        assert request_text(value) == canonical_text(value)
    finally:
        canonical._orjson = saved


@SETTINGS
@given(plain)
def test_from_jsonable_fast_copy_is_the_walk(value: Any) -> None:
    """A dict comes back as a new, equal value, markers revived, with or without orjson."""
    wrapped = {"v": value, "m": {"__bytes_utf8__": "hi"}} if isinstance(value, int) else {"v": value}
    fast = canonical.from_jsonable(wrapped)
    saved = canonical._orjson
    canonical._orjson = None
    try:
        slow = canonical.from_jsonable(wrapped)
    finally:
        canonical._orjson = saved
    assert fast is not wrapped
    assert canonical_json(to_jsonable(fast)) == canonical_json(to_jsonable(slow))
    assert [type(x) for x in _leaves(fast)] == [type(x) for x in _leaves(slow)]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [type(value), *(leaf for item in value for leaf in _leaves(item))]
    return [value]


def test_from_jsonable_copies_and_revives() -> None:
    recorded = {"a": [1, {"b": 2}], "bytes": {"__bytes_utf8__": "hi"}, "nan": math.nan}
    served = canonical.from_jsonable({"a": [1, {"b": 2}]})
    assert served == {"a": [1, {"b": 2}]}
    revived = canonical.from_jsonable(recorded)
    assert revived["bytes"] == b"hi" and math.isnan(revived["nan"])
    plain_value = {"a": [1, {"b": 2}], "t": (1, 2)}
    copy = canonical.from_jsonable(plain_value)
    assert copy is not plain_value and copy["a"] is not plain_value["a"] and copy["t"] == (1, 2)


def _nested_object(depth: int) -> bytes:
    value: Any = {"leaf": [1, 2.5, "x"]}
    for _ in range(depth - 2):
        value = {"k": value}
    return json.dumps(value, separators=(",", ":")).encode()


@pytest.mark.parametrize("max_depth", [2, 50, 200])
def test_exact_loads_bounds_depth_exactly(max_depth: int) -> None:
    """The object itself is level 1: exactly max_depth levels pass, one more does not."""
    assert canonical.exact_loads(_nested_object(max_depth), max_depth=max_depth) is not None
    assert canonical.exact_loads(_nested_object(max_depth + 1), max_depth=max_depth) is None
    assert canonical.exact_loads(_nested_object(max_depth + 1)) is not None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1,"a":2}',
        b'{"a": 1}',
        b'{"a":1e-05}',
        b'{"a":18446744073709551616}',
        b'{"a":NaN}',
        b'{"a":"\\/"}',
        b'{"a":"\\ud800"}',
        b'{"a":1}x',
        b'[{"a":1}]',
        b'{"a":1.0000}',
    ],
)
def test_exact_loads_refuses_what_it_would_not_write_back(raw: bytes) -> None:
    assert canonical.exact_loads(raw) is None
    assert canonical.exact_loads(raw, max_depth=200) is None


def test_exact_loads_takes_what_it_writes() -> None:
    raw = b'{"seq":1,"b":[1,-0.0,5e-324,1e+16,"caf\xc3\xa9 \\u0000\\n"],"c":{"d":null,"e":true}}'
    assert canonical.exact_loads(raw, max_depth=200) == json.loads(raw)
