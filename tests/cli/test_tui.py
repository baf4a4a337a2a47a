"""The full-screen browser, driven for real: the installed script in a tmux pane, keys via
send-keys, the screen via capture-pane."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rewind_runs import record_long, record_trip

TMUX = shutil.which("tmux")
REWIND = Path(sys.executable).with_name("rewind")

pytestmark = pytest.mark.skipif(
    TMUX is None,
    reason="tmux is not installed (apt-get install -y tmux): the TUI is tested in a real terminal under tmux",
)

_CONF = """\
set -g default-terminal screen
set -g remain-on-exit on
set -g status off
set -g history-limit 200
"""


class Pane:
    """One tmux server on a private socket with one pane running a command."""

    def __init__(self, workdir: Path) -> None:
        self.socket = f"rewind-test-{uuid.uuid4().hex[:12]}"
        self.conf = workdir / "tmux.conf"
        self.conf.write_text(_CONF)
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OTEL_", "REWIND_", "TMUX")) and k not in ("NO_COLOR", "PAGER", "COLUMNS", "LINES")
        }

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        result = subprocess.run(
            [TMUX, "-L", self.socket, "-f", str(self.conf), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )
        if result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def start(self, *argv: object, cols: int = 120, rows: int = 30, env: dict[str, str] | None = None) -> None:
        # tmux's #{pane_dead_status} is not always filled in, so the shell reports the status.
        variables = [f"{k}={v}" for k, v in (env or {}).items()]
        script = 'env "$@"; echo "[rewind exited $?]"'
        command = shlex.join(["sh", "-c", script, "sh", *variables, str(REWIND), *map(str, argv)])
        self.tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), "-s", "main", command)

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "main", *(["-l"] if literal else []), *keys)

    def screen(self, *, escapes: bool = False, history: bool = False, joined: bool = False) -> str:
        """The pane's text; ``joined``: lines the pane wrapped are joined back, spaces kept."""
        options = [*(["-e"] if escapes else []), *(["-S", "-"] if history else []), *(["-J"] if joined else [])]
        return self.tmux("capture-pane", "-p", *options, "-t", "main")

    def wait_for(self, *texts: str, absent: tuple[str, ...] = (), timeout: float = 20.0) -> str:
        """The screen once it shows every one of ``texts`` and none of ``absent``."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(t in screen for t in texts) and not any(t in screen for t in absent):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"screen never showed {texts} (without {absent}):\n{screen}")

    def wait_for_list(self, *texts: str, rows: Callable[[list[str]], bool], timeout: float = 20.0) -> str:
        """The screen once it shows ``texts`` and its step list satisfies ``rows``: a capture
        can land between curses drawing the detail pane and drawing the list."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(t in screen for t in texts) and rows(list_rows(screen)):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"the step list never settled for {texts}:\n{screen}")

    def exit_status(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"\[rewind exited (\d+)\]", self.screen(history=True))
            if found:
                return int(found.group(1))
            time.sleep(0.05)
        raise AssertionError(f"the program did not exit:\n{self.screen()}")

    def close(self) -> None:
        command = [TMUX or "tmux", "-L", self.socket, "kill-server"]
        subprocess.run(command, capture_output=True, env=self.env, timeout=30)


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    pane = Pane(tmp_path)
    try:
        yield pane
    finally:
        pane.close()


@pytest.fixture
def trip(tmp_path: Path) -> Path:
    return record_trip(tmp_path / "trip.rewind", extra_search=True, failing_search=True)


def cells(row: str) -> list[str]:
    """``["#3", "tool", "search"]`` of a list row (the step's outcome follows them)."""
    found = re.search(r"(#\d+)\s+(\S+)\s+(\S+)", row)
    assert found is not None, row
    return list(found.groups())


def list_rows(screen: str) -> list[str]:
    """The step list (left pane) of a captured screen."""
    return [line.split("│")[0].rstrip() for line in screen.splitlines()[1:-1] if "#" in line.split("│")[0]]


