"""``rewind diff``: where did two runs diverge? Exit 0 same, 1 diverged, 2 bad input."""

from __future__ import annotations

import os

import click

from rewind.inspection.diff import diff_traces, render_text

from ._common import CliError, get_output, open_trace

EXIT_SAME = 0
EXIT_DIVERGED = 1


@click.command("diff")
@click.argument("a_path", metavar="A")
@click.argument("b_path", metavar="B")
@click.option("-v", "--verbose", is_flag=True, help="Show full request/outcome diffs for every differing step.")
@click.option(
    "-c",
    "--context",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    metavar="N",
    help="Equal steps to show around each difference.",
)
@click.option("--exact", is_flag=True, help="Compare byte for byte: do not ignore per-run ids, timestamps and usage.")
@click.option(
    "--html",
    "html_path",
    metavar="FILE",
    help="Also write the diff as one self-contained HTML file (runs side by side, first divergence highlighted).",
)
@click.option("--inline", is_flag=True, help="With --html: embed every payload and image whole.")
@click.pass_context
def command(
    ctx: click.Context,
    a_path: str,
    b_path: str,
    verbose: bool,
    context: int,
    exact: bool,
    html_path: str | None,
    inline: bool,
) -> None:
    """Align run A and run B step by step and point at the first divergence.

    Steps are paired by a longest common subsequence over (kind, call name); each
    row is equal, changed, deleted (only in A) or inserted (only in B). Unless
    --exact, values that differ every run (response and tool-call ids, timestamps,
    token usage) are ignored when comparing.

    \b
    Exit status: 0 the runs are the same, 1 they diverged, 2 bad usage or input.
    """
    out = get_output(ctx)
    trace_a = open_trace(a_path)
    trace_b = open_trace(b_path)
    if inline and html_path is None:
        raise CliError("--inline only applies to --html FILE; add --html diff.html")
    diff = diff_traces(trace_a, trace_b, exact=exact)
    out.emit(render_text(diff, context=context, verbose=verbose, color=out.color))
    if html_path is not None:
        from rewind.report import write_diff_report

        from .report import describe

        if os.path.isdir(html_path):
            raise CliError(f"{html_path}: is a directory; pass the HTML file to write with --html")
        try:
            report = write_diff_report(trace_a, trace_b, html_path, diff=diff, inline=inline)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        out.echo(describe(html_path, report.size, f"{len(diff.entries)} aligned rows", report.note()), err=True)
    ctx.exit(EXIT_DIVERGED if diff.diverged else EXIT_SAME)
