"""Token and cost accounting from the usage a trace recorded.

Tokens are what the provider reported in each recorded response (or, for a streamed
call, in its recorded chunks); nothing is estimated from text. A call whose recording
carries no usage (an errored call, a stream without ``stream_options={"include_usage":
True}``, a provider that reports none) is counted as *unknown*, never as zero tokens.

Dollar figures are estimates: ``DEFAULT_PRICES`` holds public list prices, prices
change and contracts differ. Pass ``prices=`` to override or extend the table.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rewind.storage.trace import Event, PathLike, Trace

from .preview import model_of, stream_chunks, unwrap_chunk

UNKNOWN_MODEL = "(unknown model)"

#: When the built-in table was last checked against the providers' pricing pages.
PRICES_CHECKED = "2026-03"


@dataclass(frozen=True)
class ModelPrice:
    """List price in USD per 1,000,000 tokens."""

    input: float
    output: float

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"ModelPrice.{name} must be a number >= 0 (USD per 1M tokens), not {value!r}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


def _table(rows: Mapping[str, tuple[float, float]]) -> Mapping[str, ModelPrice]:
    return MappingProxyType({model: ModelPrice(i, o) for model, (i, o) in rows.items()})


#: Approximate public list prices (USD per 1M input/output tokens, standard tier, no
#: batch or cache discounts), checked ``PRICES_CHECKED``. ESTIMATES: verify against the
#: provider before relying on them. A dated snapshot (``gpt-4o-2024-08-06``) is priced
#: by its longest listed prefix.
DEFAULT_PRICES: Mapping[str, ModelPrice] = _table(
    {
        # OpenAI
        "gpt-5.4": (2.50, 15.00),
        "gpt-5.2": (1.75, 14.00),
        "gpt-5.1": (1.25, 10.00),
        "gpt-5": (1.25, 10.00),
        "gpt-5-pro": (15.00, 120.00),
        "gpt-5-mini": (0.25, 2.00),
        "gpt-5-nano": (0.05, 0.40),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1-nano": (0.10, 0.40),
        "gpt-4o": (2.50, 10.00),
        "gpt-4o-mini": (0.15, 0.60),
        "gpt-4-turbo": (10.00, 30.00),
        "gpt-4": (30.00, 60.00),
        "gpt-3.5-turbo": (0.50, 1.50),
        "o1": (15.00, 60.00),
        "o1-mini": (1.10, 4.40),
        "o1-pro": (150.00, 600.00),
        "o3": (2.00, 8.00),
        "o3-mini": (1.10, 4.40),
        "o3-pro": (20.00, 80.00),
        "o4-mini": (1.10, 4.40),
        "text-embedding-3-small": (0.02, 0.0),
        "text-embedding-3-large": (0.13, 0.0),
        "text-embedding-ada-002": (0.10, 0.0),
        # Anthropic (cache writes/reads are billed differently; counted here at the input price)
        "claude-opus-4-6": (5.00, 25.00),
        "claude-opus-4-5": (5.00, 25.00),
        "claude-opus-4-1": (15.00, 75.00),
        "claude-opus-4": (15.00, 75.00),
        "claude-sonnet-4-6": (3.00, 15.00),
        "claude-sonnet-4-5": (3.00, 15.00),
        "claude-sonnet-4": (3.00, 15.00),
        "claude-haiku-4-5": (1.00, 5.00),
        "claude-3-7-sonnet": (3.00, 15.00),
        "claude-3-5-sonnet": (3.00, 15.00),
        "claude-3-5-haiku": (0.80, 4.00),
        "claude-3-opus": (15.00, 75.00),
        "claude-3-haiku": (0.25, 1.25),
        # Google Gemini (prompts up to 200K tokens; longer prompts cost more on Pro models)
        "gemini-3.1-pro": (2.00, 12.00),
        "gemini-3-pro": (2.00, 12.00),
        "gemini-3-flash": (0.50, 3.00),
        "gemini-3.1-flash-lite": (0.25, 1.50),
        "gemini-2.5-pro": (1.25, 10.00),
        "gemini-2.5-flash": (0.30, 2.50),
        "gemini-2.5-flash-lite": (0.10, 0.40),
        "gemini-2.0-flash": (0.10, 0.40),
        "gemini-2.0-flash-lite": (0.075, 0.30),
        "gemini-1.5-pro": (1.25, 5.00),
        "gemini-1.5-flash": (0.075, 0.30),
        # Mistral
        "mistral-large": (0.50, 1.50),
        "mistral-large-2411": (2.00, 6.00),
        "mistral-large-2407": (2.00, 6.00),
        "mistral-medium": (0.40, 2.00),
        "mistral-small": (0.10, 0.30),
        "magistral-medium": (2.00, 5.00),
        "magistral-small": (0.50, 1.50),
        "codestral": (0.30, 0.90),
        "devstral": (0.40, 2.00),
        "ministral-8b": (0.10, 0.10),
        "ministral-3b": (0.04, 0.04),
        "open-mistral-nemo": (0.15, 0.15),
        "pixtral-large": (2.00, 6.00),
        "mistral-embed": (0.10, 0.0),
    }
)


@dataclass(frozen=True)
class ModelUsage:
    """Tokens one model used across a trace, and their estimated cost."""

    model: str
    calls: int
    calls_with_usage: int
    calls_without_usage: int
    input_tokens: int
    output_tokens: int
    price: ModelPrice | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def priced(self) -> bool:
        return self.price is not None

    @property
    def cost(self) -> float | None:
        """Estimated USD for the calls with usage; ``None`` when unpriced or no call reported usage."""
        if self.price is None or self.calls_with_usage == 0:
            return None
        return self.price.cost(self.input_tokens, self.output_tokens)


@dataclass(frozen=True)
class Accounting:
    """Token usage and estimated cost of one trace, per model and in total."""

    per_model: list[ModelUsage] = field(default_factory=list)
    #: llm steps a fork served from its source trace: not spent by this run, not counted.
    replayed_calls: int = 0

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.per_model)

    @property
    def total_input_tokens(self) -> int:
        return sum(m.input_tokens for m in self.per_model)

    @property
    def total_output_tokens(self) -> int:
        return sum(m.output_tokens for m in self.per_model)

    @property
    def total_tokens(self) -> int:
        return self.total_input_tokens + self.total_output_tokens

    @property
    def calls_without_usage(self) -> int:
        return sum(m.calls_without_usage for m in self.per_model)

    @property
    def unpriced_models(self) -> list[str]:
        """Models that reported usage but have no price (so they are missing from ``total_cost``)."""
        return [m.model for m in self.per_model if not m.priced and m.calls_with_usage]

    @property
    def total_cost(self) -> float | None:
        """Estimated USD over every priced model; ``None`` when nothing could be priced."""
        costs = [m.cost for m in self.per_model if m.cost is not None]
        return sum(costs) if costs else None

    @property
    def complete(self) -> bool:
        """True when every call reported usage and every model has a price."""
        return self.calls_without_usage == 0 and not self.unpriced_models


def account(
    trace: Trace | PathLike, *, prices: Mapping[str, ModelPrice] | None = None, count_replayed: bool = False
) -> Accounting:
    """Sum the recorded usage of ``trace``'s llm steps per model and price it.

    ``prices`` (``{model: ModelPrice}``) is consulted before ``DEFAULT_PRICES``; a model
    is priced by an exact name or its longest listed prefix (``gpt-4o`` prices
    ``gpt-4o-2024-08-06``), case-insensitively. Steps a replay or fork served (not live)
    cost nothing in this run and are only counted, unless ``count_replayed`` prices them
    too (what re-recording them would cost).
    """
    if not isinstance(trace, Trace):
        trace = Trace.open(trace)
    user = _lower_keys(prices or {})
    tallies: dict[str, list[int]] = {}
    replayed = 0
    for event in trace.events:
        if event.kind != "llm":
            continue
        if not event.live and not count_replayed:
            replayed += 1
            continue
        model = model_of(event) or UNKNOWN_MODEL
        tally = tallies.setdefault(model, [0, 0, 0, 0])  # calls, with usage, input, output
        tally[0] += 1
        usage = usage_of(event)
        if usage is not None:
            tally[1] += 1
            tally[2] += usage[0]
            tally[3] += usage[1]
    per_model = [
        ModelUsage(
            model=model,
            calls=calls,
            calls_with_usage=with_usage,
            calls_without_usage=calls - with_usage,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            price=price_for(model, user) if model != UNKNOWN_MODEL else None,
        )
        for model, (calls, with_usage, input_tokens, output_tokens) in sorted(tallies.items())
    ]
    return Accounting(per_model=per_model, replayed_calls=replayed)


def format_cost(cost: float) -> str:
    """``$0.0123``; a tiny cost keeps two significant digits (never ``$0.0000``)."""
    if cost >= 100:
        return f"${cost:,.2f}"
    if 0 < cost < 0.0001:
        return f"${cost:.{1 - math.floor(math.log10(cost))}f}"
    return f"${cost:.4f}"


def _lower_keys(prices: Mapping[str, ModelPrice]) -> dict[str, ModelPrice]:
    out: dict[str, ModelPrice] = {}
    for model, price in prices.items():
        if not isinstance(price, ModelPrice):
            raise TypeError(f"prices[{model!r}] must be a ModelPrice(input, output), not {type(price).__name__}")
        out[str(model).lower()] = price
    return out


_BOUNDARY = "-@:_"


def price_for(model: str, prices: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model`` from ``prices`` and ``DEFAULT_PRICES``; ``None`` if unlisted.

    The most specific entry wins: an exact name, else the longest listed prefix ending at
    a separator (``gpt-4o`` prices ``gpt-4o-2024-08-06``, ``gpt-4o-mini`` prices
    ``gpt-4o-mini-2024-07-18``). On equally specific entries ``prices`` wins.
    """
    name = model.lower()
    names = [name]
    if "/" in name:  # "openai/gpt-4o", "models/gemini-2.5-pro"
        names.append(name.rsplit("/", 1)[1])
    tables: list[Mapping[str, ModelPrice]] = [_lower_keys(prices)] if prices else []
    tables.append(DEFAULT_PRICES)
    best: tuple[int, int, ModelPrice] | None = None
    for candidate in names:
        for rank, table in enumerate(tables):
            for key, price in table.items():
                if candidate == key:
                    length = len(key) + 1  # an exact name beats any prefix
                elif len(candidate) > len(key) and candidate.startswith(key) and candidate[len(key)] in _BOUNDARY:
                    length = len(key)
                else:
                    continue
                if best is None or (length, -rank) > (best[0], -best[1]):
                    best = (length, rank, price)
        if best is not None:
            return best[2]
    return None


