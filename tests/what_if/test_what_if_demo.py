"""``examples/what_if_demo.py`` runs as documented: edit, mutate and the offline guard on the real agent."""

from __future__ import annotations

from typing import Any


def test_the_what_if_demo_runs(run_python: Any) -> None:
    result = run_python("import runpy; runpy.run_path('examples/what_if_demo.py', run_name='__main__')", timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "answer: Pack an umbrella for Paris" in out
    assert "answer: No umbrella: Tokyo will be dry and warm." in out
    assert "whose step 0 (llm openai.chat.completions.create) was served an edited response" in out
    assert "crashed: openai.RateLimitError: Error code: 429" in out
    assert "tool_error           crashed: RuntimeError" in out
    assert "summary: 1 different, 4 crashed" in out
    assert "blocked: 203.0.113.7:80, attempted by uv_index (" in out
