"""``rewind report``: one self-contained HTML file showing a trace."""

from __future__ import annotations

import os

import click

from rewind.inspection.accounting import ModelPrice, load_prices

from ._common import CliError, cannot_write, get_output, open_trace
from .stats import _parse_prices

_SUFFIXES = (".rewind.gz", ".rewind", ".jsonl.gz", ".jsonl", ".gz")


def default_output(trace_path: str) -> str:
    """``run.rewind`` → ``run.html`` (beside the trace)."""
    for suffix in _SUFFIXES:
        if trace_path.endswith(suffix) and len(trace_path) > len(suffix):
            return trace_path[: -len(suffix)] + ".html"
    return trace_path + ".html"


def describe(path: str, size: int, what: str, note: str | None) -> str:
    """The line a command prints after writing a report."""
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"
    line = f"wrote {path} ({shown}, {what}); open it in a browser, it needs no network"
    return f"{line}\nnote: {note}" if note else line


def price_table(prices: dict[str, ModelPrice], prices_file: str | None) -> dict[str, ModelPrice]:
    """``--prices-file`` merged with ``--price`` (which wins), as ``rewind stats`` reads them."""
    table: dict[str, ModelPrice] = {}
    if prices_file is not None:
        try:
            table.update(load_prices(prices_file))
        except ValueError as exc:
            raise CliError(f"{exc}; fix the file or drop --prices-file") from None
    table.update(prices)
    return table


@click.command("report")
@click.argument("trace_path", metavar="TRACE")
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Where to write the HTML (default: TRACE with .html instead of .rewind).",
)
@click.option(
    "--inline", is_flag=True, help="Embed every payload and image whole (the file may get as big as the trace)."
)
@click.option(
    "--max-size",
    type=click.FloatRange(min=0.1),
    default=32.0,
    show_default=True,
    metavar="MB",
    help="Budget for step bodies and images; steps past it are listed without their bodies.",
)
@click.option("--title", metavar="TEXT", help="Heading of the report (default: the trace's path).")
@click.option(
    "--price",
    "prices",
    multiple=True,
    metavar="MODEL=IN/OUT",
    callback=_parse_prices,
    help="Price a model in USD per 1M input/output tokens, e.g. gpt-4o=2.5/10 (repeatable).",
)
@click.option("--prices-file", metavar="FILE", help="JSON prices merged over the built-in table (as in rewind stats).")
@click.pass_context
def command(
    ctx: click.Context,
    trace_path: str,
    output: str | None,
    inline: bool,
    max_size: float,
    title: str | None,
    prices: dict[str, ModelPrice],
    prices_file: str | None,
) -> None:
    """Write TRACE as one self-contained HTML file: a timeline, a searchable step list,
    each step's request and response (chat messages as a conversation), tokens and
    estimated cost.

    The file carries its own script and styles and fetches nothing: attach it to a bug
    report. Strings longer than 10,000 characters in big steps and images over 512 KB
    are cut with a note, and steps past --max-size are listed without their bodies;
    --inline embeds everything.
    """
    from rewind.report import Limits, write_report

    out = get_output(ctx)
    table = price_table(prices, prices_file)
    trace = open_trace(trace_path)
    target = output or default_output(trace_path)
    if os.path.isdir(target):
        raise CliError(f"{target}: is a directory; pass the HTML file to write with -o")
    limits = Limits(max_bytes=int(max_size * 1024 * 1024))
    try:
        report = write_report(trace, target, inline=inline, limits=limits, prices=table or None, title=title)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise cannot_write(target, exc) or exc from None
    out.echo(describe(target, report.size, f"{report.steps} steps", report.note()))