# -- usage extraction ---------------------------------------------------------------


def usage_of(event: Event) -> tuple[int, int] | None:
    """``(input_tokens, output_tokens)`` recorded for one call, or ``None`` when unknown."""
    found = _usage_in(event.response)
    if found is not None and found[0] is not None:
        return found[0], found[1] or 0
    return _stream_usage(stream_chunks(event))


def _stream_usage(chunks: Iterable[Any]) -> tuple[int, int] | None:
    # Streams report usage in their last chunks (OpenAI chat with include_usage, the
    # Responses API's response.completed) or split across chunks (Anthropic puts input
    # tokens in message_start and the running output count in message_delta).
    input_tokens: int | None = None
    output_tokens: int | None = None
    for chunk in chunks:
        found = _usage_in(unwrap_chunk(chunk))
        if found is None:
            continue
        if found[0] is not None:
            input_tokens = found[0]
        if found[1] is not None:
            output_tokens = found[1]
    if input_tokens is None:
        return None
    return input_tokens, output_tokens or 0


def _usage_in(payload: Any) -> tuple[int | None, int | None] | None:
    if not isinstance(payload, dict):
        return None
    for holder in (payload, payload.get("response"), payload.get("message")):
        if not isinstance(holder, dict):
            continue
        usage = holder.get("usage")
        if isinstance(usage, dict):
            found = _from_usage(usage)
            if found is not None:
                return found
        metadata = holder.get("usage_metadata", holder.get("usageMetadata"))
        if isinstance(metadata, dict):
            found = _from_gemini(metadata)
            if found is not None:
                return found
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _from_usage(usage: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    billed = usage.get("billed_units") or usage.get("tokens")  # Cohere v2
    if isinstance(billed, dict) and _int(usage.get("input_tokens")) is None:
        usage = billed
    prompt = _int(usage.get("prompt_tokens"))  # OpenAI chat / embeddings, Mistral
    if prompt is not None:
        return prompt, _int(usage.get("completion_tokens")) or 0
    input_tokens = _int(usage.get("input_tokens"))  # OpenAI Responses, Anthropic
    output_tokens = _int(usage.get("output_tokens"))
    if input_tokens is None and output_tokens is None:
        return None
    if input_tokens is not None:
        # Anthropic reports cached prompt tokens apart from input_tokens.
        for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            input_tokens += _int(usage.get(key)) or 0
    return input_tokens, output_tokens


def _from_gemini(metadata: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    prompt = _int(metadata.get("prompt_token_count", metadata.get("promptTokenCount")))
    if prompt is None:
        return None
    output = _int(metadata.get("candidates_token_count", metadata.get("candidatesTokenCount"))) or 0
    output += _int(metadata.get("thoughts_token_count", metadata.get("thoughtsTokenCount"))) or 0
    return prompt, output


# -- price overrides ------------------------------------------------------------------


def parse_price(spec: str) -> tuple[str, ModelPrice]:
    """``"gpt-4o=2.5/10"`` → ``("gpt-4o", ModelPrice(2.5, 10))`` (USD per 1M tokens)."""
    model, sep, amounts = spec.partition("=")
    if not sep or not model.strip():
        raise ValueError(f"{spec!r} is not MODEL=IN/OUT (e.g. gpt-4o=2.5/10, USD per 1M tokens)")
    return model.strip(), _price_from(amounts, spec)


def _price_from(value: Any, where: str) -> ModelPrice:
    try:
        if isinstance(value, str):
            left, sep, right = value.partition("/")
            if not sep:
                raise ValueError
            return ModelPrice(float(left), float(right))
        if isinstance(value, (list, tuple)) and len(value) == 2:
            return ModelPrice(float(value[0]), float(value[1]))
        if isinstance(value, dict) and set(value) == {"input", "output"}:
            return ModelPrice(float(value["input"]), float(value["output"]))
    except (TypeError, ValueError):
        pass
    raise ValueError(
        f"{where!r}: a price is IN/OUT USD per 1M tokens, as \"2.5/10\", [2.5, 10] or "
        '{"input": 2.5, "output": 10}, each a number >= 0'
    )


def load_prices(path: PathLike) -> dict[str, ModelPrice]:
    """Read a JSON prices file: ``{"model": {"input": 2.5, "output": 10}, …}`` (or ``[in, out]`` / ``"in/out"``)."""
    where = os.fspath(path)
    try:
        with open(where, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ValueError(f"{where}: cannot read prices file ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{where}: prices file is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f'{where}: a prices file is a JSON object {{"model": {{"input": IN, "output": OUT}}}}')
    out: dict[str, ModelPrice] = {}
    for model, value in data.items():
        try:
            out[model] = _price_from(value, model)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return out
