"""One trace as report data: a row per step (what the list and the timeline show), the
trace's header and totals, and the step bodies as JSON lines for the detail view.

Each row's summary, tokens and cost follow the rules of ``rewind._preview`` and
``rewind.accounting`` (what ``rewind show`` and ``rewind stats`` use): the page applies
them to the steps it embeds (``static/summaries.js``), and this module to the steps whose
bodies are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rewind.inspection.accounting import DEFAULT_PRICES, PRICES_CHECKED, ModelPrice, _lower_keys, price_for, usage_of
from rewind.inspection.preview import error_line, model_of, outcome, stream_text
from rewind.inspection.provenance import hybrid_provenance
from rewind.storage import blobs as _blobs
from rewind.storage.trace import BLOBS_FORMAT_VERSION, Event, Trace

from ._payload import CLIP, Embedder

_SUMMARY = 240
_STREAMED = 20_000
_HEADER_STRING = 2_000
# Beyond these a number in a skeleton is damage, not time (the year 5138; 115 days).
_MAX_TS = 1e11
_MAX_MS = 1e10


@dataclass
class TraceSection:
    """What the page gets for one trace: ``data`` (JSON-able) and ``bodies`` (one JSON text per step)."""

    data: dict[str, Any]
    bodies: list[bytes] = field(default_factory=list)


def _blob_store(trace: Trace) -> _blobs.BlobStore | None:
    if trace.path is None or trace.version < BLOBS_FORMAT_VERSION:
        return None
    return _blobs.BlobStore(_blobs.resolve_dir(trace.path, trace.header), trace_path=trace.path)


def _header(value: Any) -> Any:
    """The header as the page shows it: user data too (``meta=``), so long strings are cut
    (and NaN or an infinity, which JSON lacks, is shown as Python writes it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, str):
        return (
            value
            if len(value) <= _HEADER_STRING
            else {CLIP: value[:_HEADER_STRING], "omitted": len(value) - _HEADER_STRING}
        )
    if isinstance(value, list):
        return [_header(item) for item in value]
    if isinstance(value, dict):
        return {key: _header(item) for key, item in value.items()}
    return value


def _summary(
    event: Event, flags: list[str], prices: Mapping[str, ModelPrice] | None, cache: dict[str, Any]
) -> dict[str, Any]:
    """What the row of a step left out of the report shows (the page cannot work it out
    without the body): the rules ``static/summaries.js`` applies to every other step."""
    step = event.hydrated()
    row: dict[str, Any] = {"summary": outcome(step, _SUMMARY)}
    if not event.ok:
        row["error"] = error_line(step.error)
    stream = step.get("stream")
    if event.kind == "llm":
        model = row["model"] = model_of(step)
        tokens = usage_of(step)
        if tokens is not None:
            row["tin"], row["tout"] = tokens
            if model is not None and event.live:
                if model not in cache:
                    cache[model] = price_for(model, prices)
                price = cache[model]
                if price is not None:
                    row["cost"] = price.cost(*tokens)
        if stream is not None:
            streamed = stream_text(step)
            if streamed:
                row["streamed"] = streamed if len(streamed) <= _STREAMED else streamed[:_STREAMED] + " …"
    if isinstance(stream, dict) and stream.get("truncated"):
        flags.append("stream-cut")
    return row


def _price_table(prices: Mapping[str, ModelPrice] | None) -> list[list[Any]]:
    """``[model, input, output, rank]`` rows the page prices models by, as ``price_for``
    does: the caller's table (rank 0, lower-cased) before the built-in one."""
    table = [[model, price.input, price.output, 0] for model, price in _lower_keys(prices or {}).items()]
    table.extend([model, price.input, price.output, 1] for model, price in DEFAULT_PRICES.items())
    return table


