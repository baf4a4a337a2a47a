"""``rewind mutate TRACE -- CMD``: replay a run once per injected fault and tabulate what CMD did.

Each run is CMD as a child process, replaying TRACE with one fault served at one step
(``REWIND_FAULT``). CMD's answer is its standard output and exit status: the unmutated
replay runs first and gives the reference. The network is blocked in every run (unless
``--live`` or ``--network allow``): a fault handler that falls back to a raw HTTP call is
reported, not let out. CMD's output is compared by its digest and kept only in part
(``_capture``), so a program printing gigabytes costs no more memory than one printing a line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click

from rewind.inspection.preview import clip
from rewind.what_if.faults import FAULTS, FaultError
from rewind.what_if.mutate import OUTCOMES, Mutation, Result, plan, render_table

from ._capture import Captured, capture
from ._common import CliError, open_trace
from ._options import match_option
from ._run import CHILD_CONTEXT, _read_status, check_command, child_environment

#: Some mutation crashed or hung.
EXIT_NOT_RESILIENT = 1


@dataclass(frozen=True)
class _ChildRun:
    finished: bool
    returncode: int
    #: The start of CMD's standard output, and what identifies all of it.
    stdout: str
    stderr: str
    status: dict[str, Any] | None
    seconds: float
    stdout_digest: str = ""

    @property
    def network_blocked(self) -> list[str]:
        blocked = (self.status or {}).get("network_blocked")
        return [str(b) for b in blocked] if isinstance(blocked, list) else []


def _run(argv: Sequence[str], session: Mapping[str, str], timeout: float) -> _ChildRun:
    folder = tempfile.mkdtemp(prefix="rewind-mutate-")
    status_file = os.path.join(folder, "status.json")
    env = child_environment({**session, "REWIND_QUIET": "1"}, status_file)
    started = time.perf_counter()
    try:
        try:
            # Its own process group, so a hung run is stopped with everything it started.
            child = subprocess.Popen(
                list(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
        except OSError as exc:
            raise CliError(f"{argv[0]}: cannot run it ({exc.strerror or exc})") from None
        out, err = Captured.head(), Captured.tail()
        finished = capture(child, out, err, timeout)
        if not finished:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            capture(child, out, err, None)
        seconds = time.perf_counter() - started
        return _ChildRun(
            finished, child.returncode, out.text(), err.text(), _read_status(status_file), seconds, out.digest()
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")


def crash_of(stderr: str) -> tuple[str, str] | None:
    """(exception class, message) of the last Python traceback in ``stderr``."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    if not starts:
        return None
    # The exception line is the first one after the traceback's indented frames.
    for line in lines[starts[-1] + 1 :]:
        if line and not line[0].isspace():
            found = _EXCEPTION_LINE.match(line)
            if found:
                return found.group(1), found.group(2) or ""
    return None


def classify(mutation: Mutation, run: _ChildRun, reference: _ChildRun, timeout: float) -> Result:
    if not run.finished:
        return Result(mutation, "hung", f"no exit after {timeout:g}s (stopped)", seconds=run.seconds)
    if run.network_blocked:
        # It tried to reach the world: whatever it printed after, the fault was not survived offline.
        return Result(
            mutation,
            "crashed",
            f"NetworkBlockedError: tried to reach {', '.join(run.network_blocked[:3])} (the network is blocked)",
            error="rewind.engine.network_guard.NetworkBlockedError",
            seconds=run.seconds,
        )
    divergence = (run.status or {}).get("divergence")
    if isinstance(divergence, dict):
        return Result(
            mutation,
            "diverged",
            f"at step {divergence.get('step')}: the program took a path the recording does not hold",
            error="rewind.errors.DivergenceError",
            seconds=run.seconds,
        )
    if run.returncode != 0:
        crash = crash_of(run.stderr)
        if crash is not None:
            name, message = crash
            return Result(mutation, "crashed", clip(f"{name}: {message}", 120), error=name, seconds=run.seconds)
        return Result(mutation, "crashed", f"exit status {run.returncode}", seconds=run.seconds)
    if run.stdout_digest == reference.stdout_digest:
        return Result(mutation, "same", answer=run.stdout, seconds=run.seconds)
    return Result(
        mutation, "different", clip(run.stdout.strip() or "(no output)", 120), answer=run.stdout, seconds=run.seconds
    )


