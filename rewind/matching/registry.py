"""``match="…"``: strategy names and the matchers they build.

A name maps to a factory, or to ``"module:attribute"`` for a strategy that lives above this
layer (``telemetry``, the imported-trace matcher in ``rewind.importing``): it is imported the
first time a replay asks for it, so neither this module nor a plain replay loads it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .strategies import FuzzyMatcher, Matcher, OrderedMatcher, ParallelMatcher, StrictMatcher

Factory = Callable[[], Any]

_FACTORIES: dict[str, Factory | str] = {
    "strict": StrictMatcher,
    "ordered": OrderedMatcher,
    "fuzzy": FuzzyMatcher,
    "parallel": ParallelMatcher,
    "telemetry": "rewind.importing.matcher:TelemetryMatcher",
}


def register_matcher(name: str, factory: Factory | str) -> None:
    """Make ``match=name`` resolve to ``factory()`` (a callable, or ``"module:attribute"``)."""
    _FACTORIES[name] = factory


def strategy_names() -> list[str]:
    return sorted(_FACTORIES)


def _factory(name: str) -> Factory:
    factory = _FACTORIES[name]
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
        _FACTORIES[name] = factory
    return factory


def resolve_matcher(match: str | Matcher) -> Matcher:
    """The matcher ``match=`` names, or ``match`` itself once it looks like one."""
    if isinstance(match, str):
        if match not in _FACTORIES:
            names = ", ".join(repr(n) for n in strategy_names())
            raise ValueError(f"unknown match strategy {match!r}; use one of {names} or a Matcher instance")
        return _factory(match)()
    if isinstance(match, type):
        raise TypeError(f"match= takes a Matcher instance, not the class {match.__name__}; write {match.__name__}()")
    if not hasattr(match, "match") or not hasattr(match, "positional") or not hasattr(match, "start"):
        raise TypeError(
            f"match= must be a strategy name or a Matcher (with positional, start() and match()), "
            f"not {type(match).__name__}"
        )
    return match
