"""Messages in the user's own words: the entry point's spelling of each hint, plurals, costs, no repeats."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rewind
from rewind.cli.stats import _money
from rewind.data.dialect import translate
from rewind.inspection.summary import failed_steps, plural, recorded, replayed

AGENT = """
import os, rewind

@rewind.llm
def model(**request):
    return {"answer": "echo " + request["q"]}

print(model(q=os.environ.get("Q", "hello"))["answer"])
"""


def test_hints_per_entry_point() -> None:
    text = "replay with match='fuzzy' or match='ordered'; require_full_consumption=True makes this a failure"
    assert translate(text, "python") == text
    assert translate(text, "cli") == (
        "replay with --match fuzzy or --match ordered; --require-full-consumption makes this a failure"
    )
    assert translate(text, "env") == (
        "replay with REWIND_MATCH=fuzzy or REWIND_MATCH=ordered; REWIND_REQUIRE_FULL_CONSUMPTION=1 makes this a failure"
    )
    assert translate("use rewind.fork(path, at=3) to extend it", "cli") == "use rewind replay --fork-at 3 to extend it"
    assert "REWIND_NORMALIZE=module:function" in translate("Pass normalize=fn to record() and replay() to", "env")


def test_python_divergence_speaks_python(trace_path: Path) -> None:
    model = rewind.llm(lambda **r: {"a": r["q"]}, name="model")
    with rewind.record(trace_path):
        model(q="hello")
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path):
        model(q="changed")
    assert "match='fuzzy'" in str(info.value)


@pytest.mark.parametrize(
    ("cli", "hint", "absent"),
    [(True, "--match fuzzy", "match='fuzzy'"), (False, "REWIND_MATCH=fuzzy", "match='fuzzy'")],
)
def test_zero_code_divergences_speak_the_entry_points_words(
    tmp_path: Path, cli: bool, hint: str, absent: str
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    path = tmp_path / "run.rewind"
    with rewind.record(path):
        rewind.llm(lambda **r: {"answer": "echo " + r["q"]}, name="model")(q="hello")
    rewind_script = Path(sys.executable).with_name("rewind")
    if cli:
        command = [str(rewind_script), "replay", str(path), "--", sys.executable, str(agent)]
        env_extra: dict[str, str] = {"Q": "changed"}
    else:
        command = [sys.executable, str(agent)]
        env_extra = {"Q": "changed", "REWIND_REPLAY": str(path)}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(env_extra)
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert hint in result.stderr
    assert absent not in result.stderr.replace(hint, "")
    # The program died of the divergence: its traceback shows the report, nothing repeats it.
    assert result.stderr.count("request diff (recorded -> incoming)") == 1
    if cli:
        assert result.stderr.splitlines()[-1] == "rewind: replay diverged at step 0 (prompt/content drift); see above"


def test_plurals_and_failed_steps() -> None:
    assert plural(1, "step") == "1 step" and plural(2, "step") == "2 steps" and plural(0, "step") == "0 steps"
    assert recorded({"recorded": 1}, "r.rewind") == "rewind: recorded 1 step to r.rewind"
    assert replayed({"served": 1}, "r.rewind", 1) == "rewind: replayed 1 of 1 recorded step from r.rewind offline"
    failed = [{"step": i, "kind": "tool", "name": "t", "error": "E"} for i in range(5)]
    assert failed_steps(failed) == "5 failed: steps 0 (tool t: E), 1 (tool t: E), 2 (tool t: E) and 2 more"
    llm = rewind.ScriptedLLM(["only"])
    llm(q=1)
    with pytest.raises(rewind.ScriptExhausted, match="after 1 item;"):
        llm(q=2)


def test_tiny_costs_are_not_zero() -> None:
    assert _money(0.0000123) == "$0.000012"
    assert _money(0.00004) == "$0.000040"
    assert _money(0.0) == "$0.0000"
    assert _money(0.25) == "$0.2500"
    assert _money(1234.5) == "$1,234.50"
