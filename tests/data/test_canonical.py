from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
import warnings

import pydantic
import pytest

from rewind.data.canonical import canonical_json, fingerprint, from_jsonable, normalize_repr, to_jsonable
from rewind.errors import LossySerializationWarning


@dataclasses.dataclass
class Point:
    x: int
    tags: frozenset[str]


class Model(pydantic.BaseModel):
    name: str
    scores: list[float]


class Color(enum.Enum):
    RED = "red"


class Opaque:
    pass


def test_plain_json_passes_through_unchanged() -> None:
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": "d"}}
    assert to_jsonable(value) == value


def test_sets_become_sorted_lists_and_tuples_lists() -> None:
    assert to_jsonable({"s": {"b", "a", "c"}, "t": (1, 2)}) == {"s": ["a", "b", "c"], "t": [1, 2]}
    assert to_jsonable(frozenset({3, 1, 2})) == [1, 2, 3]


def test_bytes_round_trip_exactly() -> None:
    utf8, binary = b"hello", b"\xff\x00\xfe"
    converted = to_jsonable({"u": utf8, "b": binary})
    assert converted == {"u": {"__bytes_utf8__": "hello"}, "b": {"__bytes_hex__": "ff00fe"}}
    assert from_jsonable(converted) == {"u": utf8, "b": binary}


def test_user_dict_that_looks_like_a_marker_is_not_revived_as_bytes() -> None:
    value = {"__bytes_utf8__": "not bytes"}
    assert from_jsonable(to_jsonable(value)) == value


def test_dataclasses_pydantic_enums_and_well_known_types_convert_structurally() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        converted = to_jsonable(
            {
                "point": Point(1, frozenset({"b", "a"})),
                "model": Model(name="n", scores=[1.0]),
                "color": Color.RED,
                "when": dt.datetime(2026, 1, 2, 3, 4, 5),
                "id": uuid.UUID(int=7),
            }
        )
    assert converted["point"] == {"x": 1, "tags": ["a", "b"]}
    assert converted["model"] == {"name": "n", "scores": [1.0]}
    assert converted["color"] == "red"
    assert converted["when"] == "2026-01-02T03:04:05"
    assert converted["id"] == "00000000-0000-0000-0000-000000000007"


def test_unknown_objects_become_reprs_without_addresses_and_warn() -> None:
    with pytest.warns(LossySerializationWarning, match="Opaque"):
        converted = to_jsonable({"o": Opaque()})
    assert "0x" not in converted["o"].replace("0x…", "")
    assert "Opaque object at 0x…" in converted["o"]


def test_non_string_keys_are_stringified_stably() -> None:
    assert to_jsonable({1: "a", None: "b", frozenset({2, 1}): "c"}) == {"1": "a", "null": "b", "[1,2]": "c"}


def test_canonical_json_sorts_keys_and_has_no_spaces() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'


def test_normalize_repr_removes_addresses() -> None:
    assert normalize_repr("<X at 0x7f3a12bc45d0>") == "<X at 0x…>"


FINGERPRINT_PROGRAM = """
import dataclasses, json, sys
import pydantic
from rewind.canonical import fingerprint, to_jsonable
import warnings
warnings.simplefilter("ignore")

@dataclasses.dataclass
class D:
    tags: set

class M(pydantic.BaseModel):
    items: list[str]

class Thing:
    pass

value = {
    "set": {"alpha", "beta", "gamma", "delta", "epsilon"},
    "frozen": frozenset({"x", "y", "z", "w"}),
    "tuple": ("a", ("b", "c")),
    "bytes": b"\\x00\\x01binary",
    "dc": D(tags={"q", "r", "s"}),
    "model": M(items=["i", "j"]),
    "obj": Thing(),
    frozenset({"k1", "k2", "k3"}): "frozen key",
}
print(fingerprint(to_jsonable(value)))
"""


def test_fingerprints_are_identical_across_processes_with_different_hash_seeds(run_python) -> None:
    prints = set()
    for seed in ("1", "2", "12345"):
        result = run_python(FINGERPRINT_PROGRAM, env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr
        prints.add(result.stdout.strip())
    assert len(prints) == 1
    assert len(prints.pop()) == 64


def test_fingerprint_differs_when_content_differs() -> None:
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})


def test_the_one_pass_canonical_text_matches_the_converted_form_for_plain_data() -> None:
    from rewind.data.canonical import canonical_text

    value = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "n": 1.5, "t": (1, 2), "x": None}
    assert canonical_text(value) == canonical_json(to_jsonable(value))
    assert canonical_text({"s": {1, 2}}) is None  # not plain JSON: the caller converts first
    assert canonical_text({"b": b"raw"}) is None


RECORD_OR_REPLAY = """
import dataclasses, os, sys, warnings
import pydantic
import rewind
warnings.simplefilter("ignore", rewind.LossySerializationWarning)

@dataclasses.dataclass
class Query:
    tags: set
    when: tuple

class Filters(pydantic.BaseModel):
    allowed: list[str]

class Handle:
    pass

@rewind.tool
def lookup(query, filters, handle, raw, frozen):
    if os.environ["MODE"] == "replay":
        raise AssertionError("replay ran the live function")
    return {"hits": sorted(query.tags)}

session = rewind.record if os.environ["MODE"] == "record" else rewind.replay
with session(os.environ["TRACE"]) as s:
    for i in range(3):
        result = lookup(
            Query(tags={"alpha", "beta", "gamma", "delta", str(i)}, when=(2026, i)),
            Filters(allowed=["x", "y"]),
            Handle(),
            b"\\x00bytes" + bytes([i]),
            frozenset({"p", "q", "r", str(i)}),
        )
print(s.cursor if os.environ["MODE"] == "replay" else len(s.trace))
"""


def test_a_trace_recorded_under_one_hash_seed_replays_under_another(run_python, trace_path) -> None:
    recorded = run_python(RECORD_OR_REPLAY, env={"MODE": "record", "TRACE": str(trace_path), "PYTHONHASHSEED": "1"})
    assert recorded.returncode == 0, recorded.stderr
    for seed in ("2", "987"):
        env = {"MODE": "replay", "TRACE": str(trace_path), "PYTHONHASHSEED": seed}
        replayed = run_python(RECORD_OR_REPLAY, env=env)
        assert replayed.returncode == 0, replayed.stderr
        assert replayed.stdout.strip() == "3"
