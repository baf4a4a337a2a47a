"""Every human-facing output shows recorded text inert (docs/trace-format.md,
"Opening a trace from anywhere"): step names, kinds, meta, payloads, error messages,
model names and even file names may carry terminal escape sequences, and none may
reach the terminal as one. OSC (window title, OSC 52 clipboard writes), CSI (cursor
moves, erase, conceal), C1 controls and bidirectional overrides are shown as visible
escapes instead, in every command, with colour on or off.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rewind
from rewind.cli import cli
from rewind.cli.tui import Browser
from rewind.storage.trace import Trace

OSC_TITLE = "\x1b]0;pwned\x07"
OSC_52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes "rm -rf ~" to the clipboard
CSI_ERASE = "\x1b[2J\x1b[H"
CSI_CONCEAL = "\x1b[8m"
C1_CSI = "\x9b31m"
C1_OSC = "\x9d0;c1\x9c"
BIDI = "\u202egnp.exe"
BELL_DEL_NUL = "\x07\x7f\x00"
HOSTILE = OSC_TITLE + OSC_52 + CSI_ERASE + CSI_CONCEAL + C1_CSI + C1_OSC + BIDI + BELL_DEL_NUL

# What may reach a terminal: printable text, newlines, and (with colour on) rewind's
# own SGR colour codes, which are all of the form ESC [ digits m.
_OUR_SGR = re.compile(r"\x1b\[[0-9;]*m")
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def assert_inert(text: str, *, color: bool) -> None:
    if color:
        for sgr in _OUR_SGR.findall(text):
            assert sgr != CSI_CONCEAL, "the trace's own SGR got through"
        text = _OUR_SGR.sub("", text)
    bad = _UNSAFE.search(text)
    assert bad is None, f"raw {bad.group()!r} reached the output: …{text[max(0, bad.start() - 60) : bad.end() + 20]!r}…"


def assert_visible(text: str) -> None:
    """The hostile characters are shown, escaped, so a reader can see something is there."""
    assert "\\x1b]52;c;" in text or "\\x1b]0;pwned" in text, text[:2000]


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A real recording whose every string carries escape sequences (file name included)."""
    path = tmp_path / f"run{OSC_TITLE}.rewind"

    @rewind.llm(name=f"chat{HOSTILE}")
    def chat(prompt: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "model": f"gpt{CSI_ERASE}-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"hi {HOSTILE}"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2},
        }

    @rewind.tool(name=f"search{OSC_52}")
    def search(query: str) -> dict[str, str]:
        return {f"key{C1_CSI}": f"value {HOSTILE}"}

    @rewind.tool(name="explode")
    def explode(why: str) -> None:
        raise RuntimeError(f"failed {HOSTILE}\nsecond line {OSC_52}")

    with rewind.record(path, meta={f"who{OSC_TITLE}": f"me {HOSTILE}", "plain": [HOSTILE]}):
        chat(f"prompt {HOSTILE}")
        search(f"q {OSC_52}")
        with pytest.raises(RuntimeError):
            explode(HOSTILE)
    return path


@pytest.fixture
def hostile_b(hostile: Path, tmp_path: Path) -> Path:
    """Run B: the same run with different hostile answers, so diff shows its details."""
    lines = hostile.read_text().splitlines()
    second = json.loads(lines[2])
    second["response"] = {f"key{C1_CSI}": f"other {OSC_52}", f"new{CSI_ERASE}": BIDI}
    lines[2] = json.dumps(second, ensure_ascii=False, separators=(",", ":"))
    path = tmp_path / f"b{C1_OSC}.rewind"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args: object, input: str | None = None) -> Any:
    result = CliRunner().invoke(cli, ["--no-pager", *map(str, args)], input=input)
    assert result.exit_code in (0, 1), (result.exit_code, result.output)
    return result


COMMANDS = [
    pytest.param(lambda a, b: ["show", a], id="show"),
    pytest.param(lambda a, b: ["show", "-v", a], id="show-v"),
    pytest.param(lambda a, b: ["stats", a], id="stats"),
    pytest.param(lambda a, b: ["diff", a, b], id="diff"),
    pytest.param(lambda a, b: ["diff", "-v", a, b], id="diff-v"),
    pytest.param(lambda a, b: ["diff", "--exact", "-v", a, b], id="diff-exact-v"),
]


@pytest.mark.parametrize("color", [True, False], ids=["color", "plain"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_report_escapes_control_characters(hostile: Path, hostile_b: Path, command, color: bool) -> None:
    args = command(hostile, hostile_b)
    result = run("--color", "always" if color else "never", *args)
    assert_inert(result.output, color=color)
    assert_visible(result.output)


@pytest.mark.parametrize("color", [True, False], ids=["color", "plain"])
def test_the_line_stepper_escapes_every_view(hostile: Path, color: bool) -> None:
    keys = "f\nn\nf\nn\nf\nj 0\nq\n"
    result = run("--color", "always" if color else "never", "show", "-i", "--no-tui", hostile, input=keys)
    assert result.output.count("── step") >= 6
    assert_inert(result.output, color=color)
    assert_visible(result.output)


def test_the_full_screen_browser_draws_only_inert_text(hostile: Path) -> None:
    trace = Trace.open(hostile)
    browser = Browser(trace, title=str(hostile))
    drawn = [browser.title]
    for position in range(len(browser.visible)):
        browser.selected = position
        drawn.append(browser.label(browser.visible[position], selected=True))
        for expanded in (False, True):
            browser.expanded = expanded
            drawn.extend(browser.detail(60))
    browser.apply_filter("chat")
    drawn.extend(browser.detail(60))
    text = "\n".join(drawn)
    for line in drawn:
        assert "\n" not in line, line
    assert_inert(text, color=False)
    assert_visible(text)


def test_errors_and_notes_escape_file_names_and_messages(tmp_path: Path, hostile: Path) -> None:
    bogus = tmp_path / f"notes{OSC_52}.rewind"
    bogus.write_text("not a trace\n")
    result = CliRunner().invoke(cli, ["show", str(bogus)])
    assert result.exit_code == 2
    assert_inert(result.output, color=False)
    assert "\\x1b]52;" in result.output
    compacted = run("compact", hostile, "-o", tmp_path / f"out{CSI_ERASE}.gz")
    assert_inert(compacted.output, color=False)
    assert "\\x1b[2J" in compacted.output


def test_ordinary_text_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "plain.rewind"

    @rewind.tool(name="naïve search 🔍")
    def search(query: str) -> str:
        return "Grüße — 東京\tnext"

    with rewind.record(path):
        search("a")
    result = run("show", "-v", path)
    assert "naïve search 🔍" in result.output and "Grüße — 東京" in result.output
    assert "\\x" not in result.output and "\\u" not in result.output


def test_rewind_replay_reports_a_divergence_inert(run_cli, tmp_path: Path) -> None:
    # The divergence message quotes the recorded request, hostile characters and all.
    path = tmp_path / "run.rewind"

    @rewind.llm(name="chat")
    def chat(prompt: str) -> str:
        return "ok"

    with rewind.record(path):
        chat(f"hi {HOSTILE}")
    child = "import rewind\nrewind.llm(name='chat')(lambda prompt: 1)(prompt='hello')"
    result = run_cli("replay", path, "--", sys.executable, "-c", child)
    assert result.returncode != 0
    assert "diverged" in result.stderr and "\\x9b31m" in result.stderr, result.stderr
    assert_inert(result.stderr, color=False)
