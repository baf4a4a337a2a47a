"""``rewind check``: can this trace be replayed, step by step, and if not, why."""

from __future__ import annotations

import click

from rewind.data.escape import inert, inert_json
from rewind.errors import TraceFormatError
from rewind.importing import check_trace

from ._common import CliError, explain, get_output


@click.command("check")
@click.argument("trace_path", metavar="TRACE")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (for CI).")
@click.option("--strict", is_flag=True, help="Fail on degraded steps too (served, but weaker than a recording).")
@click.pass_context
def command(ctx: click.Context, trace_path: str, as_json: bool, strict: bool) -> None:
    """Say, per step of TRACE (recorded or imported), whether a replay can serve it.

    \b
    replayable      served as recorded
    degraded        served, with a caveat (tool definitions missing from telemetry,
                    an error class this environment cannot import)
    not replayable  content missing (capture was off), content truncated (attribute
                    length limits), attributes dropped, a blob missing, a response
                    the SDK cannot revive

    \b
    Exit status: 0 every step is replayable (--strict: and none degraded), 1 otherwise,
    2 TRACE unreadable.
    """
    out = get_output(ctx)
    try:
        report = check_trace(trace_path)
    except (TraceFormatError, OSError) as exc:
        raise CliError(explain(exc)) from None
    if as_json:
        out.echo(inert_json(report.to_dict()))
    else:
        lines = []
        for step in report.steps:
            colour = {"replayable": "green", "degraded": "yellow"}.get(step.status, "red")
            origin = " (imported)" if step.imported else ""
            lines.append(
                f"step {step.seq:>3}  {inert(step.kind):<6} {inert(step.name)}{origin}  "
                + out.style(step.status, fg=colour)
            )
            for problem in step.problems:
                lines.append(f"           {problem.code}: {inert(problem.detail)}")
        counts = report.to_dict()["counts"]
        summary = ", ".join(f"{n} {status}" for status, n in counts.items()) or "no steps"
        verdict = "replayable" if report.replayable else "NOT fully replayable"
        if report.incomplete is not None:
            lines.append(out.style("incomplete:", fg="red") + f" {inert(report.incomplete)}; re-record the run")
        lines.append(f"{inert(trace_path)}: {len(report.steps)} step(s), {summary}: {verdict}")
        out.emit("\n".join(lines))
    failed = not report.replayable or (strict and not report.clean)
    if failed:
        ctx.exit(1)
