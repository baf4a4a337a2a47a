"""``--runs K``: what ``rewind fork`` and ``rewind replay`` share to run a program K times and judge it.

``runs_options`` adds the options; ``child_attempt`` turns "run this program in this
session" into one attempt of ``rewind.what_if.runs.run_many`` (the program's stdout and
stderr go to files beside its trace, so parallel runs do not interleave); ``verdict``
runs them and prints the distribution, as text, JSON or an HTML page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from rewind.data.escape import inert
from rewind.what_if.runs import (
    Attempt,
    RunResult,
    RunsError,
    criterion,
    judge,
    prepare_folder,
    run_many,
    run_name,
    save_verdict,
)

from ._common import CliError
from ._run import EXIT_SESSION_FAILED, run_child

F = Callable[..., Any]

_OPTIONS: list[Callable[[F], F]] = [
    click.option(
        "--runs",
        type=click.IntRange(min=1),
        metavar="K",
        help="Run the live part K times and print how the runs ended and a success rate.",
    ),
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        metavar="J",
        help="With --runs: J at a time.",
    ),
    click.option(
        "--runs-dir",
        metavar="DIR",
        help="With --runs: save each run here (run-001.rewind, its .out and .err); default TRACE.runs/.",
    ),
    click.option("--expect-exit", type=int, metavar="CODE", help="With --runs: a run succeeds when CMD exits CODE."),
    click.option("--expect-output", metavar="REGEX", help="With --runs: a run succeeds when its stdout matches REGEX."),
    click.option(
        "--expect",
        "expect_spec",
        metavar="MODULE:FUNCTION",
        help="With --runs: a run succeeds when FUNCTION(trace) is true (given the run's Trace).",
    ),
    click.option("--json", "as_json", is_flag=True, help="With --runs: print the verdict as JSON."),
    click.option(
        "--html",
        "html_path",
        metavar="FILE",
        help="With --runs: also write the verdict as an HTML page (reports and diffs beside it).",
    ),
]


def runs_options(function: F) -> F:
    """The ``--runs`` options, added to a command."""
    for option in reversed(_OPTIONS):
        function = option(function)
    return function


def check_runs_options(options: Mapping[str, Any]) -> None:
    """Options that only mean something with ``--runs`` are refused without it."""
    if options.get("runs") is not None:
        return
    names = {
        "jobs": "-j",
        "runs_dir": "--runs-dir",
        "expect_exit": "--expect-exit",
        "expect_output": "--expect-output",
        "expect_spec": "--expect",
        "as_json": "--json",
        "html_path": "--html",
    }
    for key, flag in names.items():
        value = options.get(key)
        if value not in (None, False) and not (key == "jobs" and value == 1):
            raise CliError(f"{flag} applies to --runs K; add --runs")


def child_attempt(argv: Sequence[str], session: Callable[[Path], Mapping[str, str]]) -> Attempt:
    """One attempt: run ``argv`` in the session ``session(trace_path)`` describes."""

    def attempt(index: int, trace: Path) -> RunResult:
        out_path = trace.with_name(f"{run_name(index)}.out")
        err_path = trace.with_name(f"{run_name(index)}.err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            outcome = run_child(argv, session(trace), stdout=out, stderr=err)
        output = out_path.read_text(encoding="utf-8", errors="replace")
        status = outcome.status or {}
        error = status.get("error") if isinstance(status.get("error"), str) else None
        if outcome.status is None and outcome.returncode == 0:
            error = "the command finished without opening a rewind session"
        exit_status = outcome.returncode or (EXIT_SESSION_FAILED if error else 0)
        return RunResult(index, str(trace) if trace.exists() else None, exit_status, output, error or None)

    return attempt


def default_folder(trace_path: str) -> str:
    """``golden.rewind`` -> ``golden.runs`` beside it."""
    name = os.path.basename(trace_path)
    for suffix in (".rewind.gz", ".rewind"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return os.path.join(os.path.dirname(trace_path), f"{name}.runs")


def verdict(
    ctx: click.Context,
    attempt: Attempt,
    *,
    trace_path: str,
    where: str,
    runs: int,
    jobs: int,
    runs_dir: str | None,
    expect_exit: int | None,
    expect_output: str | None,
    expect_spec: str | None,
    as_json: bool,
    html_path: str | None,
) -> None:
    """Run ``attempt`` ``runs`` times, print the verdict, exit 0 (or 2 on bad input)."""
    folder = runs_dir or default_folder(trace_path)
    if html_path is not None and os.path.isdir(html_path):
        raise CliError(f"{html_path}: is a directory; pass the HTML file to write with --html")
    try:
        expect = _import_callable("--expect", expect_spec) if expect_spec else None
        success, described = criterion(expect_exit=expect_exit, expect_output=expect_output, expect=expect)
        prepare_folder(folder)
        results = run_many(attempt, runs=runs, folder=folder, jobs=jobs)
        outcome = judge(results, success, described=described, source=trace_path, folder=folder, where=where)
    except RunsError as exc:
        raise CliError(str(exc)) from None
    data = outcome.to_dict()
    save_verdict(outcome)
    if html_path is not None:
        from rewind.report.verdict import write_verdict_report

        write_verdict_report(outcome, html_path)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        # The final outputs are the program's own text: shown, never interpreted by the terminal.
        click.echo(inert("\n".join(outcome.lines()), keep_newlines=True))
        if html_path is not None:
            click.echo(f"rewind: wrote {html_path}", err=True)
    ctx.exit(0)


def _import_callable(option: str, spec: str) -> Callable[..., Any]:
    from rewind.setup.environment import EnvironmentConfigError, import_callable

    try:
        return import_callable(spec, option)
    except EnvironmentConfigError as exc:
        raise CliError(str(exc)) from None
