"""orjson writes exactly what the standard library encoder writes, or steps aside.

Fingerprints hash canonical JSON text and trace lines are JSON text, so the fast
encoder (``rewind.canonical.fast_dumps`` / ``request_text``) must spell every value
it accepts byte for byte as ``json`` does (sorted keys, ``ensure_ascii=False``,
compact separators), and fall back to ``json`` for everything it might spell
differently: floats below 1e-4, NaN and the infinities, integers beyond 64 bits,
lone surrogates, non-string keys, subclasses, marker-shaped dicts, deep nesting.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewind.canonical as canonical
from rewind.canonical import canonical_json, canonical_text, fast_dumps, request_text, to_jsonable

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


def stdlib_line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


@SETTINGS
@given(plain)
def test_sorted_fast_path_is_the_canonical_text_or_steps_aside(value: Any) -> None:
    expected = canonical_text(value)
    fast = fast_dumps(value, sort_keys=True)
    if fast is not None:
        assert expected is not None
        assert fast == expected.encode("utf-8", "surrogatepass")
    assert request_text(value) == expected


@SETTINGS
@given(plain)
def test_unsorted_fast_path_is_the_stdlib_line_or_steps_aside(value: Any) -> None:
    try:
        expected = stdlib_line(value)
    except (TypeError, ValueError):
        assert fast_dumps(value) is None
        return
    fast = fast_dumps(value)
    assert fast is None or fast == expected


@SETTINGS
@given(anything)
def test_request_text_of_any_value_is_what_a_call_would_record(value: Any) -> None:
    """For values canonical_text refuses, request_text is None or the text the call
    builds instead (canonical JSON of to_jsonable): the fingerprint is the same."""
    text = request_text(value)
    expected = canonical_text(value)
    if expected is not None:
        assert text == expected
    elif text is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reprs of odd types: not what is checked here
            assert text == canonical_json(to_jsonable(value))


@pytest.mark.parametrize("value", [*EDGE_FLOATS, *EDGE_INTS, *EDGE_TEXT, *ODD], ids=repr)
def test_edge_values(value: Any) -> None:
    for wrapped in (value, [value], {"k": value}, {"k": [value, {"z": value, "a": 1}]}):
        expected = canonical_text(wrapped)
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


@pytest.mark.parametrize("value", [1e-5, -2.5e-8, math.nan, math.inf, None, {"__bytes_hex__": "00"}], ids=repr)
def test_spellings_that_differ_fall_back(value: Any) -> None:
    assert fast_dumps({"v": value}, sort_keys=True) is None


def test_deep_nesting_falls_back_and_shallow_many_brackets_does_not() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(canonical.MAX_DEPTH + 5):
        child: list[Any] = []
        node.append(child)
        node = child
    assert fast_dumps(deep) is None
    wide = [{"a": [1]} for _ in range(500)]
    assert fast_dumps(wide) == stdlib_line(wide)


def test_the_plain_fast_path_is_taken() -> None:
    """An ordinary chat request goes through orjson (the point of the dependency)."""
    request = {"messages": [{"role": "user", "content": "hi ☕"}], "model": "m", "temperature": 0.5}
    assert fast_dumps(request, sort_keys=True) == canonical_text(request).encode()  # type: ignore[union-attr]


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
