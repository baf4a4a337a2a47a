"""What the tests of the non-Stainless SDKs (``cohere``, ``mistralai``, ``google-genai``) share.

A test module imports the helpers, and the ``spans`` fixture by its function name
(``spans_fixture``), which registers it for that module only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.engine.telemetry import TRACERS

#: One OpenAI-style function tool (Cohere v2 and Mistral take this shape as it is).
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a city up.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def events(path: Path) -> list[rewind.Event]:
    return list(rewind.Trace.load(path).events)


def patching(patch: Callable[[], Callable[[], None]]) -> Iterator[None]:
    """The body of a ``patched`` fixture: ``patch`` applied for the test, undone after it."""
    unpatch = patch()
    try:
        yield
    finally:
        unpatch()


@pytest.fixture(name="spans")
def spans_fixture() -> Iterator[InMemorySpanExporter]:
    """The spans rewind's private tracer provider finishes during the test."""
    if not TRACERS.uses_private_provider():
        pytest.skip("a global SDK tracer provider is configured in this process")
    memory = InMemorySpanExporter()
    TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield memory
    finally:
        memory.clear()
        memory.shutdown()  # the SDK cannot remove a processor; a shut-down exporter drops spans
