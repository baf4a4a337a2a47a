"""The one-line story of a what-if fork, from its header (for ``show`` and ``diff``)."""

from __future__ import annotations

from typing import Any

from rewind.inspection.preview import compact


def hybrid_provenance(trace: Any) -> str | None:
    """``"is a hybrid replay of A: llm ran live, the rest was served (↺) …"``, or ``None``."""
    header = getattr(trace, "header", None)
    hybrid = header.get("hybrid_of") if isinstance(header, dict) else None
    if not isinstance(hybrid, dict):
        return None
    live = hybrid.get("live")
    shown = ", ".join(compact(s, 60) for s in live) if isinstance(live, list) and live else "nothing"
    parts = [
        f"is a hybrid replay of {compact(hybrid.get('path'), 200)}: {shown} ran live (marked live), "
        "the rest was served from it by identity (↺)"
    ]
    never = hybrid.get("never_live")
    if isinstance(never, list) and never:
        parts.append("never live: " + ", ".join(compact(s, 60) for s in never))
    if hybrid.get("on_missing") == "live":
        parts.append("a served call with no recorded answer ran live")
    models = hybrid.get("model_map")
    if isinstance(models, dict) and models:
        parts.append("models: " + ", ".join(f"{compact(a, 60)} → {compact(b, 60)}" for a, b in models.items()))
    return "; ".join(parts)


def edit_provenance(trace: Any) -> str | None:
    """``"is a fork of A whose step 3 was edited (…), then live"`` (or the story of a
    refresh), or ``None``."""
    header = getattr(trace, "header", None)
    forked = header.get("forked_from") if isinstance(header, dict) else None
    edit = forked.get("edit") if isinstance(forked, dict) else None
    if isinstance(forked, dict) and forked.get("refresh") is True:
        return (
            f"is a refresh of {compact(forked.get('path'), 200)}: its steps were replayed while the requests "
            "matched, the rest recorded live"
        )
    if not isinstance(forked, dict) or not isinstance(edit, dict):
        return None
    then = (
        "the rest ran live" if edit.get("then") == "live" else "the rest replayed while requests matched, then ran live"
    )
    return (
        f"is a fork of {compact(forked.get('path'), 200)} whose step {compact(edit.get('step'), 20)} "
        f"({compact(edit.get('kind'), 20)} {compact(edit.get('name'), 80)}) was served an edited "
        f"{compact(edit.get('outcome'), 20)} from {compact(edit.get('from'), 120)}; {then}"
    )
