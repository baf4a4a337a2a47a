"""What every ``rewind`` command shares: opening traces, one-line errors, colour and paging."""

from __future__ import annotations

import os
import shutil
import sys
import zlib
from dataclasses import dataclass
from typing import IO, Any

import click

from rewind.data.escape import inert
from rewind.errors import TraceFormatError
from rewind.storage.trace import Trace

#: Exit status for bad usage or unreadable input (click uses 2 for usage errors too).
EXIT_INPUT = 2
#: Exit status for a bug in rewind itself, kept apart from the documented codes.
EXIT_INTERNAL = 3


class CliError(click.ClickException):
    """A one-line ``rewind: error: …`` on stderr and exit status 2. Never a traceback."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    def show(self, file: IO[Any] | None = None) -> None:
        # The message may quote a file name or recorded text: shown inert.
        click.echo(f"rewind: error: {inert(self.format_message())}", file=file or sys.stderr)


# Appended to a TraceFormatError when the message does not already say what to do.
_HINTS = (
    ("not a rewind trace", "pass a file written by rewind.record() (.rewind, or .rewind.gz from rewind compact)"),
    ("corrupt event line", "the file was damaged or edited by hand; restore it from a copy or re-record the run"),
    ("corrupt gzip", "the archive is damaged; compact the original trace again"),
    ("empty file", "the recording wrote nothing; re-record the run"),
    ("is a directory", "pass the trace file itself"),
    ("invalid format version", "the header was edited or damaged; re-record the run"),
)


def explain(exc: Exception) -> str:
    """The one-line message for an error reading input, with what to do about it."""
    message = str(exc)
    if isinstance(exc, TraceFormatError):
        lowered = message.lower()
        for needle, hint in _HINTS:
            if needle in lowered:
                return f"{message}; {hint}"
        return message
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "input"
        reason = exc.strerror or exc.__class__.__name__
        return f"{where}: cannot read ({reason}); check the path and its permissions"
    return message


def cannot_write(target: str, exc: OSError) -> CliError | None:
    """The one-line error for a failure writing ``target`` (or its temporary file), else ``None``.

    The command group reports any other ``OSError`` as a failure to read its input.
    """
    if exc.filename is None:
        return None
    written, failed = os.path.abspath(target), os.path.abspath(os.fsdecode(exc.filename))
    beside = os.path.dirname(failed) == os.path.dirname(written) and os.path.basename(written) in failed
    if not (beside or written.startswith(failed + os.sep)):  # the file, its temporary twin, a folder on the way
        return None
    reason = exc.strerror or exc.__class__.__name__
    return CliError(f"{target}: cannot write ({reason}); check that its folder exists and is writable")


def open_trace(path: str, *, eager: bool = False) -> Trace:
    """``Trace.open`` (or ``Trace.load``) for a command-line argument, failing as a one-line ``CliError``."""
    try:
        return Trace.load(path) if eager else Trace.open(path)
    except (TraceFormatError, OSError) as exc:
        raise CliError(explain(exc)) from None
    except zlib.error as exc:
        # A gzip archive whose deflate stream is damaged (the header checks passed).
        raise CliError(explain(TraceFormatError(f"corrupt gzip archive ({exc})", path=path))) from None


# -- output ----------------------------------------------------------------------------


def _no_color_env() -> bool:
    # https://no-color.org: any non-empty value disables colour.
    return bool(os.environ.get("NO_COLOR"))


@dataclass(frozen=True)
class Output:
    """Where and how a command prints: colour on a terminal unless NO_COLOR, paging when long."""

    color: bool
    pager: bool

    @classmethod
    def resolve(cls, color: str = "auto", pager: bool = True) -> Output:
        if color == "always":
            use_color = True
        elif color == "never":
            use_color = False
        else:
            use_color = is_terminal(sys.stdout) and not _no_color_env()
        return cls(color=use_color, pager=pager)

    def style(self, text: str, **styles: Any) -> str:
        return click.style(text, **styles) if self.color else text

    def echo(self, text: str = "", *, err: bool = False) -> None:
        click.echo(text, err=err, color=self.color)

    def emit(self, text: str) -> None:
        """Print a whole report, through the pager when it does not fit the terminal."""
        if self.pager and is_terminal(sys.stdout) and is_terminal(sys.stdin):
            height = shutil.get_terminal_size().lines
            if text.count("\n") + 1 >= height:
                click.echo_via_pager(text, color=self.color)
                return
        self.echo(text)


def is_terminal(stream: Any) -> bool:
    """A real terminal: a tty whose TERM is not ``dumb``."""
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


def width() -> int:
    """Columns to fit one-line output into: the terminal's, or a generous fixed width in a pipe."""
    if is_terminal(sys.stdout):
        return max(40, shutil.get_terminal_size().columns)
    return 160


def get_output(ctx: click.Context) -> Output:
    """The ``Output`` the group resolved from ``--color``/``--no-pager``."""
    obj = ctx.find_object(Output)
    return obj if obj is not None else Output.resolve()


def trace_destination(trace_path: str) -> str:
    """The absolute path a trace will be written to, refused now if it cannot be."""
    path = os.path.abspath(trace_path)
    if os.path.isdir(path):
        raise CliError(f"{trace_path}: is a directory; pass the trace file to write")
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise CliError(f"{trace_path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise CliError(f"{trace_path}: cannot write in {folder}; check its permissions")
    return path


def same_path(a: str, b: str) -> bool:
    """Whether two paths name one file (by identity when both exist, else by absolute path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
