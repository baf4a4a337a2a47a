"""The ``groq`` SDK: recorded and replayed like OpenAI (shared suite in ``_openai_compat_support``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _openai_compat_support import GROQ, CompatSuite, check_hooks_come_and_go, check_spans
from rewind.instrumentors.groq import GroqInstrumentor


class TestGroq(CompatSuite):
    sdk = GROQ


def test_spans_follow_genai_conventions(run_python: Any, tmp_path: Path) -> None:
    check_spans("GROQ", run_python, tmp_path)


def test_instrumentor_contract() -> None:
    import groq

    instrumentor = GroqInstrumentor()
    assert instrumentor is GroqInstrumentor()
    assert list(instrumentor.instrumentation_dependencies()) == ["groq >= 0.8"]
    check_hooks_come_and_go(
        instrumentor, (groq.resources.chat.completions.Completions, groq.resources.embeddings.AsyncEmbeddings)
    )


def test_raw_response_header_raw_is_recognized(stub: Any, trace_path: Path) -> None:
    """Groq's codegen stamps ``X-Stainless-Raw-Response: raw`` where openai's legacy one stamps ``true``."""
    from _openai_compat_support import MODEL, ask

    import rewind

    unpatch = rewind.patch_groq()
    try:
        client = GROQ.make(stub)
        with rewind.record(trace_path):
            raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
        assert stub.requests[-1].headers["x-stainless-raw-response"] == "raw"
        stub.stop()
        with rewind.replay(trace_path):
            replayed = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("raw"))
    finally:
        unpatch()
    assert type(replayed) is type(raw)  # groq.APIResponse, not a legacy wrapper
    assert replayed.parse() == raw.parse()
