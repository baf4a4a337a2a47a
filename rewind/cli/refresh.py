"""``rewind refresh TRACE -- CMD``: bring a golden up to date, re-recording only from where it diverged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from rewind.storage import scratch
from rewind.storage.trace import Trace
from rewind.what_if.refresh import summarize

from ._common import CliError, open_trace
from ._options import match_option, payload_function_options
from ._run import CHILD_CONTEXT, EXIT_SESSION_FAILED, check_callable_spec, check_command, run_child, say


@click.command("refresh", context_settings=CHILD_CONTEXT)
@click.argument("trace_path", metavar="TRACE")
@click.option("--save-as", metavar="PATH", help="Write the refreshed run here and keep TRACE as it is.")
@click.option(
    "--html",
    "html_path",
    metavar="FILE",
    help="Also write the diff of the old run against the refreshed one as an HTML file.",
)
@match_option(("strict", "ordered"), "How the kept steps are matched.")
@payload_function_options(live_steps_only=True)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing of ours when the refresh succeeds.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
@click.pass_context
def command(
    ctx: click.Context,
    trace_path: str,
    save_as: str | None,
    html_path: str | None,
    match: str,
    redact: str | None,
    normalize: str | None,
    quiet: bool,
    command: tuple[str, ...],
) -> None:
    """Replay TRACE with CMD until the first divergence, then record the rest live.

    Every step before the divergence is kept from TRACE (its calls are not paid
    again, its tools not run again); the steps from there on are recorded anew.
    TRACE is replaced, atomically, only once CMD succeeded; with --save-as it is
    kept and the refreshed run goes to PATH. A run that replays the whole of TRACE
    changes nothing.

    \b
    Exit status: CMD's own (TRACE untouched when it failed); 1 when the session
    failed; 2 bad usage or input.
    """
    argv = check_command(command)
    check_callable_spec("--redact", redact)
    check_callable_spec("--normalize", normalize)
    golden = open_trace(trace_path, eager=True)
    target = Path(os.path.abspath(save_as if save_as is not None else trace_path))
    if target.is_dir():
        raise CliError(f"{save_as or trace_path}: is a directory; pass the trace file to write")
    if html_path is not None and os.path.isdir(html_path):
        raise CliError(f"{html_path}: is a directory; pass the HTML file to write with --html")
    if html_path is not None and os.path.abspath(html_path) in (str(target), os.path.abspath(trace_path)):
        raise CliError(f"--html {html_path} would overwrite a trace; pass another file")
    work = scratch.scratch_path(target)
    session = {
        "REWIND_REPLAY": os.path.abspath(trace_path),
        "REWIND_REFRESH": "1",
        "REWIND_SAVE_AS": str(work),
        "REWIND_MATCH": match,
    }
    if redact:
        session["REWIND_REDACT"] = redact
    if normalize:
        session["REWIND_NORMALIZE"] = normalize
    try:
        outcome = run_child(argv, session)
        status = outcome.status
        failure = _failure(outcome.returncode, status, trace_path)
        if failure is not None:
            say(failure)
            ctx.exit(outcome.returncode or EXIT_SESSION_FAILED)
        assert status is not None
        refreshed = Trace.load(work)
        divergence = status.get("live_because") if isinstance(status.get("live_because"), dict) else None
        report = summarize(golden, refreshed, shown=trace_path, divergence=divergence)
        if report.changed or save_as is not None:
            if html_path is not None and report.changed:
                _write_diff(golden, refreshed, html_path)
            scratch.promote(work, target)
        if not quiet:
            for line in report.lines(save_as if report.changed or save_as is not None else None):
                say(line)
        ctx.exit(0)
    finally:
        scratch.discard(work)


def _failure(returncode: int, status: dict[str, Any] | None, shown: str) -> str | None:
    """Why the refreshed run must not replace the golden, or ``None`` when it may."""
    kept = f"{shown} is unchanged"
    if status is None:
        if returncode == 0:
            return (
                "rewind: error: the command finished without opening a rewind session; run a Python program "
                f"(python agent.py) whose interpreter has agent-rewind-otel installed; {kept}"
            )
        return f"rewind: the command failed (exit status {returncode}) before rewind could refresh; {kept}"
    error = status.get("error")
    if isinstance(error, str) and error:
        return f"{error if error.startswith('rewind:') else 'rewind: ' + error}\nrewind: refresh failed; {kept}"
    if returncode != 0:
        return f"rewind: the refreshed run failed (exit status {returncode}); {kept}"
    return None


def _write_diff(golden: Trace, refreshed: Trace, html_path: str) -> None:
    from rewind.report import write_diff_report

    try:
        write_diff_report(golden, refreshed, html_path)
    except ValueError as exc:
        raise CliError(str(exc)) from None
