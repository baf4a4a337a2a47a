"""``rewind fork TRACE --at N [--edit step.json] -- CMD``: edit and continue, no code changes."""

from __future__ import annotations

import os
from typing import Any

import click

from rewind.inspection import summary
from rewind.what_if import THEN, EditError, edited_event, load_edit_file

from ._common import CliError, open_trace, same_path
from ._options import match_option, payload_function_options
from ._run import CHILD_CONTEXT, check_callable_spec, check_command, finish, run_child
from ._runs import check_runs_options, child_attempt, runs_options, verdict


@click.command("fork", context_settings=CHILD_CONTEXT)
@click.argument("trace_path", metavar="TRACE")
@click.option("--at", "at", type=click.IntRange(min=0), required=True, metavar="STEP", help="The step to fork at.")
@click.option(
    "--edit",
    "edit_path",
    metavar="FILE",
    help="Serve STEP with this JSON instead of its recorded outcome: a new response, "
    '{"error": {...}}, or a whole step (a line of the trace).',
)
@click.option(
    "--then",
    type=click.Choice(THEN),
    default=None,
    help="With --edit: after the edited step run live (default), or replay recorded steps while the "
    "requests still match them.",
)
@match_option(("strict", "ordered"), "How the replayed steps are matched.")
@click.option("--save-as", metavar="PATH", help="Write the forked run (served steps + edit + live steps) here.")
@payload_function_options(live_steps_only=True)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing of ours when the run succeeds.")
@runs_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
@click.pass_context
def command(
    ctx: click.Context,
    trace_path: str,
    at: int,
    edit_path: str | None,
    then: str | None,
    match: str,
    save_as: str | None,
    redact: str | None,
    normalize: str | None,
    quiet: bool,
    command: tuple[str, ...],
    **many: Any,
) -> None:
    """Run CMD with steps before STEP served from TRACE, then live.

    With --edit FILE, STEP is served too, with the outcome in FILE ("what if the
    model had called the other tool at step 7?"); the rest runs live, or with
    --then replay keeps being served from TRACE while the requests still match.
    The saved fork (--save-as) records the edit in its header: `rewind show` and
    `rewind diff` name it.

    With --runs K the live part runs K times (-j J at a time), each run saved
    in --runs-dir; the runs are grouped by how they ended (exit status, last
    line of output, the step where they part from the most common run) and a
    success rate is printed with its 95% Wilson interval (--expect-exit,
    --expect-output, --expect; default: exit status 0).

    \b
    Exit status: CMD's own; 1 when CMD succeeded but the replayed prefix
    diverged; 2 bad usage or input (a missing step, an edit that is not JSON).
    With --runs: 0 once the verdict is printed, whatever it says.
    """
    check_runs_options(many)
    if many["runs"] is not None and save_as is not None:
        raise CliError("--save-as names one run; with --runs each run is saved in --runs-dir")
    argv = check_command(command)
    if then is not None and edit_path is None:
        raise CliError("--then applies to --edit FILE (a plain fork always runs live)")
    check_callable_spec("--redact", redact)
    check_callable_spec("--normalize", normalize)
    trace = open_trace(trace_path)
    steps = len(trace.events)
    if save_as is not None and os.path.exists(save_as) and same_path(save_as, trace_path):
        raise CliError(f"--save-as {save_as} is the trace being forked; pass a different PATH")
    session = {"REWIND_REPLAY": os.path.abspath(trace_path), "REWIND_MATCH": match}
    if edit_path is not None:
        if at >= steps:
            last = f"steps 0-{steps - 1}" if steps else "no steps"
            raise CliError(f"--at {at} --edit: {trace_path} has {steps} steps ({last}); there is no step {at} to edit")
        try:
            edited_event(trace.events[at], load_edit_file(edit_path))  # fail here, not in the child
        except EditError as exc:
            raise CliError(str(exc)) from None
        session["REWIND_EDIT"] = os.path.abspath(edit_path)
        session["REWIND_THEN"] = then or "live"
        live_from = at + 1
    else:
        if at > steps:
            raise CliError(f"--at {at} is past the end of {trace_path}, which has {steps} steps")
        live_from = at
    session["REWIND_FORK_AT"] = str(at)
    if save_as is not None:
        session["REWIND_SAVE_AS"] = os.path.abspath(save_as)
    if redact:
        session["REWIND_REDACT"] = redact
    if normalize:
        session["REWIND_NORMALIZE"] = normalize

    if many["runs"] is not None:
        where = f"forked at step {at}" + (f" with the edit in {edit_path}" if edit_path is not None else "")
        attempt = child_attempt(argv, lambda trace: {**session, "REWIND_SAVE_AS": str(trace.absolute())})
        verdict(ctx, attempt, trace_path=trace_path, where=where, **many)

    def report(status: dict[str, Any]) -> str:
        line = summary.forked(status, trace_path, live_from, save_as)
        if edit_path is not None:
            line += f"; step {at} was served the edit in {edit_path}"
        return line

    finish(ctx, run_child(argv, session), summary=report, quiet=quiet)
