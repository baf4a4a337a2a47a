from __future__ import annotations

from pathlib import Path

from rewind_runs import record_trip


def test_identical_runs_exit_zero(run_cli, tmp_path: Path) -> None:
    # Two live runs: every response and tool-call id and timestamp differs, the behaviour does not.
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind")
    result = run_cli("diff", a, b)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no divergence: identical (4 steps)" in result.stdout
    assert result.stdout.splitlines()[0] == f"--- A: {a} (4 steps)"


def test_exact_sees_the_per_run_ids(run_cli, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind")
    result = run_cli("diff", "--exact", a, b)
    assert result.returncode == 1
    assert "response changed" in result.stdout


def test_divergence_exits_one_and_points_at_the_first_change(run_cli, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind", city="Paris")
    b = record_trip(tmp_path / "b.rewind", city="Lyon")
    result = run_cli("diff", a, b)
    assert result.returncode == 1
    out = result.stdout
    first = next(line for line in out.splitlines() if "◀ first divergence" in line)
    assert first.split()[:5] == ["~", "1", "1", "llm", "chat"]
    assert "response changed" in first
    assert "first divergence: step 1 llm 'chat': same request, different response" in out
    assert "everything after this step follows from that answer" in out
    assert "request.query: Paris → Lyon" in out
    assert "summary: 1 equal, 3 changed, 0 deleted, 0 inserted" in out


def diff_rows(output: str) -> list[list[str]]:
    return [line.split()[:5] for line in output.splitlines() if line[:2] in ("~ ", "- ", "+ ")]


def test_inserted_and_deleted_steps(run_cli, tmp_path: Path) -> None:
    plain = record_trip(tmp_path / "plain.rewind")
    extra = record_trip(tmp_path / "extra.rewind", extra_search=True)
    failing = record_trip(tmp_path / "failing.rewind", failing_search=True)
    result = run_cli("diff", extra, plain, "-c", "0")
    assert result.returncode == 1
    assert diff_rows(result.stdout) == [["-", "3", "·", "tool", "search"]]
    assert "only in A" in result.stdout and "◀ first divergence" in result.stdout
    assert "⋮  3 steps equal" in result.stdout and "⋮  1 step equal" in result.stdout
    assert "first divergence: step 3 of A tool 'search': run A made this call; run B did not" in result.stdout
    result = run_cli("diff", plain, failing, "-c", "0")
    assert diff_rows(result.stdout) == [["+", "·", "3", "tool", "search"]]
    assert "→ ✗ SearchDown: search backend unavailable" in result.stdout
    # Same identities at the same place pair up as one changed step.
    result = run_cli("diff", extra, failing, "-c", "0")
    assert diff_rows(result.stdout) == [["~", "3", "3", "tool", "search"]]
    assert "request & outcome changed" in result.stdout


def test_context_and_verbose(run_cli, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind", final="Stay at home.")
    b = record_trip(tmp_path / "b.rewind", final="Go to Rome.")
    quiet = run_cli("diff", a, b, "-c", "0").stdout
    assert "⋮  3 steps equal" in quiet
    assert "A: Stay at home." in quiet and "B: Go to Rome." in quiet
    wide = run_cli("diff", a, b, "-c", "2").stdout
    assert "⋮  1 step equal" in wide
    verbose = run_cli("diff", a, b, "-v").stdout
    assert "--- A outcome" in verbose and "+++ B outcome" in verbose
    assert '-        "content": "Stay at home."' in verbose
    assert '+        "content": "Go to Rome."' in verbose


def test_gzip_archive_diffs_against_its_source(run_cli, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    assert run_cli("compact", a).returncode == 0
    result = run_cli("diff", "--exact", a, f"{a}.gz")
    assert result.returncode == 0, result.stdout


def test_bad_context_is_a_usage_error(run_cli, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    result = run_cli("diff", a, a, "-c", "-1")
    assert result.returncode == 2
    assert "-c" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("diff", a)
    assert result.returncode == 2
    assert "Missing argument 'B'" in result.stderr


def test_bad_input_on_either_side(run_cli, tmp_path: Path, input_error) -> None:
    a = record_trip(tmp_path / "a.rewind")
    input_error(run_cli("diff", a, tmp_path / "missing.rewind"), "missing.rewind", "no such trace file")
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    input_error(run_cli("diff", junk, a), "junk.txt", "not a rewind trace")
