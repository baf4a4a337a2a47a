"""``same_json`` decides what hashing each side's masked canonical JSON decided."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewind.data.canonical import canonical_json
from rewind.inspection.diff_mask import mask, same_json


def _by_digest(a: Any, b: Any, *, masked: bool, provider: bool) -> bool:
    def digest(value: Any) -> str:
        value = mask(value, provider=provider) if masked else value
        return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()

    return digest(a) == digest(b)


CASES = [
    (1, 1.0),
    (True, 1),
    (math.nan, math.nan),
    (-0.0, 0.0),
    ({"a": 1, "usage": {"x": 1}}, {"a": 1}),
    ({"id": "chatcmpl-1"}, {"id": "chatcmpl-2"}),
    ({"created": 1}, {"created": 2}),
    ({"created": True}, {"created": False}),
    ({"text": "at 2024-01-01T10:00:00 ok"}, {"text": "at 2025-02-02T11:11:11 ok"}),
    ([1, 2], [1, 2, 3]),
    ({"a": [1]}, {"a": {"0": 1}}),
    ({"a": None}, {"b": None}),
    ("x", "y"),
]


@pytest.mark.parametrize("masked", [True, False])
@pytest.mark.parametrize("provider", [True, False])
@pytest.mark.parametrize(("a", "b"), CASES)
def test_cases(a: Any, b: Any, masked: bool, provider: bool) -> None:
    assert same_json(a, b, masked=masked, provider=provider) == _by_digest(a, b, masked=masked, provider=provider)


_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, math.nan, math.inf]),
    st.sampled_from(["a", "b", "call_abcdefghij12345", "2024-01-01T10:00:00Z", "x 2024-01-01 10:00 y"]),
)
_keys = st.sampled_from(["id", "msg_id", "created", "usage", "text", "a"])
_json = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3))


@given(_json, _json, st.booleans(), st.booleans())
def test_agrees_with_digests(a: Any, b: Any, masked: bool, provider: bool) -> None:
    assert same_json(a, b, masked=masked, provider=provider) == _by_digest(a, b, masked=masked, provider=provider)
    assert same_json(a, a, masked=masked, provider=provider)


def _masked_by_patterns(value: str) -> str:
    # What _mask_text returned before it skipped texts without a dash.
    from rewind.inspection.diff_mask import _VOLATILE_INSIDE, _VOLATILE_WHOLE

    if _VOLATILE_WHOLE.match(value):
        return "<id>"
    return _VOLATILE_INSIDE.sub("<time/id>", value)


_TEXT = st.text(alphabet="0123456789abcdefABCDEF-:T Z.x", max_size=60) | st.sampled_from(
    ["at 2024-01-01T10:00:00 ok", "id 123e4567-e89b-12d3-a456-426614174000 here", "plain words only", ""]
)


@given(_TEXT)
def test_texts_without_a_dash_skip_the_inside_pattern_unchanged(value: str) -> None:
    assert mask(value) == _masked_by_patterns(value)
