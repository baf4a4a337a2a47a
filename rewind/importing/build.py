"""From spans to a rewind trace: pick the run, map each span, order the steps, write the file.

What could not be recovered is never papered over: every step carries its problems
(``imported.problems`` in the trace line), spans no mapper understood are listed with
their attribute names, and a step whose content is missing or truncated is written
(so the run's shape stays whole) but refused at replay (``rewind check`` says why).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rewind.data.canonical import canonical_json, text_fingerprint
from rewind.storage.trace import KINDS, MAX_SEQ, Event, Trace, new_header

from . import wire
from .mappers import mapper_for
from .model import ATTRIBUTES_DROPPED, CONTENT_MISSING, CONTENT_TRUNCATED, TOOLS_MISSING, Draft, Problem, Unmapped
from .spans import SpanRecord, causal_order, depths

#: The trace-line key holding what an imported step came from and what is wrong with it.
IMPORTED = "imported"


@dataclass
class StepReport:
    seq: int
    kind: str
    name: str
    layout: str
    span_id: str
    replayable: bool
    problems: list[Problem]
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "name": self.name,
            "layout": self.layout,
            "span_id": self.span_id,
            "exact": self.exact,
            "replayable": self.replayable,
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass
class ImportReport:
    """What ``import_telemetry`` did: where from, which run, each step, and what it could not use."""

    source: str
    output: str | None
    trace_id: str
    service: str | None
    steps: list[StepReport] = field(default_factory=list)
    unknown: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def replayable(self) -> bool:
        return all(step.replayable for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "output": self.output,
            "trace_id": self.trace_id,
            "service": self.service,
            "replayable": self.replayable,
            "steps": [s.to_dict() for s in self.steps],
            "unknown_layouts": self.unknown,
            "notes": self.notes,
        }


def build(spans: list[SpanRecord], *, source: str, attribute_limit: int | None = None) -> tuple[Trace, ImportReport]:
    """Map one run's spans to a trace (not written) and its report."""
    depth = depths(spans)
    ordered = causal_order(spans, depth)
    by_id = {s.span_id: s for s in ordered}
    mapped: dict[int, Draft] = {}
    unmapped: list[Unmapped] = []
    for index, span in enumerate(ordered):
        mapper = mapper_for(span)
        if mapper is None:
            unmapped.append(Unmapped(span, "no layout", sorted(span.attributes)))
            continue
        try:
            draft = mapper.map_span(span)
        except Exception as exc:  # hostile or odd telemetry: reported, never a crash
            unmapped.append(Unmapped(span, f"{mapper.layout}: {type(exc).__name__}: {exc}", sorted(span.attributes)))
            continue
        if draft is not None:  # None: an agent, chain or workflow span: it holds steps, it is not one
            mapped[index] = draft
    step_spans = _outermost_steps(ordered, mapped, depth, by_id)
    drafts = [draft for index, draft in sorted(mapped.items()) if step_spans.get(draft.span.span_id) is not None]
    _mark_truncation(drafts, attribute_limit)
    trace_id = ordered[0].trace_id if ordered else ""
    services = Counter(s.service for s in ordered if s.service)
    report = ImportReport(source, None, trace_id, services.most_common(1)[0][0] if services else None)
    report.unknown = _unknown(unmapped, step_spans, by_id)
    events = _events(drafts, report)
    header = new_header(
        None,
        imported={
            "source": source,
            "trace_id": trace_id,
            "service": report.service,
            "layouts": dict(Counter(d.layout for d in drafts)),
        },
    )
    return Trace(events, header=header), report


def _outermost_steps(
    ordered: list[SpanRecord], mapped: dict[int, Draft], depth: dict[str, int], by_id: dict[str, SpanRecord]
) -> dict[str, str]:
    """The steps (span id -> kind) kept: a step inside a step of its own kind is a second
    instrumentation's span for the same call. Decided ancestors first, each span once, from
    the kinds of the steps above its parent (so a deep chain costs its length)."""
    above: dict[str, frozenset[str]] = {}
    steps: dict[str, str] = {}
    drafts = {ordered[index].span_id: draft for index, draft in mapped.items()}
    for span in sorted(ordered, key=lambda s: depth[s.span_id]):
        if span.span_id in above:
            continue  # a repeated span id: its first span decided
        parent = span.parent_id
        kinds: frozenset[str] = frozenset()
        if parent is not None and parent in by_id and parent in above:
            kinds = above[parent] | ({steps[parent]} if parent in steps else set())
        above[span.span_id] = kinds
        draft = drafts.get(span.span_id)
        if draft is not None and draft.kind not in kinds:
            steps[span.span_id] = draft.kind
    return steps