def test_browse_move_jump_and_quit(pane: Pane, trip: Path) -> None:
    pane.start("show", trip, "--tui")
    screen = pane.wait_for_list(
        f"rewind · 6 steps · {trip}", "step 0 · memory · recall", rows=lambda rows: len(rows) == 6
    )
    rows = list_rows(screen)
    assert [cells(row) for row in rows][:2] == [["#0", "memory", "recall"], ["#1", "llm", "chat"]]
    assert rows[0].startswith(">"), "the cursor starts on the first step"
    assert rows[4].startswith(" !"), "the failed step is marked"
    # Each row shows what the step came to: the model's tool call, the answer, the error.
    assert "→ search(" in rows[1] and "✗ " in rows[4]
    assert "── request ──" in screen and '{"topic":"preferences"}' in screen
    assert "j/k move  g/G top/end  PgUp/PgDn page  / filter  Enter expand  q quit" in screen

    pane.keys("j")
    screen = pane.wait_for_list(
        "step 1 · llm · chat", "model: gpt-4o-2024-08-06", rows=lambda rows: len(rows) == 6 and rows[1].startswith(">")
    )
    assert "→ search(query=Paris)" in screen
    pane.keys("Down")
    pane.wait_for("step 2 · tool · search", '{"query":"Paris"}')
    pane.keys("G")
    pane.wait_for("step 5 · llm · chat", "Book the Hotel Paris.")
    pane.keys("k")
    screen = pane.wait_for("step 4 · tool · search", "── error ──")
    assert "SearchDown: search backend unavailable" in screen and "ERROR" in screen
    pane.keys("Up")
    pane.wait_for("step 3 · tool · search")
    pane.keys("g")
    pane.wait_for("step 0 · memory · recall")
    pane.keys("End")
    pane.wait_for("step 5 · llm · chat")
    pane.keys("Home")
    pane.wait_for("step 0 · memory · recall")
    pane.keys("q")
    assert pane.exit_status() == 0


def test_filter_by_substring(pane: Pane, trip: Path) -> None:
    pane.start("show", trip, "--tui")
    pane.wait_for("6 steps")
    pane.keys("/")
    pane.keys("paris museums", literal=True)
    screen = pane.wait_for_list(
        "1/6 steps · filter: paris museums ·", "/paris museums", rows=lambda rows: len(rows) == 1
    )
    assert [cells(row)[0] for row in list_rows(screen)] == ["#3"]
    assert "step 3 · tool · search" in screen
    pane.keys("Enter")
    pane.wait_for("q quit", "filter: paris museums")
    # The filter looks at names and content: both llm steps mention the search tool.
    pane.keys("/")
    pane.keys(*["BSpace"] * len("paris museums"))
    pane.keys("search", literal=True)
    screen = pane.wait_for_list("5/6 steps · filter: search", rows=lambda rows: len(rows) == 5)
    assert [cells(row)[0] for row in list_rows(screen)] == ["#1", "#2", "#3", "#4", "#5"]
    assert "step 3 · tool · search" in screen, "the selected step stays selected"
    pane.keys("Enter")
    pane.keys("j")
    pane.wait_for("step 4 · tool · search")
    pane.keys("/")
    pane.keys(*["BSpace"] * len("search"))
    pane.keys("unavailable", literal=True)
    screen = pane.wait_for_list("1/6 steps · filter: unavailable", rows=lambda rows: len(rows) == 1)
    assert [cells(row)[0] for row in list_rows(screen)] == ["#4"]
    pane.keys("Enter")
    pane.keys("/")
    pane.keys("zzz-nothing", literal=True)
    pane.wait_for("0/6 steps", "no steps match 'unavailablezzz-nothing'")
    pane.keys("Escape")
    pane.wait_for("6 steps", absent=("filter:",))
    pane.wait_for_list("6 steps", rows=lambda rows: len(rows) == 6)
    pane.keys("q")
    assert pane.exit_status() == 0


def test_enter_expands_pretty_json_that_scrolls(pane: Pane, trip: Path) -> None:
    pane.start("show", trip, "--tui", rows=14)
    pane.wait_for("6 steps")
    pane.keys("j")
    pane.wait_for("step 1 · llm · chat", "── response ──")
    pane.keys("Enter")
    screen = pane.wait_for('"messages": [', "Enter/Esc back", "[1-12/")
    assert '"content": ' in screen
    total = screen.split("[1-12/")[1].split("]")[0]
    pane.keys("j", "j")
    pane.wait_for(f"[3-14/{total}]")
    pane.keys("NPage")
    pane.wait_for(f"[14-25/{total}]")
    pane.keys("G")
    pane.wait_for(f"-{total}/{total}]", '"total_tokens": 1240')
    pane.keys("g")
    pane.wait_for(f"[1-12/{total}]")
    pane.keys("Escape")
    pane.wait_for("── response ──", "j/k move", absent=('"messages": [',))
    pane.keys("q")
    assert pane.exit_status() == 0


