"""Hints in the user's own words: Python keywords, CLI options or ``REWIND_*`` variables.

Messages are written once, in Python terms (``match='fuzzy'``, ``normalize=fn``,
``require_full_consumption=True``). A session opened by ``rewind replay`` speaks CLI
(``--match fuzzy``), one opened from ``REWIND_*`` variables speaks environment
(``REWIND_MATCH=fuzzy``): ``rewind.bootstrap`` sets ``CURRENT`` for it, and
``translate`` rewrites a message's hints on their way out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextvars import ContextVar
from typing import Literal

Dialect = Literal["python", "cli", "env"]

#: How the session in this context was opened; rewind.bootstrap sets it for CLI/env sessions.
CURRENT: ContextVar[Dialect] = ContextVar("rewind_dialect", default="python")

_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]


def _rules(dialect: Dialect) -> list[_Rule]:
    if dialect == "cli":
        return [
            (re.compile(r"match='(\w+)'"), lambda m: f"--match {m.group(1)}"),
            (re.compile(r"require_full_consumption=True"), lambda m: "--require-full-consumption"),
            (re.compile(r"tolerate_drift=True"), lambda m: "--tolerate-drift"),
            (
                re.compile(r"normalize=fn to record\(\) and replay\(\)"),
                lambda m: "--normalize MODULE:FUNCTION to rewind record and rewind replay",
            ),
            (re.compile(r"normalize=fn"), lambda m: "--normalize MODULE:FUNCTION"),
            (re.compile(r"rewind\.record\(path\)"), lambda m: "rewind record TRACE -- CMD"),
            (re.compile(r"rewind\.fork\(path, at=(\d+)\)"), lambda m: f"rewind replay --fork-at {m.group(1)}"),
        ]
    if dialect == "env":
        return [
            (re.compile(r"match='(\w+)'"), lambda m: f"REWIND_MATCH={m.group(1)}"),
            (re.compile(r"require_full_consumption=True"), lambda m: "REWIND_REQUIRE_FULL_CONSUMPTION=1"),
            (re.compile(r"tolerate_drift=True"), lambda m: "REWIND_TOLERATE_DRIFT=1"),
            (
                re.compile(r"normalize=fn to record\(\) and replay\(\)"),
                lambda m: "REWIND_NORMALIZE=module:function when recording and replaying",
            ),
            (re.compile(r"normalize=fn"), lambda m: "REWIND_NORMALIZE=module:function"),
            (re.compile(r"rewind\.record\(path\)"), lambda m: "REWIND_RECORD=path"),
            (re.compile(r"rewind\.fork\(path, at=(\d+)\)"), lambda m: f"REWIND_FORK_AT={m.group(1)}"),
        ]
    return []


def translate(text: str, dialect: Dialect | None = None) -> str:
    """``text`` with its Python-keyword hints in ``dialect`` (default: the current one)."""
    for pattern, replace in _rules(dialect or CURRENT.get()):
        text = pattern.sub(replace, text)
    return text


__all__ = ["CURRENT", "Dialect", "translate"]
