"""`make bench-smoke` (benchmarks/run.py --smoke): every benchmark script, tiny sizes, no verdicts.

Its CI step proves each script still runs; these tests prove the runner can tell a script
that missed a timing target (fine in a smoke run) from one that crashed (a failure), and that
no script escapes it.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", BENCHMARKS / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_script_has_smoke_sizes(runner: ModuleType) -> None:
    assert sorted(runner.SMOKE) == sorted(path.stem for path in BENCHMARKS.glob("bench_*.py"))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("import sys; sys.exit(1)  # a missed target", 0),
        ("raise RuntimeError('a benchmark that rotted')", 3),
        ("import sys; sys.exit(2)", 2),
        ("pass", 0),
    ],
)
def test_a_smoke_run_fails_on_a_crash_not_on_a_missed_target(
    runner: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, status: int
) -> None:
    script = tmp_path / "bench_probe.py"
    script.write_text(body + "\n")
    monkeypatch.setitem(runner.SMOKE, "bench_probe", ["--calls", "1"])
    result = subprocess.run(runner.command(script, True), capture_output=True, text=True, timeout=60)
    assert result.returncode == status, result.stderr
    assert ("a benchmark that rotted" in result.stderr) == (status == 3)


def test_a_script_without_smoke_sizes_is_named(runner: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(runner.SMOKE, "bench_blobs")
    assert runner.main(["--smoke", "-k", "bench_blobs"]) == 2
