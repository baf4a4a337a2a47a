"""``rewind show``: one line per step, previews with ``-v``, a stepper with ``-i``."""

from __future__ import annotations

import sys

import click

from rewind.data.escape import inert, inert_value
from rewind.engine.nothing_recorded import incomplete_reason
from rewind.inspection.preview import clip, compact, model_of, outcome, request_preview
from rewind.inspection.provenance import edit_provenance, hybrid_provenance
from rewind.storage.trace import Event, Trace

from ._common import Output, get_output, is_terminal, open_trace, width


def _duration(ms: float) -> str:
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def header_lines(trace: Trace, out: Output) -> list[str]:
    """The trace's identity: path, size, when and by what it was recorded, meta, provenance."""
    head = trace.header
    # Everything from the file (and the file name itself) is shown inert.
    parts = [f"{len(trace.events)} steps"]
    if head.get("created"):
        parts.append(f"recorded {compact(head['created'], 40)}")
    if head.get("rewind_version"):
        parts.append(f"rewind {compact(head['rewind_version'], 40)}")
    parts.append(f"format v{trace.version}")
    lines = [out.style(inert_value(trace.path), bold=True) + ": " + ", ".join(parts)]
    meta = head.get("meta")
    if isinstance(meta, dict) and meta:
        lines.append("meta: " + ", ".join(f"{clip(k, 40)}={compact(v, 80)}" for k, v in meta.items()))
    elif meta:
        lines.append(f"meta: {compact(meta, 160)}")
    forked = head.get("forked_from")
    if isinstance(forked, dict):
        if forked.get("refresh") is True:
            # A refresh has no fixed fork point: it went live where the run first diverged.
            lines.append(f"refreshed from {compact(forked.get('path'), 200)} (kept the steps marked ↺)")
        else:
            lines.append(f"forked from {compact(forked.get('path'), 200)} at step {compact(forked.get('at'), 20)}")
            edit = edit_provenance(trace)
            if edit:
                lines.append(inert(edit))
    hybrid = hybrid_provenance(trace)
    if hybrid:
        lines.append(inert("this run " + hybrid))
    incomplete = incomplete_reason(head)
    if incomplete is not None:
        lines.append(out.style("incomplete:", fg="red") + f" {compact(incomplete, 300)}; re-record the run")
    if trace.torn_tail:
        lines.append(
            out.style("note:", fg="yellow")
            + " the last line is torn (the recording process was killed mid-write); complete steps shown"
        )
    return lines


def step_line(
    event: Event, *, seq_width: int, name_width: int, columns: int, out: Output, hybrid: bool = False
) -> str:
    status = out.style("ok ", fg="green") if event.ok else out.style("ERR", fg="red", bold=True)
    head = f"{'#' + str(event.seq):>{seq_width}}  {inert(event.kind):<6} {clip(event.name, name_width):<{name_width}}  "
    timing = f"{_duration(event.duration_ms):>9}"
    # In a hybrid run live steps are marked too: served and live interleave.
    prefix = ("live " if hybrid else "") if event.live else "↺ "
    plain_len = len(head) + 3 + 2 + len(timing) + 2 + len(prefix)
    room = max(20, columns - plain_len)
    if event.kind == "llm":
        model = model_of(event)
        summary = f"[{model}] {outcome(event)}" if model else outcome(event)
    elif event.ok:
        summary = f"{compact(event.request, 40)} → {outcome(event)}"
    else:
        summary = outcome(event)
    return f"{head}{status}  {timing}  {prefix}{clip(summary, room)}"


def render_listing(trace: Trace, *, verbose: bool, out: Output, columns: int) -> str:
    lines = header_lines(trace, out)
    events = trace.events
    if not events:
        lines.append("(no steps recorded)")
        return "\n".join(lines)
    hybrid = isinstance(trace.header.get("hybrid_of"), dict)
    if hybrid:
        lines.append("↺ = served from the recording by identity, live = ran live in this hybrid replay")
    elif any(not e.live for e in events):
        lines.append("↺ = served from the source trace when this fork was recorded")
    lines.append("")
    seq_width = len(str(events[-1].seq)) + 1
    name_width = min(32, max(len(e.name) for e in events))
    indent = " " * (seq_width + 2)
    for event in events:
        line = step_line(event, seq_width=seq_width, name_width=name_width, columns=columns, out=out, hybrid=hybrid)
        lines.append(line)
        if verbose:
            room = max(40, columns - len(indent) - 10) * 2
            lines.append(f"{indent}request:  {request_preview(event.request, room)}")
            if event.ok:
                response = event.response
                if response is None and event.get("stream") is not None:
                    lines.append(f"{indent}stream:   {outcome(event, room)}")
                else:
                    lines.append(f"{indent}response: {compact(response, room)}")
            else:
                lines.append(f"{indent}error:    {compact(event.error, room)}")
    return "\n".join(lines)


def _interactive(trace: Trace, tui: bool | None, out: Output) -> None:
    if not trace.events:
        click.echo(f"{inert_value(trace.path)}: the trace has no steps")
        return
    terminal = is_terminal(sys.stdin) and is_terminal(sys.stdout)
    want_tui = tui if tui is not None else terminal
    # Without a terminal (a pipe, CI) or without curses, even --tui degrades to the line
    # stepper, and says so: the same steps, one command per line.
    if want_tui and not terminal:
        click.echo("rewind: --tui needs an interactive terminal (stdin and stdout); using the line stepper", err=True)
    elif want_tui:
        from .tui import TuiUnavailable, run

        try:
            run(trace, title=trace.path, color=out.color)  # the browser shows the title inert
            return
        except TuiUnavailable as exc:
            click.echo(f"rewind: {exc}; using the line stepper", err=True)
    from rewind.inspection.stepper import step_through

    step_through(trace, stdin=sys.stdin, stdout=sys.stdout, style=out.style, width=width())


@click.command("show")
@click.argument("trace_path", metavar="TRACE")
@click.option("-v", "--verbose", is_flag=True, help="Add request and response previews under each step.")
@click.option(
    "-i",
    "--interactive",
    is_flag=True,
    help="Step through the trace: full-screen on a terminal, a line stepper otherwise.",
)
@click.option(
    "--tui/--no-tui",
    default=None,
    help="--tui opens the full-screen browser (implies -i); --no-tui makes -i use the line stepper.",
)
@click.pass_context
def command(ctx: click.Context, trace_path: str, verbose: bool, interactive: bool, tui: bool | None) -> None:
    """List every step of TRACE: sequence, kind, call name, outcome, duration.

    \b
    Line stepper commands (-i in a pipe or with --no-tui):
      n / Enter  next     p  previous     j STEP  jump     f  full JSON     q  quit
    Full-screen keys (-i on a terminal, or --tui):
      j/k or arrows move, g/G top/bottom, PgUp/PgDn page, / filter,
      Enter expands the step into pretty JSON, q quits.
    """
    out = get_output(ctx)
    trace = open_trace(trace_path)
    if interactive or tui:
        _interactive(trace, tui, out)
        return
    out.emit(render_listing(trace, verbose=verbose, out=out, columns=width()))
