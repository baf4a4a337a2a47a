"""The friendly patching API: ``patch_openai()``, ``patch_anthropic()``, ``auto_patch()``, ``patched()``.

Each is a thin, reference-counted call into a real OpenTelemetry ``BaseInstrumentor``
(the same class ``opentelemetry-instrument`` loads through the ``rewind_*`` entry
points)::

    unpatch = rewind.patch_openai()     # idempotent; returns its own unpatch()
    ...
    unpatch()                           # hooks stay until the LAST consumer unpatches

    with rewind.integrations.patched("openai"):
        ...

A provider is the ``DECLARATION`` in its own module (``instrumentors/<provider>.py``), found
through its ``rewind_<name>`` entry point (``rewind.engine.providers``): ``auto_patch`` and
``patched`` know every declared provider. The ``patch_<name>()`` functions below are one
explicit line each, on purpose: they are public API, and type checkers and
``from rewind import patch_openai`` need them spelled out; a provider without one is
patched by name (``auto_patch("name")``). Hooks installed by someone else
(``opentelemetry-instrument``) are used as they are and never removed by an ``unpatch()``
here. With no session active, hooked calls pass straight through.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rewind.engine.providers import PROVIDERS, ProviderSpec, register, register_provider
from rewind.errors import RewindError

Unpatch = Callable[[], None]


@dataclass
class _Hold:
    """Who holds a provider's hooks: how many ``patch_*`` consumers, and whether rewind installed them."""

    provider: ProviderSpec
    count: int = 0
    owned: bool = False

    def instance(self) -> Any:
        module, _, cls = self.provider.instrumentor.partition(":")
        return getattr(importlib.import_module(module), cls)()


_HOLDS: dict[str, _Hold] = {}
_LOCK = threading.RLock()


def providers() -> list[str]:
    """Every provider name ``auto_patch`` knows, installed or not."""
    return sorted(PROVIDERS)


def _acquire(provider: _Hold) -> None:
    with _LOCK:
        if provider.count == 0:
            instrumentor = provider.instance()
            if instrumentor.is_instrumented_by_opentelemetry:
                provider.owned = False  # someone else's hooks: use them, never remove them
            else:
                instrumentor.instrument(skip_dep_check=True)
                provider.owned = instrumentor.is_instrumented_by_opentelemetry
        provider.count += 1


def _release(provider: _Hold) -> None:
    with _LOCK:
        if provider.count == 0:
            return
        provider.count -= 1
        if provider.count == 0 and provider.owned:
            provider.instance().uninstrument()
            provider.owned = False


def _patch(provider: _Hold) -> Unpatch:
    _acquire(provider)
    done = threading.Event()

    def unpatch() -> None:
        # Idempotent: a second call never releases another consumer's hold.
        with _LOCK:
            if done.is_set():
                return
            done.set()
            _release(provider)

    return unpatch


def patch_openai() -> Unpatch:
    """Hook the ``openai`` SDK (chat completions, Responses API, embeddings); returns ``unpatch``."""
    return _patch(_lookup("openai", strict=True))


def patch_anthropic() -> Unpatch:
    """Hook the ``anthropic`` SDK (messages, the stream helper, the beta namespace); returns ``unpatch``."""
    return _patch(_lookup("anthropic", strict=True))


def patch_litellm() -> Unpatch:
    """Hook ``litellm`` (``completion``/``acompletion``, streams, ``embedding``/``aembedding``); returns ``unpatch``."""
    return _patch(_lookup("litellm", strict=True))


def patch_groq() -> Unpatch:
    """Hook the ``groq`` SDK (chat completions, embeddings); returns ``unpatch``."""
    return _patch(_lookup("groq", strict=True))


def patch_together() -> Unpatch:
    """Hook the ``together`` SDK (chat completions, embeddings); returns ``unpatch``."""
    return _patch(_lookup("together", strict=True))


def patch_fireworks() -> Unpatch:
    """Hook the ``fireworks-ai`` SDK (chat completions); returns ``unpatch``."""
    return _patch(_lookup("fireworks", strict=True))


def patch_mcp() -> Unpatch:
    """Hook the ``mcp`` client (``call_tool``, ``list_tools``, ``read_resource``); returns ``unpatch``."""
    return _patch(_lookup("mcp", strict=True))


def patch_mistral() -> Unpatch:
    """Hook the ``mistralai`` SDK (chat complete/stream, embeddings); returns ``unpatch``."""
    return _patch(_lookup("mistral", strict=True))


def patch_cohere() -> Unpatch:
    """Hook the ``cohere`` SDK (v2 chat, chat_stream, embed, rerank; v1 embed, rerank); returns ``unpatch``."""
    return _patch(_lookup("cohere", strict=True))


def patch_gemini() -> Unpatch:
    """Hook ``google-genai`` (generate_content, its stream, embed_content; sync and aio); returns ``unpatch``."""
    return _patch(_lookup("gemini", strict=True))


def patch_xai() -> Unpatch:
    """Hook ``xai_sdk`` chats (``sample``, ``stream``, ``parse``, batches; sync and async); returns ``unpatch``."""
    return _patch(_lookup("xai", strict=True))


def patch_bedrock() -> Unpatch:
    """Hook every boto3 ``bedrock-runtime`` client (converse, invoke_model, their streams); returns ``unpatch``."""
    return _patch(_lookup("bedrock", strict=True))


def _hold(provider: ProviderSpec) -> _Hold:
    with _LOCK:
        return _HOLDS.setdefault(provider.name, _Hold(provider))


def _lookup(name: str, *, strict: bool) -> _Hold:
    provider = PROVIDERS.get(name)
    if provider is None:
        raise ValueError(f"rewind has no provider {name!r}; known providers: {', '.join(providers())}")
    if strict and not provider.installed():
        raise RewindError(
            f"cannot patch {name!r}: the {provider.sdk!r} package is not installed "
            f"(pip install 'agent-rewind-otel[{name}]')"
        )
    return _hold(provider)


def auto_patch(*names: str) -> Unpatch:
    """Patch every installed provider SDK, or exactly the ``names`` given; one ``unpatch`` for all.

    A named provider that is unknown or not installed raises before anything is patched.
    """
    if names:
        chosen = [_lookup(name, strict=True) for name in dict.fromkeys(names)]
    else:
        chosen = [_hold(p) for p in (PROVIDERS[n] for n in providers()) if p.installed()]
    undo: list[Unpatch] = []
    try:
        for provider in chosen:
            undo.append(_patch(provider))
    except BaseException:
        for step in reversed(undo):
            step()
        raise

    def unpatch() -> None:
        for step in reversed(undo):
            step()

    return unpatch


@contextmanager
def patched(*names: str) -> Iterator[None]:
    """``auto_patch(*names)`` on entry, its ``unpatch()`` on exit."""
    unpatch = auto_patch(*names)
    try:
        yield
    finally:
        unpatch()


__all__ = [
    "Unpatch",
    "auto_patch",
    "patch_anthropic",
    "patch_bedrock",
    "patch_cohere",
    "patch_fireworks",
    "patch_gemini",
    "patch_groq",
    "patch_litellm",
    "patch_mcp",
    "patch_mistral",
    "patch_openai",
    "patch_together",
    "patch_xai",
    "patched",
    "providers",
    "register",
    "register_provider",
]
