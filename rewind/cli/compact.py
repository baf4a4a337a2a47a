"""``rewind compact``: gzip a finished trace for archival; every reader opens it transparently."""

from __future__ import annotations

import os

import click

from rewind.data.escape import inert
from rewind.storage.archive import compact
from rewind.storage.trace import Trace

from ._common import CliError, get_output, open_trace


def _size(path: str) -> str:
    size = float(os.path.getsize(path))
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _default_output(source: str) -> str:
    if source.endswith(".gz"):
        raise CliError(f"{source}: already a gzip archive; pass -o PATH to recompress it elsewhere")
    return source + ".gz"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


@click.command("compact")
@click.argument("trace_path", metavar="TRACE")
@click.option("-o", "--output", "output_path", metavar="PATH", help="Where to write the archive [default: TRACE.gz].")
@click.option("-f", "--force", is_flag=True, help="Overwrite PATH when it already exists.")
@click.pass_context
def command(ctx: click.Context, trace_path: str, output_path: str | None, force: bool) -> None:
    """Gzip a finished TRACE into an archive (repeated-history traces shrink 10-50x).

    The archive loads everywhere a trace does (show, stats, diff, replay, fork);
    gzip has no random access, so it is read eagerly. A blob directory beside the
    trace (TRACE.blobs/) is copied beside the archive. Do not compact a trace that is
    still being recorded: live recording stays uncompressed for crash safety.
    """
    out = get_output(ctx)
    destination = output_path or _default_output(trace_path)
    if os.path.exists(destination) and _same_file(trace_path, destination):
        raise CliError(f"{destination}: the archive would overwrite its own source; pass a different -o PATH")
    if os.path.exists(destination) and not force:
        raise CliError(f"{destination}: already exists; pass --force to overwrite it or -o another PATH")
    trace = open_trace(trace_path, eager=True)  # validates every line before archiving
    try:
        # The archive holds the trace's exact bytes, so a v2 trace keeps its blob
        # references; archive.compact carries the blob folder along when needed.
        compact(trace_path, destination)
    except OSError as exc:
        reason = exc.strerror or exc
        raise CliError(f"{destination}: cannot write the archive ({reason}); check the directory") from None
    check = Trace.load(destination)
    if len(check.events) != len(trace.events):  # pragma: no cover - a defect in the writer
        raise CliError(f"{destination}: the archive reads back {len(check.events)} of {len(trace.events)} steps")
    before, after = os.path.getsize(trace_path), os.path.getsize(destination)
    ratio = f"{before / after:.1f}x smaller" if after else "empty"
    out.echo(
        f"compacted {inert(trace_path)} ({_size(trace_path)}) -> {inert(destination)} ({_size(destination)}, "
        f"{ratio}), {len(trace.events)} steps"
    )
    if trace.torn_tail:
        out.echo("note: the source ended in a torn line (its recorder was killed); the archive keeps complete steps")
