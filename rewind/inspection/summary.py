"""The one-line summaries a session prints at its end, the same from every entry point.

``rewind record``/``rewind replay`` print them from the status their child wrote;
``REWIND_RECORD``/``REWIND_REPLAY`` (zero-code) print them at interpreter exit. Each
takes the status dictionary ``rewind.bootstrap`` writes: ``mode``, ``served``,
``recorded``, ``failed`` (the steps that raised) and ``error``; a recording of no step
adds ``incomplete`` or ``nothing`` (why: ``rewind.nothing_recorded``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: How many failed steps a summary names before it says "and N more".
NAMED = 3


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 step``, ``2 steps``; ``nouns`` for irregular plurals."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def failed_steps(failed: Sequence[Mapping[str, Any]]) -> str:
    """``1 failed: step 2 (tool search: TimeoutError)``, or ``""`` when none failed."""
    if not failed:
        return ""
    named = []
    for step in failed[:NAMED]:
        named.append(f"{step.get('step')} ({step.get('kind')} {step.get('name')}: {step.get('error') or 'error'})")
    more = f" and {len(failed) - NAMED} more" if len(failed) > NAMED else ""
    label = "step" if len(failed) == 1 else "steps"
    return f"{len(failed)} failed: {label} {', '.join(named)}{more}"


def recorded(status: Mapping[str, Any], shown: str) -> str:
    """``rewind: recorded 3 steps to run.rewind`` (plus which steps failed, or why none was recorded)."""
    text = f"rewind: recorded {plural(int(status.get('recorded') or 0), 'step')} to {shown}"
    failures = failed_steps(status.get("failed") or [])
    if failures:
        return f"{text}; {failures}"
    incomplete, nothing = status.get("incomplete"), status.get("nothing")
    if isinstance(incomplete, str) and incomplete:
        return f"{text}: {incomplete}, so it is marked incomplete (rewind check says so; a replay refuses it)"
    if isinstance(nothing, str) and nothing:
        return f"{text}: nothing was recorded because {nothing}"
    return text


def replayed(status: Mapping[str, Any], shown: str, total: int | None = None, *, zero_code: bool = False) -> str:
    """``rewind: replayed 3 of 3 recorded steps from run.rewind offline`` (and what ran live)."""
    served = int(status.get("served") or 0)
    of = f" of {total}" if total is not None else ""
    noun = "recorded step" if (total if total is not None else served) == 1 else "recorded steps"
    text = f"rewind: replayed {served}{of} {noun} from {shown}"
    if zero_code:
        # Only instrumented SDKs and decorated functions are answered from the trace.
        return text + "; code rewind does not intercept (undecorated tools, other clients) ran live"
    return text + " offline"


def forked(status: Mapping[str, Any], shown: str, at: int, save_as: str | None = None) -> str:
    """``rewind: forked run.rewind at step 2: 2 steps replayed, 1 live, saved to f.rewind``."""
    text = (
        f"rewind: forked {shown} at step {at}: {plural(int(status.get('served') or 0), 'step')} replayed, "
        f"{int(status.get('recorded') or 0)} live"
    )
    failures = failed_steps(status.get("failed") or [])
    if failures:
        text += f" ({failures})"
    return text + (f", saved to {save_as}" if save_as is not None else "")


def refreshed(status: Mapping[str, Any], shown: str, save_as: str | None) -> str:
    """``rewind: refreshed run.rewind from step 3: 3 steps replayed, 2 live, saved to new.rewind``."""
    text = (
        f"rewind: refreshed {shown} from step {status.get('live_from')}: "
        f"{plural(int(status.get('served') or 0), 'step')} replayed, {int(status.get('recorded') or 0)} live"
    )
    return text + (f", saved to {save_as}" if save_as is not None else "")


__all__ = ["failed_steps", "forked", "plural", "recorded", "refreshed", "replayed"]