def _events(drafts: list[Draft], report: ImportReport) -> list[Event]:
    seqs = [d.seq if d.event is None else d.event.get("seq") for d in drafts]
    keep_seqs = all(_valid_seq(s) for s in seqs) and len(set(seqs)) == len(seqs)
    if drafts and not keep_seqs and any(s is not None for s in seqs):
        report.notes.append(
            "rewind.seq is missing, repeated or out of range on some spans: steps renumbered in causal order"
        )
    events: list[Event] = []
    for index, draft in enumerate(drafts):
        seq = int(seqs[index]) if keep_seqs else index  # type: ignore[arg-type]
        event = _event(draft, seq)
        events.append(event)
        report.steps.append(
            StepReport(
                seq,
                event.kind,
                event.name,
                draft.layout,
                draft.span.span_id,
                draft.replayable,
                draft.problems,
                draft.event is not None and not draft.problems,
            )
        )
    events.sort(key=lambda e: e.seq)
    report.steps.sort(key=lambda s: s.seq)
    return events


def _valid_seq(seq: Any) -> bool:
    return type(seq) is int and 0 <= seq < MAX_SEQ


def _event(draft: Draft, seq: int) -> Event:
    if draft.event is not None and draft.replayable:
        # The recorder's own line, proven by its digest; renumbered when runs were joined.
        return Event.from_dict({**draft.event, "seq": seq})
    span = draft.span
    if draft.chat is not None:
        _assess_chat(draft)
        chat = draft.chat
        draft.name = draft.name or wire.step_name(chat)
        draft.request = wire.build_request(chat)
        if span.status_code == "ERROR" and chat.output is None and chat.raw_response is None:
            from rewind.importing.mappers.genai import error_record

            draft.error = error_record(span)
        else:
            draft.response = wire.build_response(
                chat, created=span.start_ns // 1_000_000_000, fallback_id=f"imported-{span.span_id}"
            )
    elif draft.kind not in KINDS:
        draft.problem(CONTENT_MISSING, f"unknown step kind {draft.kind!r}")
    if span.dropped_attributes:
        draft.problem(
            ATTRIBUTES_DROPPED,
            f"the recording SDK dropped {span.dropped_attributes} attribute(s) of this span (its attribute "
            "count limit, OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, default 128): messages may be missing",
        )
    request = draft.request if draft.request is not None else {}
    # Taken over the rebuilt request like any recorded step's; equal to the recorder's own
    # fingerprint exactly when the request came through whole (rewind tool steps, input.value).
    draft.extra.pop("fingerprint", None)
    fingerprint = text_fingerprint(canonical_json(request))
    extra: dict[str, Any] = {
        IMPORTED: {
            "layout": draft.layout,
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "span": span.name,
            "problems": [p.to_dict() for p in draft.problems],
        }
    }
    extra.update(draft.extra)
    if draft.chat is not None:
        chat = draft.chat
        # Tools are compared at replay only when the telemetry carried their definitions.
        extra[IMPORTED]["tools_known"] = chat.tools is not None or (
            isinstance(chat.raw_request, dict) and "tools" in chat.raw_request
        )
        if chat.streamed is not None:
            extra[IMPORTED]["streamed"] = chat.streamed
    return Event(
        seq,
        draft.kind,
        draft.name or span.name,
        fingerprint,
        request,
        None if draft.error is not None else draft.response,
        draft.error,
        duration_ms=span.duration_ms,
        ts=round(span.start_ns / 1e9, 3),
        live=True,
        extra=extra,
    )


