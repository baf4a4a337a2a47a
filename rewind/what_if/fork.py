"""``fork(path, at=N, edit=...)``: serve the recording up to step N, step N changed, then go on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rewind.matching import Matcher, resolve_matcher
from rewind.storage.trace import PathLike, Trace

from .edits import EditError, describe, edited_event
from .matcher import THEN, Change, WhatIfMatcher

if TYPE_CHECKING:
    from rewind.engine.policy import ReplayPolicy
    from rewind.engine.session import Normalizer, Redactor, Session


def edit_fork(
    path: PathLike,
    *,
    at: int,
    edit: Any,
    then: str = "live",
    match: str | Matcher = "strict",
    save_as: PathLike | None = None,
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
    source: str | None = None,
    policy: ReplayPolicy | None = None,
) -> Session:
    """The fork session; ``source`` names where the edit came from (a file) for the provenance."""
    from rewind.engine.session import Session

    if then not in THEN:
        raise ValueError(f"fork(then=...) must be one of {', '.join(repr(t) for t in THEN)}, not {then!r}")
    inner = resolve_matcher(match)
    if not getattr(inner, "positional", False):
        raise ValueError(f"fork(edit=...) needs match='strict' or 'ordered' (positional), not {match!r}")
    trace = Trace.open(path)
    count = len(trace.events)
    if at >= count:
        steps = f"steps 0-{trace.events[-1].seq}" if count else "no steps"
        raise EditError(
            f"fork(at={at}, edit=...): {trace.path} has {count} steps ({steps}); there is no step {at} to edit"
        )
    recorded = trace.events[at]
    event = edited_event(recorded, edit)
    outcome = "error" if not event.ok else "response"
    label = f"edit step {recorded.seq} ({outcome})"
    matcher = WhatIfMatcher(inner, {at: Change(at, event, replaces=True, label=label)}, then=then)
    provenance = {
        "match": match if isinstance(match, str) else type(match).__name__,
        "edit": {
            "step": recorded.seq,
            "kind": recorded.kind,
            "name": recorded.name,
            "outcome": outcome,
            "from": source or describe(edit),
            "then": then,
        },
    }
    return Session(
        "fork",
        path=path,
        match=matcher,
        fork_at=at + 1,
        save_as=save_as,
        redact=redact,
        normalize=normalize,
        provenance=provenance,
        policy=policy,
    )