def build_section(
    trace: Trace,
    embedder: Embedder,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
    label: str | None = None,
    order: list[int] | None = None,
) -> TraceSection:
    """Rows, totals and bodies for ``trace``. ``order`` (indexes into ``trace.events``)
    says which bodies get the size budget first; the rest follow in step order.

    ``columns`` hold what the skeletons tell, a list per field. The page makes the rows,
    summarizes each embedded step from its body (``static/summaries.js``) and adds up
    tokens and cost, so only steps left out of the report are read here (``summarized``,
    by step index)."""
    store = _blob_store(trace)
    events = trace.events
    # Skeleton numbers come from the file as written: a hand-edited trace may hold
    # infinities or negative durations, which the page must not have to draw.
    ts = [e.ts if math.isfinite(e.ts) and 0 < e.ts < _MAX_TS else 0.0 for e in events]
    durations = [e.duration_ms if 0 < e.duration_ms < _MAX_MS else 0.0 for e in events]
    starts = [t for t in ts if t > 0]
    t0 = min(starts) if starts else 0.0
    forked = trace.header.get("forked_from")
    fork_at = forked.get("at") if isinstance(forked, dict) else None
    # The skeletons as columns: cheaper to build and to write than a dict per step.
    flags: list[list[str]] = [[] for _ in events]
    if fork_at is not None:
        fork = next((index for index, event in enumerate(events) if event.live), None)
        if fork is not None:
            flags[fork].append("fork")
    hybrid = hybrid_provenance(trace)
    if hybrid is not None:
        # Served and live steps interleave: each live one is marked, as each served one is (↺).
        for index, event in enumerate(events):
            if event.live:
                flags[index].append("live")
    columns = {
        "seq": [e.seq for e in events],
        "kind": [e.kind for e in events],
        "name": [e.name for e in events],
        "t": [round((t - t0) * 1000.0, 3) if t > 0 else 0.0 for t in ts],
        "d": durations,
        "ok": [e.ok for e in events],
        "live": [e.live for e in events],
        "flags": flags,
    }

    bodies: list[bytes] = [b"null"] * len(events)
    summarized: dict[str, dict[str, Any]] = {}
    first = order or []
    seen = set(first)
    prices_cache: dict[str, Any] = {}
    for index in [*first, *(i for i in range(len(events)) if i not in seen)]:
        text, clipped = embedder.step(trace, events[index], store)
        bodies[index] = text
        if text == b"null":
            flags[index].append("omitted")
            summarized[str(index)] = _summary(events[index], flags[index], prices, prices_cache)
        elif clipped:
            flags[index].append("clipped")

    timed = [i for i, t in enumerate(ts) if t > 0]
    wall = (max(ts[i] * 1000 + durations[i] for i in timed) - t0 * 1000) if timed else 0.0
    kinds: dict[str, int] = {}
    for event in events:
        kinds[event.kind] = kinds.get(event.kind, 0) + 1
    # Tokens and cost (rewind.account's figures) are added by the page from the rows.
    totals = {
        "steps": len(events),
        "errors": sum(1 for e in events if not e.ok),
        "kinds": kinds,
        "wall_ms": round(wall, 3),
        "live_ms": round(sum(d for d, e in zip(durations, events) if e.live), 3),
        "replayed": sum(1 for e in events if not e.live),
        "prices_checked": PRICES_CHECKED,
    }
    notes: list[str] = []
    if hybrid is not None:
        notes.append("this run " + hybrid)
    if trace.torn_tail:
        notes.append(
            "the last line of the file is torn (the recording process was killed mid-write); complete steps shown"
        )
    data = {
        "label": label or trace.path or "trace",
        "path": trace.path,
        "header": _header(trace.header),
        "version": trace.version,
        "torn_tail": trace.torn_tail,
        "fork_at": fork_at,
        "t0": t0,
        "totals": totals,
        "prices": _price_table(prices),
        "columns": columns,
        "summarized": summarized,
        "notes": notes,
    }
    return TraceSection(data=data, bodies=bodies)


__all__ = ["TraceSection", "build_section"]
