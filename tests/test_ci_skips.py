""".ci/skips.py: CI counts every suite's skips and fails on one the allow-list does not expect."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SKIPPING = """
import pytest

def test_runs():
    pass

def test_needs_a_tool():
    pytest.skip("tmux is not installed")

def test_needs_a_newer_sdk():
    pytest.skip("this openai SDK has no responses.parse")
"""


def _report(tmp_path: Path) -> Path:
    (tmp_path / "test_probe.py").write_text(SKIPPING)
    reports = tmp_path / "reports"
    junit = f"--junitxml={reports / 'compat-openai.xml'}"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:rewind", junit, "test_probe.py"],
        cwd=tmp_path, capture_output=True, timeout=120, check=True,
    )
    return reports


def _skips(reports: Path, allow: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(REPO / ".ci" / "skips.py"), str(reports), *([str(allow)] if allow else [])]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_a_skip_for_a_missing_tool_fails_and_is_named(tmp_path: Path) -> None:
    result = _skips(_report(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^compat-openai +3 +2 +1$", result.stdout, re.M), result.stdout  # tests, skipped, unexpected
    assert "UNEXPECTED x1: tmux is not installed" in result.stdout
    assert "this openai SDK" not in result.stdout  # allowed by .ci/expected-skips


def test_an_allowed_skip_passes(tmp_path: Path) -> None:
    allow = tmp_path / "allow"
    allow.write_text("# comment\ncompat-*   tmux is not\n*   ^this openai SDK has no\n")
    result = _skips(_report(tmp_path), allow)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_report_is_an_error(tmp_path: Path) -> None:
    result = _skips(tmp_path)
    assert result.returncode == 2 and "no junit report" in result.stderr
