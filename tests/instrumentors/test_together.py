"""The ``together`` SDK (2.x, Stainless): recorded and replayed like OpenAI (suite in ``_openai_compat_support``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _openai_compat_support import TOGETHER, CompatSuite, check_hooks_come_and_go, check_spans
from rewind.instrumentors.together import TogetherInstrumentor


class TestTogether(CompatSuite):
    sdk = TOGETHER


def test_spans_follow_genai_conventions(run_python: Any, tmp_path: Path) -> None:
    check_spans("TOGETHER", run_python, tmp_path)


def test_naming_traps_resource_suffix_and_embedding_type() -> None:
    import together

    # Together's codegen names resources "...Resource" and the embeddings response "Embedding".
    assert not hasattr(together.resources.chat.completions, "Completions")
    assert hasattr(together.types, "Embedding") and not hasattr(together.types, "CreateEmbeddingResponse")
    instrumentor = TogetherInstrumentor()
    assert list(instrumentor.instrumentation_dependencies()) == ["together >= 2.0"]
    classes = (
        together.resources.chat.completions.CompletionsResource,
        together.resources.chat.completions.AsyncCompletionsResource,
        together.resources.embeddings.EmbeddingsResource,
        together.resources.embeddings.AsyncEmbeddingsResource,
    )
    check_hooks_come_and_go(instrumentor, classes)


def test_the_hand_written_1x_sdk_is_left_alone_with_a_warning(monkeypatch: Any) -> None:
    import pytest
    import together
    from rewind.instrumentors import _instrumentor, _surface

    from rewind.errors import PatchGapWarning

    monkeypatch.setattr(_instrumentor, "_installed_version", lambda *_: "1.5.35")
    monkeypatch.setattr(_surface, "_WARNED", set())
    original = together.resources.chat.completions.CompletionsResource.__dict__["create"]
    instrumentor = TogetherInstrumentor()
    with pytest.warns(PatchGapWarning, match=r"together >= 2\.0; the installed 1\.5\.35"):
        instrumentor.instrument()
    try:
        assert together.resources.chat.completions.CompletionsResource.__dict__["create"] is original
    finally:
        instrumentor.uninstrument()
