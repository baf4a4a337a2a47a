"""Every command answers bad input with one line naming the file and what to do, and exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from rewind_runs import record_trip


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def missing(good: Path, bad: Path) -> Path:
    return bad


def directory(good: Path, bad: Path) -> Path:
    bad.mkdir()
    return bad


def not_a_trace(good: Path, bad: Path) -> Path:
    bad.write_text("id,name\n1,flight\n")
    return bad


def empty(good: Path, bad: Path) -> Path:
    bad.write_bytes(b"")
    return bad


def corrupt_middle_line(good: Path, bad: Path) -> Path:
    lines = _lines(good)
    lines[2] = b'{"seq": 1, "kind": "llm", oops\n'
    bad.write_bytes(b"".join(lines))
    return bad


def newer_format(good: Path, bad: Path) -> Path:
    lines = _lines(good)
    header = json.loads(lines[0])
    header["version"] = 99
    lines[0] = json.dumps(header).encode() + b"\n"
    bad.write_bytes(b"".join(lines))
    return bad


def corrupt_gzip(good: Path, bad: Path) -> Path:
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage that is not deflate data")
    return bad


def corrupt_body(good: Path, bad: Path) -> Path:
    # The skeleton a lazy reader indexes is intact; the body breaks only when read.
    lines = _lines(good)
    lines[2] = lines[2].replace(b'"request":', b'"request":{{', 1)
    bad.write_bytes(b"".join(lines))
    return bad


CASES: list[tuple[Callable[[Path, Path], Path], tuple[str, ...]]] = [
    (missing, ("no such trace file", "rewind.record(path)")),
    (directory, ("is a directory", "pass the trace file itself")),
    (not_a_trace, (":1: not a rewind trace", "pass a file written by rewind.record()")),
    (empty, ("empty file", "re-record")),
    (corrupt_middle_line, (":3: corrupt event line", "restore it from a copy or re-record")),
    (newer_format, (":1: written in trace format v99", "upgrade agent-rewind")),
    (corrupt_gzip, ("corrupt gzip archive", "compact the original trace again")),
    (corrupt_body, (":3: corrupt event line", "restore it from a copy or re-record")),
]

# show -v reads every body; the other commands open traces their own way (stats and diff
# lazily, compact eagerly, the stepper step by step), so each meets the errors that
# can surface late as well as the ones found on opening.
ALL = [case[0].__name__ for case in CASES]
LATE = ["missing", "not_a_trace", "corrupt_gzip", "corrupt_body", "newer_format"]
MATRIX = [(("show", "-v"), case) for case in ALL] + [
    (command, case)
    for command in [("show",), ("stats",), ("diff", "GOOD"), ("compact",), ("show", "-i")]
    for case in LATE
]
_FRAGMENTS = {case[0].__name__: case for case in CASES}


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return record_trip(tmp_path / "good.rewind")


@pytest.mark.parametrize(("command", "case"), MATRIX, ids=[f"{' '.join(c)}-{k}" for c, k in MATRIX])
def test_bad_trace(run_cli, input_error, good: Path, tmp_path: Path, command: tuple[str, ...], case: str) -> None:
    make, fragments = _FRAGMENTS[case]
    bad = make(good, tmp_path / "bad.rewind")
    name, *rest = command
    args = [str(good) if arg == "GOOD" else arg for arg in rest]
    argv = ["diff", *args, bad] if name == "diff" else [name, bad, *args]
    # The stepper reads a step's body only when it shows it: walk to every step.
    result = run_cli(*argv, input="n\n" * 5 + "q\n")
    input_error(result, str(bad), *fragments)


def test_unknown_command_and_options_are_usage_errors(run_cli, good: Path) -> None:
    for args in (("frobnicate",), ("show",), ("show", good, "--bogus"), ("stats", good, good)):
        result = run_cli(*args)
        assert result.returncode == 2, args
        assert "Usage:" in result.stderr and "Traceback" not in result.stderr


def test_debug_switch_is_not_needed_for_input_errors(run_cli, tmp_path: Path, input_error) -> None:
    # REWIND_DEBUG only unmasks internal errors; input errors stay one line.
    result = run_cli("show", tmp_path / "absent.rewind", env={"REWIND_DEBUG": "1"})
    input_error(result, "absent.rewind")