@click.command("mutate", context_settings=CHILD_CONTEXT)
@click.argument("trace_path", metavar="TRACE")
@click.option(
    "-f",
    "--fault",
    "faults",
    multiple=True,
    type=click.Choice(tuple(FAULTS)),
    metavar="FAULT",
    help=f"Only this fault (repeatable): {', '.join(FAULTS)}.",
)
@click.option(
    "-s",
    "--step",
    "steps",
    multiple=True,
    type=click.IntRange(min=0),
    metavar="STEP",
    help="Only this step (repeatable).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Fixes where streams are cut and which runs --max-runs keeps.",
)
@click.option(
    "--max-runs", type=click.IntRange(min=1), metavar="N", help="Run at most N mutations (sampled by --seed)."
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="A run taking longer is stopped and reported as hung.",
)
@click.option(
    "--retry-after",
    default="1",
    show_default=True,
    metavar="SECONDS",
    help="The retry-after header of injected 429/529 errors.",
)
@click.option(
    "--live", is_flag=True, help="Let calls the recording does not hold go live instead of reporting 'diverged'."
)
@match_option(("strict", "ordered"), "How the replayed steps are matched.")
@click.option(
    "--network",
    type=click.Choice(("allow", "block")),
    envvar="REWIND_NETWORK",
    help="block (the default without --live; REWIND_NETWORK): a connection CMD makes to a host other than "
    "loopback (or --allow-host) fails at once and the run is reported crashed.",
)
@click.option(
    "--allow-host", "allow_hosts", multiple=True, metavar="HOST", help="With --network block: keep HOST reachable."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
def command(
    trace_path: str,
    faults: tuple[str, ...],
    steps: tuple[int, ...],
    seed: int,
    max_runs: int | None,
    timeout: float,
    retry_after: str,
    live: bool,
    match: str,
    network: str | None,
    allow_hosts: tuple[str, ...],
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run CMD in replays of TRACE, one fault injected at one step each; report what CMD did.

    Faults arrive as the SDK's own exceptions and objects (openai.RateLimitError
    with retry-after, anthropic.OverloadedError, a stream cut mid-way, a tool that
    raises …), so CMD's real recovery code runs. CMD's answer is its standard
    output: the unmutated replay runs first as the reference. Each run is
    reported as: same (recovered, same answer), different (recovered, another
    answer), crashed (and the exception), hung (stopped after --timeout), or
    diverged (CMD took a path the recording does not hold; --live lets it go on).

    \b
    Exit status: 0 every run recovered or diverged; 1 some run crashed or hung;
    2 bad usage or input, or the unmutated replay itself fails.
    """
    argv = check_command(command)
    trace = open_trace(trace_path)
    try:
        mutations = plan(
            trace, faults=faults or None, steps=steps or None, seed=seed, max_runs=max_runs, retry_after=retry_after
        )
    except (FaultError, ValueError) as exc:
        raise CliError(str(exc)) from None
    base = {"REWIND_REPLAY": os.path.abspath(trace_path), "REWIND_MATCH": match}
    base.update(_network(network, allow_hosts, live=live))
    reference = _run(argv, base, timeout)
    if not reference.finished or reference.returncode != 0 or (reference.status or {}).get("error"):
        why = (
            f"did not finish within {timeout:g}s"
            if not reference.finished
            else (reference.status or {}).get("error") or _last_line(reference.stderr) or f"exit {reference.returncode}"
        )
        raise CliError(f"the unmutated replay of {trace_path} fails ({why}); mutations would mean nothing")
    results: list[Result] = []
    for mutation in mutations:
        spec = mutation.spec(live=live)
        run = _run(argv, {**base, "REWIND_FAULT": json.dumps(spec)}, timeout)
        results.append(classify(mutation, run, reference, timeout))
    counts = {outcome: sum(1 for r in results if r.outcome == outcome) for outcome in OUTCOMES}
    if as_json:
        report = {
            "trace": trace_path,
            "seed": seed,
            "baseline": {"stdout": reference.stdout, "exit": reference.returncode},
            "counts": counts,
            "results": [r.to_dict() for r in results],
        }
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(render_table(results, counts, header=f"{trace_path} (seed {seed})"))
    if counts["crashed"] or counts["hung"]:
        raise click.exceptions.Exit(EXIT_NOT_RESILIENT)


def _network(network: str | None, allow_hosts: tuple[str, ...], *, live: bool) -> dict[str, str]:
    """The runs' network variables: blocked unless --live or --network allow."""
    if network is None:
        network = "allow" if live else "block"
    hosts = list(allow_hosts) or [h.strip() for h in os.environ.get("REWIND_ALLOW_HOSTS", "").split(",") if h.strip()]
    if network != "block":
        if allow_hosts:
            raise CliError("--allow-host applies to --network block")
        return {}
    return {"REWIND_NETWORK": "block", **({"REWIND_ALLOW_HOSTS": ",".join(hosts)} if hosts else {})}


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return clip(lines[-1], 200) if lines else ""
