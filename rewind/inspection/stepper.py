"""The line stepper: walk a trace one step at a time with typed commands.

It reads plain lines, so it works where the full-screen browser cannot: in a pipe, in
CI, over a dumb terminal, or without curses. Commands::

    n  (or Enter)   next step          p        previous step
    j STEP          jump to a step     f        the whole step as pretty JSON
    q  (or EOF)     quit               h / ?    help
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from rewind.data.escape import inert
from rewind.storage.trace import Event, Trace

from .preview import clip, compact, error_line, model_of, outcome, pretty, stream_chunks

HELP = "n/Enter next · p previous · j STEP jump · f full JSON · q quit · h help"


def _plain(text: str, **_: object) -> str:
    return text


class LineStepper:
    """Interactive step-through of a trace over a text stream pair."""

    def __init__(
        self,
        trace: Trace,
        *,
        stdin: TextIO,
        stdout: TextIO,
        style: Callable[..., str] = _plain,
        width: int = 100,
    ) -> None:
        self.trace = trace
        self.events: list[Event] = list(trace.events)
        self.stdin = stdin
        self.stdout = stdout
        self.style = style
        self.width = max(40, width)
        self.position = 0
        try:
            self._echoes = bool(stdin.isatty())
        except (AttributeError, ValueError):
            self._echoes = False

    def run(self) -> None:
        """Show the first step, then obey commands until ``q`` or end of input."""
        if not self.events:
            self._say("the trace has no steps")
            return
        self._say(f"{len(self.events)} steps · {HELP}")
        self._show(full=False)
        while True:
            self.stdout.write(self.style(f"[{self._where()}] n/p/j STEP/q> ", bold=True))
            self.stdout.flush()
            line = self.stdin.readline()
            if not line:  # end of input: a pipe ran dry or the user pressed Ctrl-D
                self._say("")
                return
            if not self._echoes:
                # Commands piped in are not echoed by a terminal: echo them, so a log reads like a session.
                self._say(line.rstrip("\r\n"))
            if not self.handle(line.strip()):
                return

    def handle(self, command: str) -> bool:
        """Apply one command; ``False`` means quit."""
        word, _, argument = command.partition(" ")
        word = word.lower()
        if word in ("", "n", "next"):
            self._move(self.position + 1)
        elif word in ("p", "prev", "previous"):
            self._move(self.position - 1)
        elif word in ("j", "jump"):
            self._jump(argument.strip())
        elif word.isdigit() or (word.startswith("j") and word[1:].isdigit()):
            self._jump(word.lstrip("j"))
        elif word in ("f", "full"):
            self._show(full=True)
        elif word in ("q", "quit", "exit"):
            return False
        elif word in ("h", "help", "?"):
            self._say(HELP)
        else:
            self._say(f"unknown command {command!r}; {HELP}")
        return True

    # -- navigation -------------------------------------------------------------------
    def _move(self, position: int) -> None:
        if position >= len(self.events):
            self._say("(end of trace; p goes back, q quits)")
            return
        if position < 0:
            self._say("(start of trace)")
            return
        self.position = position
        self._show(full=False)

    def _jump(self, target: str) -> None:
        first, last = self.events[0].seq, self.events[-1].seq
        try:
            seq = int(target)
        except ValueError:
            self._say(f"j needs a step number, e.g. j {first}")
            return
        for index, event in enumerate(self.events):
            if event.seq == seq:
                self.position = index
                self._show(full=False)
                return
        self._say(f"no step {seq} (steps run {first}–{last})")

    def _where(self) -> str:
        return f"step {self.events[self.position].seq} · {self.position + 1}/{len(self.events)}"

    # -- display ----------------------------------------------------------------------
    def _show(self, *, full: bool) -> None:
        event = self.events[self.position]
        status = "ok" if event.ok else "ERROR"
        # Recorded text is shown inert (compact, pretty and outcome are already).
        head = f"── step {event.seq} ── {inert(event.kind)} '{clip(event.name, None)}' · {status}"
        head += f" · {event.duration_ms:.1f} ms"
        model = model_of(event) if event.kind == "llm" else None
        if model:
            head += f" · {clip(model, 80)}"
        if not event.live:
            head += " · served from the source trace"
        self._say(self.style(head, bold=True, fg=None if event.ok else "red"))
        self._block("request", event.request, full)
        if not event.ok:
            self._say(f"error:    {error_line(event.error)}")
            if full:
                self._block("error", event.error, full)
        elif event.response is None and event.get("stream") is not None:
            chunks = stream_chunks(event)
            self._say(f"stream:   {len(chunks)} chunks · {outcome(event, self.width - 10)}")
            if full:
                self._block("stream", event.get("stream"), full)
        else:
            if event.kind == "llm" and not full:
                self._say(f"answer:   {outcome(event, self.width - 10)}")
            self._block("response", event.response, full)

    def _block(self, label: str, value: object, full: bool) -> None:
        if not full:
            self._say(f"{label + ':':<9} {compact(value, self.width * 2)}")
            return
        self._say(f"{label}:")
        for line in pretty(value).splitlines():
            self._say("  " + line)

    def _say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()


def step_through(
    trace: Trace, *, stdin: TextIO, stdout: TextIO, style: Callable[..., str] = _plain, width: int = 100
) -> None:
    """Run the line stepper on ``trace`` until the user quits or input ends."""
    LineStepper(trace, stdin=stdin, stdout=stdout, style=style, width=width).run()
