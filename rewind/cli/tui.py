"""The full-screen trace browser: a scrollable step list beside the selected step's detail.

Keys (list)::

    j / k / ↓ / ↑     move              g / G / Home / End   first / last step
    PgDn / PgUp       page              /                    filter by substring (Esc clears)
    Enter             expand the step into pretty JSON (the detail pane takes the keys)
    q                 quit

Keys (expanded detail): j/k/↓/↑, PgDn/PgUp, g/G scroll; Enter, Esc or ← go back to the list.

Stdlib ``curses`` only. ``run`` raises ``TuiUnavailable`` when curses cannot start (no
curses module, not a terminal, unknown ``TERM``) so callers can fall back to the line
stepper.
"""

from __future__ import annotations

import locale
import os
from typing import Any

from rewind.data.escape import inert
from rewind.inspection.preview import clip, compact, error_line, model_of, outcome, pretty, search_text, stream_chunks
from rewind.storage.trace import Event, Trace

HELP = "j/k move  g/G top/end  PgUp/PgDn page  / filter  Enter expand  q quit"
HELP_EXPANDED = "j/k scroll  g/G top/end  PgUp/PgDn page  Enter/Esc back  q quit"
_MIN_COLS, _MIN_LINES = 40, 8
_ESC = 27
_CTRL_B, _CTRL_F = 2, 6


class TuiUnavailable(RuntimeError):
    """The full-screen browser cannot run here (no curses, or no usable terminal)."""


def _wrap(text: str, width: int) -> list[str]:
    """Hard-wrap ``text`` to ``width`` columns, keeping its own line breaks."""
    out: list[str] = []
    for line in text.splitlines() or [""]:
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return out


