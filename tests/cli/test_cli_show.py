from __future__ import annotations

import re
from pathlib import Path

import pytest
from rewind_runs import record_long, record_trip, trip_agent

import rewind

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def trip(tmp_path: Path) -> Path:
    return record_trip(tmp_path / "trip.rewind", extra_search=True, failing_search=True, meta={"ticket": "T-42"})


def test_show_lists_one_line_per_step(run_cli, trip: Path) -> None:
    result = run_cli("show", trip)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{trip}: 6 steps, recorded ")
    assert "format v1" in lines[0]
    assert "meta: ticket=T-42" in lines[1]
    steps = [line for line in lines if line.startswith("#")]
    assert [line.split()[0] for line in steps] == ["#0", "#1", "#2", "#3", "#4", "#5"]
    assert steps[0].split()[1:3] == ["memory", "recall"]
    assert "[gpt-4o-2024-08-06] → search(query=Paris)" in steps[1]
    assert 'ERR' in steps[4] and "SearchDown: search backend unavailable" in steps[4]
    assert "Book the Hotel Paris." in steps[5]
    assert not ANSI.search(result.stdout), "a pipe gets no colour"
    assert result.stderr == ""


def test_verbose_adds_request_and_response_previews(run_cli, trip: Path) -> None:
    result = run_cli("show", trip, "-v")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert '    request:  {"query":"Paris museums"}' in out
    assert 'response: {"query":"Paris museums","hits":' in out
    assert 'error:    {"type":"rewind_runs.SearchDown"' in out
    assert out.count("request:") == 6


def test_show_marks_fork_prefix_steps_and_provenance(run_cli, trip: Path, tmp_path: Path) -> None:
    forked = tmp_path / "forked.rewind"
    with rewind.fork(trip, at=2, save_as=forked):
        trip_agent(extra_search=True, failing_search=True)()
    result = run_cli("show", forked)
    assert result.returncode == 0, result.stderr
    assert f"forked from {trip} at step 2" in result.stdout
    assert "↺ = served from the source trace" in result.stdout
    steps = [line for line in result.stdout.splitlines() if line.startswith("#")]
    assert len(steps) == 6
    assert all("↺" in line for line in steps[:2])
    assert not any("↺" in line for line in steps[2:])


def test_torn_final_line_is_noted_not_fatal(run_cli, trip: Path) -> None:
    with open(trip, "ab") as fh:
        fh.write(b'{"seq":6,"kind":"tool","name":"sea')  # the write a killed recorder left behind
    result = run_cli("show", trip)
    assert result.returncode == 0, result.stderr
    assert "note: the last line is torn" in result.stdout
    assert "#5" in result.stdout and "#6" not in result.stdout


def test_empty_trace(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "empty.rewind"
    with rewind.record(path):
        pass
    result = run_cli("show", path)
    assert result.returncode == 0
    assert "0 steps" in result.stdout and "(no steps recorded)" in result.stdout
    result = run_cli("show", path, "-i")
    assert result.returncode == 0
    assert "the trace has no steps" in result.stdout


def test_gzip_archives_show_transparently(run_cli, trip: Path) -> None:
    assert run_cli("compact", trip).returncode == 0
    plain = run_cli("show", trip).stdout.splitlines()[1:]
    archived = run_cli("show", f"{trip}.gz").stdout.splitlines()[1:]
    assert plain == archived


def test_long_output_in_a_pipe_is_not_paged(run_cli, tmp_path: Path) -> None:
    path = record_long(tmp_path / "long.rewind", 300)
    # A pager that would fail loudly proves it is never started when stdout is a pipe.
    result = run_cli("show", path, env={"PAGER": "false"})
    assert result.returncode == 0, result.stderr
    assert "#299" in result.stdout


def test_closed_pipe_is_quiet(rewind_script: Path, tmp_path: Path) -> None:
    import subprocess

    path = record_long(tmp_path / "long.rewind", 2000)
    result = subprocess.run(
        f"'{rewind_script}' show -v '{path}' | head -n 3", shell=True, capture_output=True, text=True, timeout=60
    )
    assert len(result.stdout.splitlines()) == 3
    assert "Traceback" not in result.stderr and "Error" not in result.stderr