def test_pages_through_a_long_trace(pane: Pane, tmp_path: Path) -> None:
    long = record_long(tmp_path / "long.rewind", 100)
    pane.start("show", long, "--tui", rows=20)
    pane.wait_for_list("100 steps", "step 0 · tool · fetch", rows=lambda rows: len(rows) == 18)
    pane.keys("NPage")
    pane.wait_for("step 17 · tool · fetch")
    pane.keys("NPage")

    def last_selected(rows: list[str]) -> bool:
        return bool(rows) and rows[-1].startswith(">") and rows[-1].split()[1] == "#34"

    pane.wait_for_list("step 34 · tool · fetch", rows=last_selected)
    pane.keys("PPage")
    pane.wait_for("step 17 · tool · fetch")
    pane.keys("G")
    pane.wait_for_list("step 99 · tool · fetch", rows=lambda rows: bool(rows) and rows[-1].split()[1] == "#99")
    pane.keys("q")
    assert pane.exit_status() == 0


def test_dash_i_on_a_terminal_opens_the_browser(pane: Pane, trip: Path) -> None:
    pane.start("show", trip, "-i")
    pane.wait_for(f"rewind · 6 steps · {trip}")
    pane.keys("q")
    assert pane.exit_status() == 0


def test_no_tui_gives_the_line_stepper_on_a_terminal(pane: Pane, trip: Path) -> None:
    pane.start("show", trip, "-i", "--no-tui")
    pane.wait_for("── step 0 ── memory 'recall'", "[step 0 · 1/6] n/p/j STEP/q>")
    pane.keys("n", "Enter")
    pane.wait_for("── step 1 ── llm 'chat'")
    pane.keys("j 4", "Enter")
    pane.wait_for("── step 4 ── tool 'search' · ERROR")
    pane.keys("q", "Enter")
    assert pane.exit_status() == 0


def test_colour_and_no_color(pane: Pane, trip: Path, tmp_path: Path) -> None:
    pane.start("show", trip, "--tui")
    pane.wait_for("6 steps")
    assert "\x1b[31m" in pane.screen(escapes=True), "the failed step is red"
    pane.keys("q")
    pane.exit_status()
    plain = Pane(tmp_path)
    try:
        plain.start("show", trip, "--tui", env={"NO_COLOR": "1"})
        plain.wait_for("6 steps")
        raw = plain.screen(escapes=True)
        assert "\x1b[31m" not in raw and "\x1b[36m" not in raw
        assert "\x1b[7m" in raw, "selection and bars still use reverse video"
        plain.keys("q")
        assert plain.exit_status() == 0
    finally:
        plain.close()


def test_resize_and_a_too_small_terminal(pane: Pane, trip: Path) -> None:
    pane.start("show", trip, "--tui", cols=120, rows=30)
    pane.wait_for("6 steps")
    pane.tmux("resize-window", "-t", "main", "-x", "30", "-y", "6")
    pane.wait_for("terminal too small")
    pane.tmux("resize-window", "-t", "main", "-x", "70", "-y", "16")
    screen = pane.wait_for("· 6 steps ·", "step 0 · memory", absent=("terminal too small",))
    assert max(len(line) for line in screen.splitlines()) <= 70
    pane.keys("q")
    assert pane.exit_status() == 0


def test_a_corrupt_step_ends_the_browser_with_a_one_line_error(pane: Pane, trip: Path, tmp_path: Path) -> None:
    lines = trip.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"request":', b'"request":{{', 1)  # step 2's body
    bad = tmp_path / "bad.rewind"
    bad.write_bytes(b"".join(lines))
    pane.start("show", bad, "--tui")
    pane.wait_for("6 steps", "step 0 · memory")
    pane.keys("j", "j")
    assert pane.exit_status() == 2
    text = pane.screen(history=True, joined=True)  # the message wraps at the pane's width
    assert f"rewind: error: {bad}:4: corrupt event line" in text
    assert "restore it from a copy or re-record the run" in text
    assert "Traceback" not in text
