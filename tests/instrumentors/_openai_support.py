"""Helpers shared by the ``test_openai_*`` files (their fixtures live in ``conftest.py``).

Every test talks to the real ``openai`` SDK over real loopback HTTP: the bundled
``StubServer`` speaks the OpenAI wire format (JSON and SSE).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rewind

API_KEY = "sk-test-SECRET-never-in-a-trace"
MODEL = "gpt-4o-mini"


def _has_responses() -> bool:
    try:
        import openai.resources.responses  # noqa: F401
    except ImportError:
        return False
    return True


HAS_RESPONSES = _has_responses()
needs_responses = pytest.mark.skipif(not HAS_RESPONSES, reason="this openai SDK predates the Responses API")


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def chat_parse(client: Any) -> Any:
    """``chat.completions.parse`` where the SDK has it, ``beta.chat.completions.parse`` before."""
    completions = client.chat.completions
    if hasattr(completions, "parse"):
        return completions.parse
    return client.beta.chat.completions.parse


def chat_stream(client: Any) -> Any:
    completions = client.chat.completions
    if hasattr(completions, "stream"):
        return completions.stream
    return client.beta.chat.completions.stream


def raw_parse(client: Any) -> Any | None:
    raw = client.chat.completions.with_raw_response
    return getattr(raw, "parse", None)


def events(path: Path) -> list[rewind.Event]:
    return list(rewind.Trace.load(path).events)