def _assess_chat(draft: Draft) -> None:
    chat = draft.chat
    assert chat is not None
    if chat.input is None and chat.raw_request is None:
        draft.problem(
            CONTENT_MISSING,
            "the input messages were not captured (content capture was off: "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)",
        )
    failed = draft.span.status_code == "ERROR"
    if chat.output is None and chat.raw_response is None and not failed:
        draft.problem(CONTENT_MISSING, "the model's answer was not captured (content capture was off)")
    calls = any(p.get("type") == "tool_call" for m in chat.output or [] for p in m.get("parts") or [])
    raw_tools = isinstance(chat.raw_request, dict) and "tools" in chat.raw_request
    if calls and chat.tools is None and not raw_tools:
        draft.problem(
            TOOLS_MISSING,
            "the model called tools but the telemetry has no tool definitions: the tools the agent sends "
            "are not compared at replay",
            blocking=False,
        )


def _mark_truncation(drafts: list[Draft], attribute_limit: int | None) -> None:
    """Attributes cut at the length limit: a JSON value cut short names the limit, and every
    other string attribute exactly that long in the same run was cut by it too."""
    limits: set[int] = set() if attribute_limit is None else {attribute_limit}
    for draft in drafts:
        for problem in draft.problems:
            if problem.code == CONTENT_TRUNCATED:
                length = _cut_length(problem.detail)
                if length:
                    limits.add(length)
    if not limits:
        return
    for draft in drafts:
        if draft.event is not None and draft.replayable:
            continue
        cut = sorted(
            key
            for key, value in draft.span.attributes.items()
            if isinstance(value, str) and len(value) in limits and not key.startswith(("rewind.event",))
        )
        named = " ".join(p.detail for p in draft.problems if p.code == CONTENT_TRUNCATED)
        cut = [key for key in cut if key not in named]
        if cut:
            draft.problem(
                CONTENT_TRUNCATED,
                f"{', '.join(cut[:6])} {'is' if len(cut) == 1 else 'are'} exactly {sorted(limits)[0]} characters, "
                "the attribute length limit this telemetry was cut at",
            )


def _cut_length(detail: str) -> int | None:
    marker = " is cut off after "
    if marker in detail:
        tail = detail.split(marker, 1)[1].split(" ", 1)[0]
        return int(tail) if tail.isdigit() else None
    return None


def _unknown(unmapped: list[Unmapped], steps: dict[str, str], by_id: dict[str, SpanRecord]) -> list[dict[str, Any]]:
    """Spans no layout understood, grouped by the attribute names they carry.

    Spans inside a step (the HTTP request a model call made) are that step's detail, not
    an unknown layout, and are left out.
    """
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    inside = _inside_steps(steps, by_id)
    for item in unmapped:
        if inside.get(item.span.span_id, False):
            continue
        if steps and not any(name.startswith(_GENAI_PREFIXES) for name in item.attribute_names):
            continue  # the application's own spans around the steps (a request, a job)
        key = tuple(item.attribute_names)
        group = groups.setdefault(
            key, {"spans": 0, "names": [], "reason": item.reason, "attribute_names": list(item.attribute_names)}
        )
        group["spans"] += 1
        if item.span.name not in group["names"] and len(group["names"]) < 5:
            group["names"].append(item.span.name)
    return list(groups.values())


#: Attribute prefixes of GenAI telemetry: a span with them that no mapper took is worth naming.
_GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.", "rewind.", "traceloop.", "ai.", "embedding.", "retrieval.")


def _inside_steps(steps: dict[str, str], by_id: dict[str, SpanRecord]) -> dict[str, bool]:
    """Per span id, whether some ancestor is a step (each chain walked once, cycles cut)."""
    inside: dict[str, bool] = {}
    for start in by_id:
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = start
        while node is not None and node in by_id and node not in inside and node not in on_path:
            path.append(node)
            on_path.add(node)
            node = by_id[node].parent_id
        answer = node is not None and node in inside and (inside[node] or node in steps)
        for known in reversed(path):
            inside[known] = answer
            answer = answer or known in steps
    return inside


def display_source(source: str) -> str:
    return source if "://" in source else os.path.basename(source)
