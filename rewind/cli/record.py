"""``rewind record TRACE -- CMD``: record an unmodified program's run, no code changes."""

from __future__ import annotations

import json
import os

import click

from ._common import CliError
from ._run import CHILD_CONTEXT, check_callable_spec, check_command, finish, run_child


def _meta(raw: str) -> str:
    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise CliError(f'--meta must be a JSON object, e.g. \'{{"ticket": "T-1"}}\' ({exc})') from None
    if not isinstance(meta, dict):
        raise CliError(f'--meta must be a JSON object, e.g. \'{{"ticket": "T-1"}}\', not {type(meta).__name__}')
    return json.dumps(meta)


def _destination(trace_path: str) -> str:
    path = os.path.abspath(trace_path)
    if os.path.isdir(path):
        raise CliError(f"{trace_path}: is a directory; pass the trace file to write")
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise CliError(f"{trace_path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise CliError(f"{trace_path}: cannot write in {folder}; check its permissions")
    return path


@click.command("record", context_settings=CHILD_CONTEXT)
@click.argument("trace_path", metavar="TRACE")
@click.option("--meta", metavar="JSON", help='A JSON object stored in the trace header, e.g. \'{"ticket": "T-1"}\'.')
@click.option(
    "--externalize",
    type=click.IntRange(min=1),
    metavar="BYTES",
    help="Store payload values of at least BYTES once, content-addressed, under TRACE.blobs/.",
)
@click.option("--redact", metavar="MODULE:FUNCTION", help="Scrub every stored payload with this function.")
@click.option("--normalize", metavar="MODULE:FUNCTION", help="Drop volatile fields from each call's identity.")
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
    quiet: bool,
    command: tuple[str, ...],
) -> None:
    """Run CMD and record every LLM, tool and memory call it makes to TRACE.

    CMD is an unmodified Python program: the openai and anthropic SDKs are
    instrumented in it, and functions decorated with @rewind.llm/tool/memory are
    recorded too. TRACE is overwritten. Replay the run offline with
    `rewind replay TRACE -- CMD`.

    \b
    Exit status: CMD's own; 2 bad usage or input; 1 when CMD succeeded but
    no Python process under it opened the session.
    """
    argv = check_command(command)
    path = _destination(trace_path)
    check_callable_spec("--redact", redact)
    check_callable_spec("--normalize", normalize)
    session = {"REWIND_RECORD": path}
    if meta is not None:
        session["REWIND_META"] = _meta(meta)
    if externalize is not None:
        session["REWIND_EXTERNALIZE"] = str(externalize)
    if redact:
        session["REWIND_REDACT"] = redact
    if normalize:
        session["REWIND_NORMALIZE"] = normalize
    outcome = run_child(argv, session)
    finish(
        ctx,
        outcome,
        summary=lambda status: f"rewind: recorded {status.get('recorded', 0)} step(s) to {trace_path}",
        quiet=quiet,
    )