class Browser:
    """Screen-independent state of the browser; ``draw``/``key`` drive it through curses."""

    def __init__(self, trace: Trace, *, title: str | None = None) -> None:
        self.trace = trace
        self.events: list[Event] = list(trace.events)
        # Everything drawn from the trace (and its file name) is inert: curses passes C1
        # controls and escape sequences through to the terminal as they are.
        self.title = inert(title or trace.path or "trace")
        self.visible: list[int] = list(range(len(self.events)))
        self.selected = 0  # position in ``visible``
        self.top = 0
        self.filter = ""
        self.prompt: str | None = None  # the filter being typed, when the prompt is open
        self.expanded = False
        self.detail_top = 0
        self._search: list[str | None] = [None] * len(self.events)
        self._detail_cache: tuple[tuple[int, bool, int], list[str]] | None = None

    # -- model ----------------------------------------------------------------------------
    @property
    def current(self) -> Event | None:
        if not self.visible:
            return None
        return self.events[self.visible[self.selected]]

    def label(self, index: int, *, selected: bool = False) -> str:
        # The cursor and error marks are characters too, so they show without colour or reverse video.
        event = self.events[index]
        mark = (">" if selected else " ") + (" " if event.ok else "!")
        # What the step came to (a tool call, the answer, the error), not just what it called.
        return f"{mark} #{event.seq:<4} {inert(event.kind):<6} {clip(event.name, 32)}  {outcome(event, 80)}"

    def apply_filter(self, text: str) -> None:
        keep = self.events[self.visible[self.selected]] if self.visible else None
        self.filter = text
        needle = text.lower()
        if not needle:
            self.visible = list(range(len(self.events)))
        else:
            self.visible = [i for i in range(len(self.events)) if needle in self._haystack(i)]
        self.selected = 0
        if keep is not None:
            for position, index in enumerate(self.visible):
                if self.events[index] is keep:
                    self.selected = position
                    break
        self.top = 0
        self.expanded = False

    def _haystack(self, index: int) -> str:
        text = self._search[index]
        if text is None:
            text = self._search[index] = search_text(self.events[index])
        return text

    def move(self, delta: int) -> None:
        if self.visible:
            self.selected = max(0, min(len(self.visible) - 1, self.selected + delta))
            self.detail_top = 0

    def detail(self, width: int) -> list[str]:
        event = self.current
        if event is None:
            return [f"no steps match {self.filter!r}", "", "press / to change the filter, Esc to clear it"]
        key = (self.visible[self.selected], self.expanded, width)
        if self._detail_cache is not None and self._detail_cache[0] == key:
            return self._detail_cache[1]
        lines = self._detail_lines(event, width)
        self._detail_cache = (key, lines)
        return lines

    def _detail_lines(self, event: Event, width: int) -> list[str]:
        status = "ok" if event.ok else "ERROR"
        named = f"step {event.seq} · {inert(event.kind)} · {clip(event.name, None)}"
        lines = [named, f"{status} · {event.duration_ms:.1f} ms"]
        model = model_of(event) if event.kind == "llm" else None
        if model:
            lines.append(f"model: {clip(model, None)}")
        if not event.live:
            lines.append("served from the source trace (fork prefix)")
        lines.append("")
        if self.expanded:
            sections: list[tuple[str, Any]] = [("request", event.request)]
            if not event.ok:
                sections.append(("error", event.error))
            elif event.response is None and event.get("stream") is not None:
                sections.append(("stream", event.get("stream")))
            else:
                sections.append(("response", event.response))
            for name, value in sections:
                lines.append(f"── {name} ──")
                lines.extend(_wrap(pretty(value), width))
                lines.append("")
            return lines
        lines.append("── request ──")
        lines.extend(_wrap(compact(event.request, width * 6), width))
        lines.append("")
        if not event.ok:
            lines.append("── error ──")
            lines.extend(_wrap(error_line(event.error), width))
        elif event.response is None and event.get("stream") is not None:
            lines.append(f"── stream ({len(stream_chunks(event))} chunks) ──")
            lines.extend(_wrap(outcome(event, width * 6), width))
        else:
            lines.append("── response ──")
            if event.kind == "llm":
                lines.extend(_wrap(outcome(event, width * 3), width))
                lines.append("")
            lines.extend(_wrap(compact(event.response, width * 6), width))
        lines.append("")
        lines.append("[Enter: full JSON]")
        return lines

    # -- keys -------------------------------------------------------------------------------
    def key(self, ch: int, page: int, keys: Any) -> bool:
        """Handle one key; ``False`` quits."""
        if self.prompt is not None:
            self._prompt_key(ch, keys)
            return True
        if ch == ord("q"):
            return False
        if self.expanded:
            self._detail_key(ch, page, keys)
            return True
        if ch in (ord("j"), keys.KEY_DOWN):
            self.move(1)
        elif ch in (ord("k"), keys.KEY_UP):
            self.move(-1)
        elif ch in (ord("g"), keys.KEY_HOME):
            self.move(-len(self.visible))
        elif ch in (ord("G"), keys.KEY_END):
            self.move(len(self.visible))
        elif ch in (keys.KEY_NPAGE, _CTRL_F, ord(" ")):
            self.move(page)
        elif ch in (keys.KEY_PPAGE, _CTRL_B):
            self.move(-page)
        elif ch == ord("/"):
            self.prompt = self.filter
        elif ch in (10, 13, keys.KEY_ENTER, keys.KEY_RIGHT, ord("l")):
            if self.current is not None:
                self.expanded = True
                self.detail_top = 0
        elif ch == _ESC and self.filter:
            self.apply_filter("")
        return True

    def _detail_key(self, ch: int, page: int, keys: Any) -> None:
        if ch in (ord("j"), keys.KEY_DOWN):
            self.detail_top += 1
        elif ch in (ord("k"), keys.KEY_UP):
            self.detail_top -= 1
        elif ch in (keys.KEY_NPAGE, _CTRL_F, ord(" ")):
            self.detail_top += page
        elif ch in (keys.KEY_PPAGE, _CTRL_B):
            self.detail_top -= page
        elif ch in (ord("g"), keys.KEY_HOME):
            self.detail_top = 0
        elif ch in (ord("G"), keys.KEY_END):
            self.detail_top = 1 << 30
        elif ch in (10, 13, _ESC, keys.KEY_ENTER, keys.KEY_LEFT, keys.KEY_BACKSPACE, 127, ord("h")):
            self.expanded = False
            self.detail_top = 0
        elif ch == ord("/"):
            self.expanded = False
            self.prompt = self.filter

    def _prompt_key(self, ch: int, keys: Any) -> None:
        assert self.prompt is not None
        if ch in (10, 13, keys.KEY_ENTER):
            self.prompt = None
        elif ch == _ESC:
            self.prompt = None
            self.apply_filter("")
        elif ch in (keys.KEY_BACKSPACE, 127, 8):
            self.prompt = self.prompt[:-1]
            self.apply_filter(self.prompt)
        elif 32 <= ch < 0x110000 and chr(ch).isprintable():
            self.prompt += chr(ch)
            self.apply_filter(self.prompt)


