"""One trace as report data: a row per step (what the list and the timeline show), the
trace's header and totals, and the step bodies as JSON lines for the detail view.

Tokens and cost come from ``rewind.accounting`` and summaries from ``rewind._preview``,
the same functions ``rewind show`` and ``rewind stats`` use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import blobs as _blobs
from .._preview import error_line, model_of, outcome, stream_text
from ..accounting import PRICES_CHECKED, ModelPrice, account, price_for, usage_of
from ..trace import BLOBS_FORMAT_VERSION, Event, Trace
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
    """The header as the page shows it: user data too (``meta=``), so long strings are cut."""
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


def _for_accounting(event: Event, step: Event, model: str | None, stream: Any) -> Event:
    """A stand-in holding what ``account`` reads of a step (its model, response, error,
    stream), so totals come from rewind.accounting without keeping every request."""
    if event.kind != "llm":
        return Event(event.seq, event.kind, event.name, event.fingerprint, live=event.live)
    return Event(
        event.seq,
        event.kind,
        event.name,
        event.fingerprint,
        {"model": model} if model else None,
        step.response,
        step.error,
        live=event.live,
        extra={"stream": stream} if stream is not None else None,
    )


def build_section(
    trace: Trace,
    embedder: Embedder,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
    label: str | None = None,
    order: list[int] | None = None,
) -> TraceSection:
    """Rows, totals and bodies for ``trace``. ``order`` (indexes into ``trace.events``)
    says which bodies get the size budget first; the rest follow in step order."""
    store = _blob_store(trace)
    events = trace.events
    # What account() reads of each step, kept small: a hydrated copy parses a step once
    # for every question below, then only its response, error and stream are kept.
    tallied: list[Event] = []
    # Skeleton numbers come from the file as written: a hand-edited trace may hold
    # infinities or negative durations, which the page must not have to draw.
    ts = [e.ts if math.isfinite(e.ts) and 0 < e.ts < _MAX_TS else 0.0 for e in events]
    durations = [e.duration_ms if 0 < e.duration_ms < _MAX_MS else 0.0 for e in events]
    starts = [t for t in ts if t > 0]
    t0 = min(starts) if starts else 0.0
    forked = trace.header.get("forked_from")
    fork_at = forked.get("at") if isinstance(forked, dict) else None
    fork_seen = False
    prices_cache: dict[str, ModelPrice | None] = {}
    rows: list[dict[str, Any]] = []
    for index, event in enumerate(events):
        step = event.hydrated()
        row: dict[str, Any] = {
            "i": index,
            "seq": event.seq,
            "kind": event.kind,
            "name": event.name,
            "t": round((ts[index] - t0) * 1000.0, 3) if ts[index] > 0 else 0.0,
            "d": durations[index],
            "ok": event.ok,
            "live": event.live,
            "summary": outcome(step, _SUMMARY),
        }
        if not event.ok:
            row["error"] = error_line(step.error)
        stream = step.get("stream")
        if event.kind == "llm":
            # model_of on the head first: the request (a parse of the whole line) is
            # read only when the response and stream name no model.
            model = model_of(_for_accounting(event, step, None, stream)) or model_of(step)
            row["model"] = model
            tokens = usage_of(step)
            if tokens is not None:
                row["tin"], row["tout"] = tokens
                if model is not None and event.live:
                    if model not in prices_cache:
                        prices_cache[model] = price_for(model, prices)
                    price = prices_cache[model]
                    if price is not None:
                        row["cost"] = price.cost(*tokens)
        if stream is not None and event.kind == "llm":
            streamed = stream_text(step)
            if streamed:
                row["streamed"] = streamed if len(streamed) <= _STREAMED else streamed[:_STREAMED] + " …"
        flags: list[str] = []
        if isinstance(stream, dict) and stream.get("truncated"):
            flags.append("stream-cut")
        if fork_at is not None and event.live and not fork_seen:
            fork_seen = True
            flags.append("fork")
        row["flags"] = flags
        rows.append(row)
        tallied.append(_for_accounting(event, step, row.get("model"), stream))

    bodies: list[bytes] = [b"null"] * len(events)
    first = order or []
    seen = set(first)
    for index in [*first, *(i for i in range(len(events)) if i not in seen)]:
        text, clipped = embedder.step(trace, events[index], store)
        bodies[index] = text
        if text == b"null":
            rows[index]["flags"].append("omitted")
        elif clipped:
            rows[index]["flags"].append("clipped")

    usage = account(Trace(tallied, header=trace.header, path=trace.path), prices=prices)
    timed = [i for i, t in enumerate(ts) if t > 0]
    wall = (max(ts[i] * 1000 + durations[i] for i in timed) - t0 * 1000) if timed else 0.0
    kinds: dict[str, int] = {}
    for event in events:
        kinds[event.kind] = kinds.get(event.kind, 0) + 1
    totals = {
        "steps": len(events),
        "errors": sum(1 for e in events if not e.ok),
        "kinds": kinds,
        "wall_ms": round(wall, 3),
        "live_ms": round(sum(d for d, e in zip(durations, events) if e.live), 3),
        "replayed": sum(1 for e in events if not e.live),
        "input_tokens": usage.total_input_tokens,
        "output_tokens": usage.total_output_tokens,
        "cost": usage.total_cost,
        "calls_without_usage": usage.calls_without_usage,
        "unpriced_models": usage.unpriced_models,
        "replayed_llm_calls": usage.replayed_calls,
        "prices_checked": PRICES_CHECKED,
        "models": [
            {
                "model": m.model,
                "calls": m.calls,
                "without_usage": m.calls_without_usage,
                "input_tokens": m.input_tokens,
                "output_tokens": m.output_tokens,
                "cost": m.cost,
            }
            for m in usage.per_model
        ],
    }
    notes: list[str] = []
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
        "steps": rows,
        "notes": notes,
    }
    return TraceSection(data=data, bodies=bodies)


__all__ = ["TraceSection", "build_section"]
