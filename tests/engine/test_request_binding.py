"""The decorators' hand-written binding gives exactly what ``Signature.bind`` gives."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from rewind.engine.decorators import _RequestBinder


# Signature shapes, not types: each is bound with random calls below.
def f_named(a, b=2, *, c, d=4): ...
def f_method(self, x, y=1): ...
def f_var_kw(**request): ...
def f_mixed(a, **rest): ...
def f_default_self(self=None, x=1): ...
def f_keyword_only(*, k): ...
def f_classmethod(cls, a, *, b=1, **kw): ...
def f_nothing(): ...
def f_var_args(a, *args): ...


NAMES = ["a", "b", "c", "d", "x", "y", "k", "self", "cls", "zz", "request", "rest", "kw", "args"]


def general(binder: _RequestBinder, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    fast, binder._fast = binder._fast, None
    try:
        return binder(args, kwargs)
    finally:
        binder._fast = fast


@pytest.mark.parametrize(
    "fn",
    [f_named, f_method, f_var_kw, f_mixed, f_default_self, f_keyword_only, f_classmethod, f_nothing, f_var_args],
)
def test_fast_binding_matches_signature_bind_key_for_key(fn: Callable[..., Any]) -> None:
    binder = _RequestBinder(fn)
    rng = random.Random(fn.__name__)
    for _ in range(2_000):
        args = tuple(rng.randint(0, 9) for _ in range(rng.randint(0, 4)))
        kwargs = {name: rng.randint(0, 9) for name in rng.sample(NAMES, rng.randint(0, 4))}
        fast, reference = binder(args, dict(kwargs)), general(binder, args, dict(kwargs))
        assert fast == reference and list(fast) == list(reference), (args, kwargs)


def test_calls_bind_would_reject_keep_a_faithful_request() -> None:
    binder = _RequestBinder(f_named)
    assert binder((1,), {"zz": 3}) == {"args": [1], "kwargs": {"zz": 3}}  # unexpected keyword
    assert binder((1, 2, 3), {"c": 1}) == {"args": [1, 2, 3], "kwargs": {"c": 1}}  # too many positionals
    assert binder((1,), {"a": 1, "c": 1}) == {"args": [1], "kwargs": {"a": 1, "c": 1}}  # a given twice
    assert binder((), {"c": 1}) == {"args": [], "kwargs": {"c": 1}}  # a missing
    assert binder((1,), {"c": 3}) == {"a": 1, "c": 3}
