"""`make demo` runs offline. (Every README and docs sample runs in tests/test_docs.py.)"""

from __future__ import annotations


def test_demo_runs_offline_and_shows_a_divergence(run_python) -> None:
    result = run_python("import runpy; runpy.run_path('examples/time_travel_demo.py', run_name='__main__')")
    assert result.returncode == 0, result.stderr
    assert "same answer: True; backend calls during replay: 0" in result.stdout
    assert "replay diverged at step 1" in result.stdout
    # It says how to run the `rewind` it mentions when that is not on PATH (after `make demo`).
    assert "Inspect one with: " in result.stdout
    path = ""  # an environment where only .venv/bin/python is known
    hidden = run_python(
        "import runpy; runpy.run_path('examples/time_travel_demo.py', run_name='__main__')", env={"PATH": path}
    )
    assert hidden.returncode == 0, hidden.stderr
    assert "(`rewind` is not on your PATH: run it as " in hidden.stdout


def test_the_demo_answer_is_not_cut_mid_word(run_python) -> None:
    code = (
        "import runpy; demo = runpy.run_path('examples/time_travel_demo.py')\n"
        "print(demo['_clip_words']('preferences: window seat, no red-eyes', 20))\n"
        "print(demo['_clip_words']('short', 20))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["preferences: window…", "short"]
