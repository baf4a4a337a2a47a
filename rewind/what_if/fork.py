"""``rewind.fork(path, at=N)``: serve the recording up to step N, then go on live; with
``edit=``, step N is served changed first (edit and continue)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rewind.engine.session import Normalizer, Redactor, Session, session_policy
from rewind.matching import Matcher, resolve_matcher
from rewind.storage.trace import PathLike, Trace

from .edits import EditError, describe, edited_event
from .matcher import THEN, Change, WhatIfMatcher

if TYPE_CHECKING:
    from rewind.engine.policy import ReplayPolicy

_NO_EDIT: Any = object()


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


def fork(
    path: PathLike,
    *,
    at: int,
    match: str | Matcher = "strict",
    save_as: PathLike | None = None,
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
    edit: Any = _NO_EDIT,
    then: str | None = None,
    never_live: Sequence[str] | str | None = None,
    policy: ReplayPolicy | None = None,
) -> Session:
    """Serve steps ``[0, at)`` from ``path``, then run live; ``save_as`` writes the new run.

    With ``edit=`` (edit and continue): step ``at`` is served too, with its outcome changed
    (new response JSON, ``{"error": {...}}``, or a function of the recorded ``Event``);
    then ``then="live"`` (default) runs the rest live, ``then="replay"`` keeps serving
    recorded steps while the requests still match them. See docs/what-if.md.

    ``never_live`` names calls that must not run for real once the fork is live: such a
    call is answered by the recorded step with its identity, or stops the run with
    ``NeverLiveError`` (docs/hybrid.md).
    """
    if not isinstance(at, int) or isinstance(at, bool) or at < 0:
        raise ValueError(f"fork(at=...) must be a step number >= 0, not {at!r}")
    resolve_matcher(match)
    policy = session_policy(policy, None, never_live, "error", None)
    if policy is not None and policy.hybrid:
        raise ValueError("fork() runs everything after its fork point live; live= and on_missing= apply to replay()")
    if edit is not _NO_EDIT:
        options: dict[str, Any] = {
            "match": match,
            "save_as": save_as,
            "redact": redact,
            "normalize": normalize,
            "policy": policy,
        }
        return edit_fork(path, at=at, edit=edit, then=then or "live", **options)
    if then is not None:
        raise ValueError("fork(then=...) applies to an edit: pass edit= too (a plain fork always runs live)")
    return Session(
        "fork",
        path=path,
        match=match,
        fork_at=at,
        save_as=save_as,
        redact=redact,
        normalize=normalize,
        policy=policy,
    )
