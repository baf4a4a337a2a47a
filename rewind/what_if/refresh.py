"""Refreshing a golden trace: keep what still matches, record anew only from the first divergence.

A refresh is a fork whose fork point is found, not given: ``WhatIfMatcher`` with no
change and ``then="replay"`` serves recorded steps while the requests match them and
goes live, for good, at the first that does not. The refreshed run is written to a
scratch file beside its destination and takes the golden's place (``scratch.promote``,
an atomic rename) only once the run succeeded; a failed run leaves the golden as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewind.inspection.accounting import Accounting, account, format_cost
from rewind.inspection.summary import plural
from rewind.matching import Matcher, resolve_matcher
from rewind.storage import scratch
from rewind.storage.trace import PathLike, Trace

from .matcher import WhatIfMatcher

if TYPE_CHECKING:
    from rewind.engine.session import Normalizer, Redactor, Session


def refresh_session(
    path: PathLike,
    *,
    save_as: PathLike,
    match: str | Matcher = "strict",
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
) -> Session:
    """A fork of ``path`` that replays until the first divergence, then runs live into ``save_as``."""
    from rewind.engine.session import Session

    inner = resolve_matcher(match)
    if not getattr(inner, "positional", False):
        raise ValueError(f"a refresh needs match='strict' or 'ordered' (positional), not {match!r}")
    # fork_at=0: the matcher, not a fixed step, decides where the run goes live, and
    # live steps number on from the last step it served (no gap in the new golden).
    return Session(
        "fork",
        path=path,
        match=WhatIfMatcher(inner, {}, then="replay"),
        fork_at=0,
        save_as=save_as,
        redact=redact,
        normalize=normalize,
        provenance={"match": match if isinstance(match, str) else type(match).__name__, "refresh": True},
    )


@dataclass(frozen=True)
class RefreshReport:
    """What a refresh kept from the golden, what it recorded anew, and what that saved."""

    golden: str
    #: Steps in the golden before the refresh.
    recorded: int
    #: Steps ``0 .. kept-1`` of the golden were served and kept.
    kept: int
    #: Seqs of the steps recorded live in the refreshed run.
    anew: tuple[int, ...]
    #: Where the run first diverged (``{"step", "reason"}``), if a request stopped matching.
    divergence: Mapping[str, Any] | None
    #: What the kept llm steps cost when they were recorded: not paid again.
    saved: Accounting
    #: Kept tool and memory steps: side effects not run again.
    kept_tools: int
    #: What the steps recorded anew cost.
    spent: Accounting

    @property
    def changed(self) -> bool:
        """False when the run replayed the whole golden and nothing more (nothing to write)."""
        return bool(self.anew) or self.kept < self.recorded

    def lines(self, saved_to: str | None) -> list[str]:
        """The refresh, told in two or three lines for a terminal or a test session summary."""
        if not self.changed:
            return [f"rewind: {self.golden} is up to date: the run replayed all {plural(self.recorded, 'step')}"]
        kept = f"kept {_span(0, self.kept)} from the recording" if self.kept else "kept no step"
        anew = f"recorded {_seqs(self.anew)} anew" if self.anew else "recorded nothing anew"
        head = f"rewind: refreshed {self.golden}: {kept}, {anew}"
        if self.divergence is not None:
            head += f" (step {self.divergence.get('step')} diverged: {self.divergence.get('reason')})"
        elif not self.anew:
            head += f" (the run ended after step {self.kept - 1}; the golden had {self.recorded})"
        else:
            head += f" (the run went on past the golden's {plural(self.recorded, 'step')})"
        lines = [head]
        full = self.saved.total_tokens + self.spent.total_tokens
        saved = (
            f"rewind: saved against a full re-record: {plural(self.saved.calls, 'llm call')} "
            f"({_tokens(self.saved)}) and {plural(self.kept_tools, 'tool step')} not run again"
        )
        if full:
            saved += f"; {self.saved.total_tokens * 100 // full}% of the {full} tokens a full re-record would use"
        lines.append(saved)
        if saved_to is not None:
            lines.append(f"rewind: the refreshed run is in {saved_to}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "golden": self.golden,
            "recorded": self.recorded,
            "kept": self.kept,
            "anew": list(self.anew),
            "divergence": dict(self.divergence) if self.divergence is not None else None,
            "saved": {
                "llm_calls": self.saved.calls,
                "tokens": self.saved.total_tokens,
                "cost": self.saved.total_cost,
                "tool_steps": self.kept_tools,
            },
            "spent": {"llm_calls": self.spent.calls, "tokens": self.spent.total_tokens, "cost": self.spent.total_cost},
        }


def summarize(
    golden: Trace, refreshed: Trace, *, shown: str | None = None, divergence: Mapping[str, Any] | None = None
) -> RefreshReport:
    """Compare the golden with its refreshed run (whose served steps are marked not live)."""
    kept_events = [event for event in refreshed.events if not event.live]
    live = [event for event in refreshed.events if event.live]
    return RefreshReport(
        golden=shown if shown is not None else str(golden.path),
        recorded=len(golden.events),
        kept=len(kept_events),
        anew=tuple(event.seq for event in live),
        divergence=divergence,
        saved=account(Trace(events=kept_events, header=refreshed.header), count_replayed=True),
        kept_tools=sum(1 for event in kept_events if event.kind != "llm"),
        spent=account(refreshed),
    )


def divergence_of(session: Session) -> dict[str, Any] | None:
    """Where a finished refresh went live because a request stopped matching: ``{"step", "reason"}``."""
    matcher = session.matcher
    error = matcher.divergence if isinstance(matcher, WhatIfMatcher) else None
    return {"step": error.step, "reason": error.reason} if error is not None else None


def refresh(
    path: PathLike,
    agent: Callable[[], Any],
    *,
    save_as: PathLike | None = None,
    match: str | Matcher = "strict",
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
) -> RefreshReport:
    """Run ``agent()`` against the golden at ``path``, refreshing it from its first divergence.

    The golden (or ``save_as``) is replaced only when ``agent()`` returns and the run
    changed something; when it raises, the exception propagates and nothing is written.
    """
    golden = Path(os.fspath(path))
    target = Path(os.fspath(save_as)) if save_as is not None else golden
    work = scratch.scratch_path(target)
    try:
        session = refresh_session(golden, save_as=work, match=match, redact=redact, normalize=normalize)
        with session:
            agent()
        where = divergence_of(session)
        report = summarize(Trace.load(golden), Trace.load(work), shown=os.fspath(path), divergence=where)
        if report.changed or save_as is not None:
            scratch.promote(work, target)
        return report
    finally:
        scratch.discard(work)


def _span(first: int, count: int) -> str:
    return f"step {first}" if count == 1 else f"steps {first}-{first + count - 1}"


def _seqs(seqs: tuple[int, ...]) -> str:
    if list(seqs) == list(range(seqs[0], seqs[0] + len(seqs))):
        return _span(seqs[0], len(seqs))
    return "steps " + ", ".join(map(str, seqs))


def _tokens(usage: Accounting) -> str:
    text = f"{usage.total_tokens} tokens"
    cost = usage.total_cost
    return f"{text}, ~{format_cost(cost)}" if cost is not None else text


def html_diff_path(golden: Path) -> Path:
    """Where the diff of a refreshed golden against its old self is written: beside it."""
    return golden.with_name(f"{golden.name}.refresh.html")


__all__ = ["RefreshReport", "divergence_of", "html_diff_path", "refresh", "refresh_session", "summarize"]