class _Screen:
    """Draws a ``Browser`` with curses."""

    def __init__(self, browser: Browser, curses: Any, screen: Any, color: bool) -> None:
        self.b = browser
        self.curses = curses
        self.screen = screen
        self.error_attr = curses.A_BOLD
        self.dim_attr = curses.A_DIM
        if color and curses.has_colors():
            try:
                curses.use_default_colors()
                curses.init_pair(1, curses.COLOR_RED, -1)
                curses.init_pair(2, curses.COLOR_CYAN, -1)
                self.error_attr = curses.color_pair(1) | curses.A_BOLD
                self.dim_attr = curses.color_pair(2)
            except curses.error:
                pass

    def put(self, y: int, x: int, text: str, width: int, attr: int = 0) -> None:
        if width <= 0:
            return
        text = text[:width]
        try:
            self.screen.addnstr(y, x, text, width, attr)
        except (self.curses.error, UnicodeEncodeError):
            try:  # the bottom-right cell, or a character the terminal cannot show
                self.screen.addnstr(y, x, text.encode("ascii", "replace").decode(), max(0, width - 1), attr)
            except self.curses.error:
                pass

    def draw(self) -> int:
        """Render one frame; returns the page size (rows of the list)."""
        curses, b = self.curses, self.b
        self.screen.erase()
        lines, cols = self.screen.getmaxyx()
        if lines < _MIN_LINES or cols < _MIN_COLS:
            self.put(0, 0, f"terminal too small ({cols}x{lines}); need {_MIN_COLS}x{_MIN_LINES} · q quits", cols)
            self.screen.refresh()
            return 1
        body = lines - 2
        left = max(24, min(48, cols * 2 // 5))
        right = cols - left - 1
        shown = f"{len(b.visible)}/{len(b.events)}" if b.filter else f"{len(b.events)}"
        # The path goes last: a narrow terminal cuts it, not the counts or the filter.
        title = f" rewind · {shown} steps · " + (f"filter: {b.filter} · " if b.filter else "") + b.title
        self.put(0, 0, title.ljust(cols), cols, curses.A_REVERSE)
        # list pane
        if b.selected < b.top:
            b.top = b.selected
        elif b.selected >= b.top + body:
            b.top = b.selected - body + 1
        for row in range(body):
            position = b.top + row
            if position >= len(b.visible):
                break
            index = b.visible[position]
            attr = 0 if b.events[index].ok else self.error_attr
            if position == b.selected:
                attr |= curses.A_BOLD if b.expanded else curses.A_REVERSE
            self.put(1 + row, 0, b.label(index, selected=position == b.selected).ljust(left), left, attr)
        try:
            self.screen.vline(1, left, curses.ACS_VLINE, body)
        except curses.error:
            pass
        # detail pane
        detail = b.detail(right - 1)
        b.detail_top = max(0, min(b.detail_top, max(0, len(detail) - body)))
        for row, text in enumerate(detail[b.detail_top : b.detail_top + body]):
            attr = self.dim_attr if text.startswith("── ") else 0
            self.put(1 + row, left + 2, text, right - 1, attr)
        # status line
        if b.prompt is not None:
            self.put(lines - 1, 0, ("/" + b.prompt).ljust(cols), cols)
            try:
                curses.curs_set(1)
                self.screen.move(lines - 1, min(cols - 1, 1 + len(b.prompt)))
            except curses.error:
                pass
        else:
            try:
                curses.curs_set(0)
            except curses.error:
                pass
            help_text = HELP_EXPANDED if b.expanded else HELP
            if b.expanded and len(detail) > body:
                help_text += f"  [{b.detail_top + 1}-{min(len(detail), b.detail_top + body)}/{len(detail)}]"
            self.put(lines - 1, 0, help_text.ljust(cols), cols - 1, curses.A_REVERSE)
        self.screen.refresh()
        return body


def run(trace: Trace, *, title: str | None = None, color: bool = True) -> None:
    """Open the browser on the current terminal until the user quits.

    Raises ``TuiUnavailable`` when curses cannot start here.
    """
    try:
        import curses
    except ImportError as exc:  # e.g. Windows without windows-curses
        raise TuiUnavailable(f"curses is not available ({exc})") from None
    os.environ.setdefault("ESCDELAY", "25")  # a bare Esc should not lag behind arrow-key sequences
    try:
        locale.setlocale(locale.LC_ALL, "")
    except locale.Error:
        pass
    browser = Browser(trace, title=title)
    started = False

    def main(screen: Any) -> None:
        nonlocal started
        started = True
        _loop(browser, curses, screen, color)

    try:
        curses.wrapper(main)
    except curses.error as exc:
        if started:
            raise
        raise TuiUnavailable(f"the terminal cannot run the full-screen browser ({exc})") from None


def _loop(browser: Browser, curses: Any, screen: Any, color: bool) -> None:
    screen.keypad(True)
    view = _Screen(browser, curses, screen, color)
    while True:
        page = view.draw()
        ch = screen.getch()
        if ch == curses.KEY_RESIZE:
            curses.update_lines_cols()
            continue
        if ch == -1:
            continue
        if not browser.key(ch, max(1, page - 1), curses):
            return


__all__ = ["Browser", "TuiUnavailable", "run"]
