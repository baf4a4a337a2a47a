"""Placeholder API keys for replays in keyless CI.

``openai.OpenAI()``, ``anthropic.Anthropic()`` and most provider clients refuse to be
constructed without an API key, before any call is made, so a replay that needs no key
would still fail where none is set. During a replay (the pytest plugin, ``rewind replay``,
``REWIND_REPLAY``) each variable below that is unset gets a placeholder value. A key that
is set is never touched. The placeholder is not a credential: a call that somehow escaped
the replay is refused by the real service (401) instead of spending money.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

#: What a placeholder key holds; recognizable in a provider's "invalid API key" error.
PLACEHOLDER = "rewind-replay-placeholder-key"

#: One entry per SDK: the variables it reads its key from. The first is set when none is.
SDK_KEYS: tuple[tuple[str, ...], ...] = (
    ("OPENAI_API_KEY",),
    ("ANTHROPIC_API_KEY",),
    ("GROQ_API_KEY",),
    ("TOGETHER_API_KEY",),
    ("FIREWORKS_API_KEY",),
    ("MISTRAL_API_KEY",),
    ("CO_API_KEY",),
    # google-genai reads either, and warns when both are set: set one only when neither is.
    ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
)


def missing(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The placeholders ``environ`` lacks: ``{variable: PLACEHOLDER}``."""
    env = os.environ if environ is None else environ
    return {names[0]: PLACEHOLDER for names in SDK_KEYS if not any(env.get(name) for name in names)}


def fill(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set every missing placeholder in ``environ`` (default ``os.environ``); the names set."""
    env = os.environ if environ is None else environ
    added = missing(env)
    env.update(added)
    return list(added)


@contextmanager
def placeholders() -> Iterator[list[str]]:
    """``fill()`` for a block, then remove exactly the placeholders it set (unless changed since)."""
    added = fill()
    try:
        yield added
    finally:
        for name in added:
            if os.environ.get(name) == PLACEHOLDER:
                del os.environ[name]


__all__ = ["PLACEHOLDER", "SDK_KEYS", "fill", "missing", "placeholders"]
