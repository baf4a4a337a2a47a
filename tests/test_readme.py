"""The README's quickstart must run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quickstart_runs_as_written(run_python, tmp_path: Path) -> None:
    text = README.read_text()
    section = text[text.index("## Quickstart") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    assert len(code.group(1).strip().splitlines()) <= 25
    result = run_python(code.group(1), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Event(seq=1, kind='tool', name='search_flights', ok)" in result.stdout


def test_demo_runs_offline_and_shows_a_divergence(run_python) -> None:
    result = run_python("import runpy; runpy.run_path('examples/time_travel_demo.py', run_name='__main__')")
    assert result.returncode == 0, result.stderr
    assert "same answer: True; backend calls during replay: 0" in result.stdout
    assert "replay diverged at step 1" in result.stdout
