"""``rewind record TRACE -- CMD``: record an unmodified program's run, no code changes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from rewind.engine import nothing_recorded
from rewind.inspection import summary
from rewind.storage import scratch

from ._common import CliError, trace_destination
from ._options import payload_function_options
from ._run import CHILD_CONTEXT, Outcome, check_callable_spec, check_command, finish, run_child


def _meta(raw: str) -> str:
    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise CliError(f'--meta must be a JSON object, e.g. \'{{"ticket": "T-1"}}\' ({exc})') from None
    if not isinstance(meta, dict):
        raise CliError(f'--meta must be a JSON object, e.g. \'{{"ticket": "T-1"}}\', not {type(meta).__name__}')
    return json.dumps(meta)


@click.command("record", context_settings=CHILD_CONTEXT)
@click.argument("trace_path", metavar="TRACE")
@click.option("--meta", metavar="JSON", help='A JSON object stored in the trace header, e.g. \'{"ticket": "T-1"}\'.')
@click.option(
    "--externalize",
    type=click.IntRange(min=1),
    metavar="BYTES",
    help="Store payload values of at least BYTES once, content-addressed, under TRACE.blobs/.",
)
@payload_function_options(live_steps_only=False)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing TRACE even when CMD fails (by default a failed run keeps it).",
)
@click.option(
    "--proxy",
    "through_proxy",
    is_flag=True,
    help="CMD is any program (Node, Go, Java ...): record it through `rewind proxy`, every SDK's base-URL "
    "variable pointed at the proxy (docs/proxy.md).",
)
@click.option(
    "--upstream", "upstreams", multiple=True, metavar="PROVIDER=URL", help="With --proxy: where a provider's API is."
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing of ours when the run succeeds.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
@click.pass_context
def command(
    ctx: click.Context,
    trace_path: str,
    meta: str | None,
    externalize: int | None,
    redact: str | None,
    normalize: str | None,
    force: bool,
    through_proxy: bool,
    upstreams: tuple[str, ...],
    quiet: bool,
    command: tuple[str, ...],
) -> None:
    """Run CMD and record every LLM, tool and memory call it makes to TRACE.

    CMD is an unmodified Python program: the provider SDKs are instrumented in
    it, and functions decorated with @rewind.llm/tool/memory are recorded too.
    An existing TRACE is replaced only when CMD succeeds (exit status 0): the
    recording of a failed run goes to TRACE's name with .failed before .rewind,
    unless --force. Replay the run offline with `rewind replay TRACE -- CMD`.

    \b
    Exit status: CMD's own; 2 bad usage or input; 1 when CMD succeeded but
    no Python process under it opened the session.
    """
    argv = check_command(command)
    path = trace_destination(trace_path)
    # A good trace must never be lost to a failed re-recording: record beside it first.
    previous = os.path.exists(path)
    target = str(scratch.scratch_path(Path(path))) if previous else path
    check_callable_spec("--redact", redact)
    check_callable_spec("--normalize", normalize)
    session = {"REWIND_RECORD": target}
    if meta is not None:
        session["REWIND_META"] = _meta(meta)
    if externalize is not None:
        session["REWIND_EXTERNALIZE"] = str(externalize)
    if redact:
        session["REWIND_REDACT"] = redact
    if normalize:
        session["REWIND_NORMALIZE"] = normalize
    if through_proxy:
        from .proxy import proxy_status, run_through_proxy

        returncode, proxy = run_through_proxy(
            target,
            argv,
            mode="record",
            upstreams=upstreams,
            redact=redact,
            normalize=normalize,
            meta=json.loads(session["REWIND_META"]) if "REWIND_META" in session else None,
            externalize=externalize,
        )
        outcome = Outcome(returncode, proxy_status(proxy))
    elif upstreams:
        raise CliError("--upstream applies to --proxy")
    else:
        outcome = _failed_before_first_call(Path(target), run_child(argv, session))
    kept = _settle(Path(target), Path(path), outcome, previous=previous, force=force)
    kept_shown = str(scratch.failed_path(Path(trace_path))) if kept else None

    def report(status: dict[str, Any]) -> str:
        if kept_shown is None:
            return summary.recorded(status, trace_path)
        failures = summary.failed_steps(status.get("failed") or [])
        return (
            f"rewind: the program failed (exit status {outcome.returncode}), so {trace_path} keeps its previous "
            f"recording; this run's {summary.plural(int(status.get('recorded') or 0), 'step')}"
            f"{f' ({failures})' if failures else ''} went to {kept_shown}. Pass --force to replace {trace_path} anyway"
        )

    finish(ctx, outcome, summary=report, quiet=quiet and kept_shown is None)


def _failed_before_first_call(target: Path, outcome: Outcome) -> Outcome:
    """A program that failed before its first call leaves a trace marked incomplete, never one
    that reads as a finished run without calls (its own exit hook marks it when it can; a
    program killed or ended by os._exit/sys.exit is marked here)."""
    status = outcome.status or {}
    if outcome.returncode == 0 or status.get("recorded") or status.get("incomplete"):
        return outcome
    cause = f"it exited with status {outcome.returncode}"
    if not target.exists() or not nothing_recorded.mark_incomplete(str(target), cause):
        return outcome
    reason = f"{nothing_recorded.FAILED_BEFORE_FIRST_CALL} ({cause})"
    if outcome.status is None:
        click.echo(f"rewind: {reason}; the trace it left is marked incomplete", err=True)
        return outcome
    return Outcome(outcome.returncode, {**status, "incomplete": reason, "nothing": None})


def _settle(scratch_file: Path, path: Path, outcome: Outcome, *, previous: bool, force: bool) -> bool:
    """Put the new recording in place, or keep the previous trace (True: kept it)."""
    if not previous:
        return False
    if not scratch_file.exists():
        return False  # nothing recorded (no session opened): the previous trace is untouched
    succeeded = outcome.returncode == 0 and not (outcome.status or {}).get("error")
    if succeeded or force:
        scratch.promote(scratch_file, path)
        return False
    scratch.promote(scratch_file, scratch.failed_path(path))
    return True
