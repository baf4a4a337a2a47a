"""Per-run values masked out of a step's payloads, so two live runs can be compared.

Two live runs never match byte for byte: response ids, tool-call ids, timestamps and
token usage change every run. ``mask`` replaces such values by placeholders (in llm
payloads every string ``id``/``*_id`` field; elsewhere values shaped like uuids,
timestamps and provider ids). ``same_json`` tells whether two payloads have the same
canonical JSON once masked, walking both together and stopping at the first
difference, so proving two steps differ rarely costs masking either one whole.
"""

from __future__ import annotations

import re
from typing import Any

_DROPPED_KEYS = frozenset({"usage", "usage_metadata", "usageMetadata", "system_fingerprint", "service_tier"})
_TIME_KEYS = frozenset({"created", "created_at", "completed_at", "ts", "timestamp"})
_VOLATILE_WHOLE = re.compile(
    r"""^(
        [0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}   # uuid
      | \d{4}-\d{2}-\d{2}[T\s]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?      # iso time
      | [0-9a-fA-F]{16,}                                                              # hex id
      | [A-Za-z]+(?:[_-][A-Za-z]+)*[_-](?=[A-Za-z]*\d)[A-Za-z0-9]{12,}               # call_x1…, chatcmpl-…
      | [A-Z][a-z]{2},\s\d{2}\s[A-Z][a-z]{2}\s\d{4}\s\d{2}:\d{2}:\d{2}\sGMT               # HTTP Date header
    )$""",
    re.VERBOSE,
)
_VOLATILE_INSIDE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?"
)


def _is_id_key(key: str | None) -> bool:
    return key is not None and (key == "id" or key.endswith("_id"))


def mask(value: Any, key: str | None = None, *, provider: bool = False, texts: dict[str, str] | None = None) -> Any:
    """``value`` with per-run values replaced by placeholders.

    ``provider`` marks an llm payload, where string ``id``/``*_id`` fields (response,
    message, tool-call ids) are minted by the provider per call; in tool and memory
    payloads an ``id`` may be real data, so only id-shaped strings are masked there.
    ``texts`` caches each string's masked form: an agent re-sends its history on every
    call, so a diff of a long run meets the same messages many times, and the patterns
    are most of its cost.
    """
    return _masked(value, key, provider, texts)


def _masked(value: Any, key: str | None, provider: bool, texts: dict[str, str] | None) -> Any:
    # Positional and dispatched on the exact type first: this runs per node of every
    # payload masked (~50 a chat step); subclasses take the isinstance checks below.
    kind = type(value)
    if kind is str:
        return _masked_text(value, key, provider, texts)
    if kind is dict:
        return {k: _masked(v, k, provider, texts) for k, v in value.items() if k not in _DROPPED_KEYS}
    if kind is list:
        return [_masked(v, None, provider, texts) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v, k, provider, texts) for k, v in value.items() if k not in _DROPPED_KEYS}
    if isinstance(value, list):
        return [_masked(v, None, provider, texts) for v in value]
    if isinstance(value, str):
        return _masked_text(value, key, provider, texts)
    if key in _TIME_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "<time>"
    return value


def _masked_text(value: str, key: str | None, provider: bool, texts: dict[str, str] | None) -> str:
    if provider and _is_id_key(key):
        return "<id>"
    if texts is not None:
        masked = texts.get(value)
        if masked is None:
            masked = texts[value] = _mask_text(value)
        return masked
    return _mask_text(value)


def _mask_text(value: str) -> str:
    if _VOLATILE_WHOLE.match(value):
        return "<id>"
    # Both patterns inside a text (a uuid, a date) hold a dash; prose without one is
    # left as it is without running the pattern at every position (~15 us a message).
    if "-" not in value:
        return value
    return _VOLATILE_INSIDE.sub("<time/id>", value)


def same_json(a: Any, b: Any, *, masked: bool, provider: bool = False, texts: dict[str, str] | None = None) -> bool:
    """Whether ``a`` and ``b`` (parsed JSON data) have the same canonical JSON, after
    ``mask`` when ``masked``: the comparison a hash of each side's canonical JSON makes,
    without building either text."""
    return _same(a, b, None, masked, provider, texts)


def _same(a: Any, b: Any, key: str | None, masked: bool, provider: bool, texts: dict[str, str] | None) -> bool:
    # Loops rather than all(<generator>) (SIM110): this runs per node of every payload
    # compared, and a generator costs ~40% more per element.
    kind = type(a)
    if kind is str and type(b) is str and a == b:
        return True  # masking is a function of the value and its key: equal stays equal
    if kind is dict or isinstance(a, dict):
        if not isinstance(b, dict):
            return False
        if masked and not (_DROPPED_KEYS.isdisjoint(a) and _DROPPED_KEYS.isdisjoint(b)):
            kept_a = [k for k in a if k not in _DROPPED_KEYS]
            if len(kept_a) != sum(1 for k in b if k not in _DROPPED_KEYS):
                return False
        else:
            kept_a = a
            if len(a) != len(b):
                return False
        for k in kept_a:  # noqa: SIM110
            if k not in b or not _same(a[k], b[k], k, masked, provider, texts):
                return False
        return True
    if kind is list or isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        for x, y in zip(a, b):  # noqa: SIM110
            if not _same(x, y, None, masked, provider, texts):
                return False
        return True
    if isinstance(b, (dict, list)):
        return False
    if masked:
        a = mask(a, key, provider=provider, texts=texts)
        b = mask(b, key, provider=provider, texts=texts)
    # The JSON spellings agree: same type (1, 1.0 and true are three spellings), and a
    # float by its repr (NaN equals itself, -0.0 differs from 0.0).
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    return bool(a == b)


__all__ = ["mask", "same_json"]
