"""`make demo` runs offline. (Every README and docs sample runs in tests/test_docs.py.)"""

from __future__ import annotations


def test_demo_runs_offline_and_shows_a_divergence(run_python) -> None:
    result = run_python("import runpy; runpy.run_path('examples/time_travel_demo.py', run_name='__main__')")
    assert result.returncode == 0, result.stderr
    assert "same answer: True; backend calls during replay: 0" in result.stdout
    assert "replay diverged at step 1" in result.stdout
