"""Placeholder API keys for replays in keyless CI.

``openai.OpenAI()``, ``anthropic.Anthropic()`` and most provider clients refuse to be
constructed without an API key, before any call is made, so a replay that needs no key
would still fail where none is set. During a replay (the pytest plugin, ``rewind replay``,
``REWIND_REPLAY``, ``with rewind.replay(...)``) each variable below that is unset gets a
placeholder value (each provider declares the variables its client reads). A key that is set
is never touched. The placeholder is not a
credential: a call that somehow escaped the replay is refused by the real service (401)
instead of spending money. It lives in ``os.environ`` only while a replay holds it (the
environment variable path holds it for the whole process) and is never written anywhere.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager

from .providers import PROVIDERS

#: What a placeholder key holds; recognizable in a provider's "invalid API key" error.
PLACEHOLDER = "rewind-replay-placeholder-key"


def sdk_keys() -> tuple[tuple[str, ...], ...]:
    """One entry per SDK that reads a key: the variables it reads, the first set when none is.

    Each provider declares its own (``ProviderSpec.keys``, in ``instrumentors/<provider>.py``);
    the first call loads the declarations (``rewind.engine.providers``).
    """
    return tuple(p.keys for p in PROVIDERS.values() if p.keys)


def __getattr__(name: str) -> object:
    if name == "SDK_KEYS":  # the constant this once was; computed on use so importing stays cheap
        return sdk_keys()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def missing(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The placeholders ``environ`` lacks: ``{variable: PLACEHOLDER}``."""
    env = os.environ if environ is None else environ
    return {names[0]: PLACEHOLDER for names in sdk_keys() if not any(env.get(name) for name in names)}


def fill(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set every missing placeholder in ``environ`` (default ``os.environ``); the names set."""
    env = os.environ if environ is None else environ
    added = missing(env)
    env.update(added)
    return list(added)


_lock = threading.Lock()
_holders = 0
_added: list[str] = []


def hold() -> Callable[[], None]:
    """Fill the missing placeholders until the returned ``release`` is called.

    Holds nest and overlap (two replays in two threads): the placeholders set by the first
    hold are removed when the last one is released, and only those still holding the
    placeholder value (a key the program set since is kept).
    """
    global _holders, _added
    with _lock:
        if _holders == 0:
            _added = fill()
        _holders += 1
    released = threading.Event()

    def release() -> None:
        global _holders, _added
        with _lock:
            if released.is_set():
                return
            released.set()
            _holders -= 1
            if _holders == 0:
                for name in _added:
                    if os.environ.get(name) == PLACEHOLDER:
                        del os.environ[name]
                _added = []

    return release


@contextmanager
def placeholders() -> Iterator[None]:
    """``hold()`` for a block."""
    release = hold()
    try:
        yield
    finally:
        release()


__all__ = ["PLACEHOLDER", "fill", "hold", "missing", "placeholders", "sdk_keys"]
