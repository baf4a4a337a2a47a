"""``rewind diff`` scores one change the same wherever it sits in a long request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rewind
from rewind.inspection.diff import diff_traces, percent, render_text

SYSTEM = "You are a careful travel agent who checks every flight with the search tool. " * 60


def _run(path: Path, city: str) -> None:
    @rewind.llm(name="chat")
    def chat(**request: Any) -> dict[str, str]:
        return {"content": f"turn {len(request['messages'])}"}

    messages: list[dict[str, str]] = [
        {"role": "system", "content": SYSTEM},  # long, and re-sent at every step
        {"role": "user", "content": f"find me a flight to {city} next week"},
    ]
    with rewind.record(path):
        for turn in range(3):
            reply = chat(model="m", messages=messages)
            messages = [*messages, {"role": "assistant", "content": reply["content"]}]
            messages.append({"role": "tool", "content": f"{turn}: " + "RW100 08:00 " * 40})


def test_one_word_change_scores_alike_at_every_step(tmp_path: Path) -> None:
    a, b = tmp_path / "a.rewind", tmp_path / "b.rewind"
    _run(a, "Lisbon")
    _run(b, "Porto")
    diff = diff_traces(a, b)
    scores = [entry.similarity for entry in diff.entries]
    assert len(scores) == 3
    # Before: the change sat past a 3000-character cut-off, so every step read 100% similar.
    assert all(0.9 < score < 1 for score in scores), scores
    assert max(scores) - min(scores) < 0.05, scores
    assert "100% similar" not in render_text(diff)


def test_percent_never_rounds_a_change_up_to_identical() -> None:
    assert percent(0.996) == "99%"
    assert percent(1.0) == "100%"
    assert percent(0.484) == "48%"
