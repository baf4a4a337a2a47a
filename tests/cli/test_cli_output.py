"""Help, version, colour (terminals only, NO_COLOR respected) and paging, on a real pseudo-terminal."""

from __future__ import annotations

import os
import re
import select
import subprocess
from pathlib import Path

import pytest
from rewind_runs import record_long, record_trip

import rewind

pty = pytest.importorskip("pty", reason="pseudo-terminals are POSIX-only")

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_on_tty(
    script: Path, *args: object, env: dict[str, str], rows: int = 24, cols: int = 100, typed: bytes = b""
) -> tuple[int, str]:
    """Run the console script with stdin/stdout/stderr on a fresh pseudo-terminal; ``typed`` is typed ahead."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "COLUMNS", "LINES")}
    full_env.update({"TERM": "xterm", **env})
    proc = subprocess.Popen([str(script), *map(str, args)], stdin=slave, stdout=slave, stderr=slave, env=full_env)
    os.close(slave)
    if typed:
        os.write(master, typed)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                proc.kill()
                raise AssertionError("the command hung on the terminal: " + b"".join(chunks).decode(errors="replace"))
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has exited
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture
def trip(tmp_path: Path) -> Path:
    return record_trip(tmp_path / "trip.rewind", failing_search=True)


def test_version_and_help_everywhere(run_cli) -> None:
    result = run_cli("--version")
    # Other distributions install a `rewind` too: the version line names this one and where it is.
    package = Path(rewind.__file__).resolve().parent
    assert result.returncode == 0
    assert result.stdout.strip() == f"rewind {rewind.__version__} (agent-rewind-otel, {package})"
    top = run_cli("--help")
    assert top.returncode == 0
    for name in ("show", "stats", "diff", "compact"):
        assert re.search(rf"^  {name}\s+\S", top.stdout, flags=re.MULTILINE), name
        result = run_cli(name, "--help")
        assert result.returncode == 0, name
        assert result.stdout.startswith(f"Usage: rewind {name} [OPTIONS]")
    assert "--tui / --no-tui" in run_cli("show", "-h").stdout
    diff_help = run_cli("diff", "-h").stdout
    assert "Exit status: 0 the runs are the same, 1 they diverged, 2 bad usage or input." in diff_help


def test_colour_on_a_terminal_only(rewind_script: Path, run_cli, trip: Path) -> None:
    status, out = run_on_tty(rewind_script, "show", trip, env={})
    assert status == 0
    assert ANSI.search(out), "a terminal gets colour"
    assert "SearchDown" in ANSI.sub("", out)
    assert not ANSI.search(run_cli("show", trip).stdout), "a pipe does not"


@pytest.mark.parametrize("command", [("show",), ("stats",), ("diff", "SELF")])
def test_no_color_is_respected(rewind_script: Path, trip: Path, tmp_path: Path, command: tuple[str, ...]) -> None:
    other = record_trip(tmp_path / "other.rewind", city="Rome")
    args = [other if arg == "SELF" else arg for arg in command[1:]]
    status, out = run_on_tty(rewind_script, command[0], trip, *args, env={"NO_COLOR": "1"})
    assert status in (0, 1)
    assert not ANSI.search(out), out
    # An empty NO_COLOR does not count (no-color.org).
    _, coloured = run_on_tty(rewind_script, command[0], trip, *args, env={"NO_COLOR": ""})
    assert ANSI.search(coloured)


def test_color_flag_overrides_detection(rewind_script: Path, run_cli, trip: Path) -> None:
    forced = run_cli("--color", "always", "show", trip)
    assert ANSI.search(forced.stdout)
    _, out = run_on_tty(rewind_script, "--color", "never", "show", trip, env={})
    assert not ANSI.search(out)


def test_long_output_on_a_terminal_goes_through_the_pager(rewind_script: Path, tmp_path: Path) -> None:
    long = record_long(tmp_path / "long.rewind", 120)
    # `cat -n` as the pager numbers the lines it shows, which proves the report went through it.
    status, out = run_on_tty(rewind_script, "show", long, env={"PAGER": "cat -n"})
    assert status == 0
    out = ANSI.sub("", out)
    assert re.search(r"^\s+1\t.*long\.rewind: 120 steps", out, flags=re.MULTILINE), out[:300]
    assert re.search(r"^\s+\d+\t#119 ", out, flags=re.MULTILINE)
    status, out = run_on_tty(rewind_script, "--no-pager", "show", long, env={"PAGER": "cat -n"})
    assert status == 0
    assert not re.search(r"^\s+1\t", out, flags=re.MULTILINE)
    assert "#119 " in out


def test_short_output_is_not_paged(rewind_script: Path, trip: Path) -> None:
    status, out = run_on_tty(rewind_script, "stats", trip, env={"PAGER": "cat -n"}, rows=60)
    assert status == 0
    assert not re.search(r"^\s+1\t", out, flags=re.MULTILINE)
    assert "steps:      5" in out


def test_internal_errors_are_one_line_with_a_debug_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug must not dump a traceback on users either, but it keeps its own exit status.
    import click
    from click.testing import CliRunner

    from rewind.cli import RewindGroup

    group = RewindGroup(name="rewind")

    @group.command("boom")
    def boom() -> None:
        raise KeyError("unexpected")

    result = CliRunner().invoke(group, ["boom"])
    assert result.exit_code == 3
    assert result.output.startswith("rewind: internal error: KeyError: 'unexpected'")
    assert "REWIND_DEBUG=1" in result.output and "Traceback" not in result.output
    monkeypatch.setenv("REWIND_DEBUG", "1")
    result = CliRunner().invoke(group, ["boom"])
    assert isinstance(result.exception, KeyError)
    assert click  # imported for the decorator's module


def test_odd_header_meta_is_shown_not_fatal(run_cli, trip: Path, tmp_path: Path) -> None:
    lines = trip.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"meta":{}', b'"meta":[1,2]')
    odd = tmp_path / "odd.rewind"
    odd.write_bytes(b"".join(lines))
    result = run_cli("show", odd)
    assert result.returncode == 0, result.stderr
    assert "meta: [1,2]" in result.stdout


def test_a_terminal_curses_cannot_drive_falls_back_to_the_stepper(rewind_script: Path, trip: Path) -> None:
    env = {"TERM": "no-such-terminal-xyz"}
    status, out = run_on_tty(rewind_script, "show", trip, "-i", env=env, typed=b"n\nq\n")
    assert status == 0, out
    assert "using the line stepper" in out
    assert "── step 1 ── llm 'chat'" in out
    # --tui too: no curses falls back to the line stepper, as the spec says, and says so.
    status, out = run_on_tty(rewind_script, "show", trip, "--tui", env=env, typed=b"n\nq\n")
    assert status == 0, out
    assert "rewind: the terminal cannot run the full-screen browser" in out and "using the line stepper" in out
