"""The ``fireworks-ai`` SDK (1.x, Stainless): chat recorded and replayed like OpenAI.

The shared suite lives in ``_openai_compat_support``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _openai_compat_support import FIREWORKS, MODEL, CompatSuite, ask, check_hooks_come_and_go, check_spans
from rewind.instrumentors.fireworks import FireworksInstrumentor

import rewind
from rewind.stub_server import StubServer


class TestFireworks(CompatSuite):
    sdk = FIREWORKS


def test_spans_follow_genai_conventions(run_python: Any, tmp_path: Path) -> None:
    check_spans("FIREWORKS", run_python, tmp_path)


def test_chat_replays_as_the_chat_completion_type_not_the_legacy_one(stub: StubServer, trace_path: Path) -> None:
    import fireworks

    # Two types share the short name: the top-level one is the legacy /v1/completions response.
    assert fireworks.types.CompletionCreateResponse is not fireworks.types.chat.CompletionCreateResponse
    unpatch = rewind.patch_fireworks()
    try:
        client = FIREWORKS.make(stub)
        with rewind.record(trace_path):
            live = client.chat.completions.create(model=MODEL, messages=ask("which type?"))
        stub.stop()
        with rewind.replay(trace_path):
            replayed = client.chat.completions.create(model=MODEL, messages=ask("which type?"))
    finally:
        unpatch()
    assert type(replayed) is fireworks.types.chat.CompletionCreateResponse
    assert replayed.choices[0].message.content == live.choices[0].message.content


def test_instrumentor_contract() -> None:
    import fireworks

    instrumentor = FireworksInstrumentor()
    assert list(instrumentor.instrumentation_dependencies()) == ["fireworks-ai >= 1.2"]
    chat = fireworks.resources.chat.completions
    check_hooks_come_and_go(instrumentor, (chat.CompletionsResource, chat.AsyncCompletionsResource))
