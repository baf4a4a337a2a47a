"""Fixtures and helpers shared by the ``test_anthropic_*`` files.

Every test drives the real ``anthropic`` SDK over real loopback HTTP against the bundled
``StubServer``, which speaks the Messages wire format (JSON and named SSE events). The
folder's ``conftest.py`` registers the fixtures under their short names (``claude``,
``aclaude``, ``patched_anthropic``).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.stub_server import StubServer

API_KEY = "sk-ant-test-SECRET-never-in-a-trace"
MODEL = "claude-stub"
LONG = "one two three four five six seven eight nine ten"

TOOLS = [
    {
        "name": "search",
        "description": "Search the web.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    }
]
THINKING = {"type": "enabled", "budget_tokens": 1024}


def _has(module: str, attr: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), attr)
    except ImportError:
        return False


def _has_method(module: str, cls: str, method: str) -> bool:
    try:
        return hasattr(getattr(importlib.import_module(module), cls), method)
    except (ImportError, AttributeError):
        return False


HAS_PARSE = _has_method("anthropic.resources.messages", "Messages", "parse")
HAS_THINKING = _has("anthropic.types", "ThinkingBlock")
HAS_BETA_STREAM = _has_method("anthropic.resources.beta.messages", "Messages", "stream")
HAS_SDK_SPANS = _has("anthropic._base_client", "start_api_call_span")

needs_parse = pytest.mark.skipif(not HAS_PARSE, reason="this anthropic SDK has no messages.parse")
needs_thinking = pytest.mark.skipif(not HAS_THINKING, reason="this anthropic SDK predates thinking blocks")
needs_beta_stream = pytest.mark.skipif(not HAS_BETA_STREAM, reason="this anthropic SDK has no beta.messages.stream")
needs_sdk_spans = pytest.mark.skipif(not HAS_SDK_SPANS, reason="this anthropic SDK emits no spans of its own")


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def events(path: Path) -> list[rewind.Event]:
    return list(rewind.Trace.load(path).events)


@pytest.fixture(name="patched_anthropic")
def patched_anthropic_fixture() -> Iterator[None]:
    from rewind.setup.integrations import patch_anthropic

    unpatch = patch_anthropic()
    try:
        yield
    finally:
        unpatch()


@pytest.fixture(name="claude")
def claude_fixture(stub: StubServer, patched_anthropic: None) -> Iterator[Any]:
    """A patched ``anthropic.Anthropic`` on the stub server (no retries: failures show at once)."""
    import anthropic

    client = anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key=API_KEY, max_retries=0)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(name="aclaude")
async def aclaude_fixture(stub: StubServer, patched_anthropic: None) -> AsyncIterator[Any]:
    """A patched ``anthropic.AsyncAnthropic`` on the stub server."""
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=stub.anthropic_base_url, api_key=API_KEY, max_retries=0)
    try:
        yield client
    finally:
        await client.close()
