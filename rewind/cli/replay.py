"""``rewind replay TRACE -- CMD``: replay a recorded run offline, or fork it, no code changes."""

from __future__ import annotations

import os
from typing import Any

import click

from rewind.engine.policy import ReplayPolicy
from rewind.inspection import summary

from ._common import CliError, open_trace, same_path
from ._options import match_option, payload_function_options
from ._run import CHILD_CONTEXT, Outcome, check_callable_spec, check_command, finish, run_child
from ._runs import check_runs_options, child_attempt, runs_options, verdict

STRATEGIES = ("strict", "ordered", "fuzzy", "parallel")


@click.command("replay", context_settings=CHILD_CONTEXT)
@click.argument("trace_path", metavar="TRACE")
@match_option(STRATEGIES, "How incoming calls are matched to recorded steps (parallel: concurrent agents).")
@click.option(
    "--require-full-consumption",
    is_flag=True,
    help="Fail when the run ends with recorded steps never served.",
)
@click.option(
    "--tolerate-drift",
    is_flag=True,
    help="With --match ordered: succeed even when every served step drifted from its recording.",
)
@click.option(
    "--break-at",
    type=click.IntRange(min=0),
    metavar="STEP",
    help="Pause in the debugger (breakpoint()) when STEP is served.",
)
@click.option(
    "--fork-at",
    type=click.IntRange(min=0),
    metavar="STEP",
    help="Serve steps before STEP from TRACE, then let the program run live.",
)
@click.option(
    "--save-as", metavar="PATH", help="With --fork-at or --live: write the new run (served + live steps) here."
)
@click.option(
    "--live",
    "live",
    multiple=True,
    metavar="CALLS",
    help="Hybrid replay: these calls run live, the rest are served by identity "
    "(llm, tool, memory, tool:NAME or a bare NAME; repeat or comma-separate).",
)
@click.option(
    "--never-live",
    "never_live",
    multiple=True,
    metavar="CALLS",
    help="Calls that must never run for real: with no recorded answer the run stops (NeverLiveError).",
)
@click.option(
    "--on-missing",
    type=click.Choice(("error", "live")),
    default="error",
    show_default=True,
    help="Hybrid replay: a served call the recording has no answer for fails, or runs live.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="RECORDED=LIVE",
    help="Hybrid replay: live LLM calls of the instrumented SDKs use model LIVE where RECORDED was asked.",
)
@payload_function_options(live_steps_only=True)
@click.option(
    "--network",
    type=click.Choice(("allow", "block")),
    default="allow",
    show_default=True,
    help="block: any connection CMD makes to a host other than loopback (or --allow-host) fails at once, "
    "naming the host and the code that tried.",
)
@click.option(
    "--allow-host", "allow_hosts", multiple=True, metavar="HOST", help="With --network block: keep HOST reachable."
)
@click.option(
    "--proxy",
    "through_proxy",
    is_flag=True,
    help="CMD is any program (Node, Go, Java ...): answer it from TRACE through `rewind proxy` (docs/proxy.md).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing of ours when the run succeeds.")
@runs_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
@click.pass_context
def command(
    ctx: click.Context,
    trace_path: str,
    match: str,
    require_full_consumption: bool,
    tolerate_drift: bool,
    break_at: int | None,
    fork_at: int | None,
    save_as: str | None,
    live: tuple[str, ...],
    never_live: tuple[str, ...],
    on_missing: str,
    models: tuple[str, ...],
    redact: str | None,
    normalize: str | None,
    network: str,
    allow_hosts: tuple[str, ...],
    through_proxy: bool,
    quiet: bool,
    command: tuple[str, ...],
    **many: Any,
) -> None:
    """Run CMD offline, every recorded call answered from TRACE.

    CMD is the program that was recorded (`rewind record TRACE -- CMD`), unmodified.
    A call that does not match the recording raises DivergenceError in CMD; even
    if CMD catches it, this command prints the divergence and fails. With
    --fork-at STEP, steps before STEP are replayed and the rest runs live;
    with --live CALLS, those calls run live and the rest is served (a hybrid
    replay). Add --runs K to run the live part K times and judge the runs
    (see `rewind fork --help`).

    \b
    Exit status: CMD's own; 1 when CMD succeeded but the replay diverged (or
    left steps unserved with --require-full-consumption, or, with --match
    ordered, drifted on every step it served); 2 bad usage or input.
    """
    check_runs_options(many)
    if many["runs"] is not None and save_as is not None:
        raise CliError("--save-as names one run; with --runs each run is saved in --runs-dir")
    argv = check_command(command)
    try:
        policy = ReplayPolicy.of(
            live=",".join(live) or None,
            never_live=",".join(never_live) or None,
            on_missing=on_missing,
            model_map=list(models),
        )
    except ValueError as exc:
        # The policy speaks of replay()'s arguments; name this command's options.
        message = str(exc).replace("never_live=", "--never-live").replace("live=", "--live")
        raise CliError(message.replace("model_map:", "--model:")) from None
    if many["runs"] is not None and fork_at is None and not policy.live:
        raise CliError(
            "--runs needs a live part to run many times: --fork-at STEP, or --live CALLS (a hybrid replay)"
        )
    if policy.hybrid and fork_at is not None:
        raise CliError("--live and --on-missing live apply to a plain replay: a fork runs everything after STEP live")
    if policy.model_map and not policy.live:
        raise CliError("--model rewrites live LLM calls: pass --live llm (or the calls to run live) too")
    if save_as is not None and fork_at is None and not policy.hybrid:
        raise CliError("--save-as needs --fork-at STEP (the step where the run goes live) or --live CALLS")
    if fork_at is not None and require_full_consumption:
        raise CliError("--require-full-consumption applies to a plain replay, not to --fork-at")
    if tolerate_drift and (match != "ordered" or fork_at is not None):
        raise CliError("--tolerate-drift applies to a plain replay with --match ordered")
    if fork_at is not None and break_at is not None:
        raise CliError("--break-at applies to a plain replay, not to --fork-at")
    check_callable_spec("--redact", redact)
    check_callable_spec("--normalize", normalize)
    trace = open_trace(trace_path)
    steps = len(trace.events)
    if fork_at is not None and fork_at > steps:
        raise CliError(f"--fork-at {fork_at} is past the end of {trace_path}, which has {steps} steps")
    if break_at is not None and not any(event.seq == break_at for event in trace.events):
        raise CliError(f"--break-at {break_at}: {trace_path} has no step {break_at} (steps 0-{steps - 1})")
    if network == "block" and fork_at is not None:
        raise CliError("--network block applies to a plain replay: a fork's live steps need the network")
    if allow_hosts and network != "block":
        raise CliError("--allow-host applies to --network block")
    if save_as is not None and os.path.exists(save_as) and same_path(save_as, trace_path):
        raise CliError(f"--save-as {save_as} is the trace being replayed; pass a different PATH")

    if through_proxy:
        if (
            fork_at is not None
            or break_at is not None
            or require_full_consumption
            or network == "block"
            or policy.hybrid
            or save_as is not None
            or many["runs"] is not None
        ):
            raise CliError(
                "--proxy replays a whole run: --fork-at, --break-at, --require-full-consumption, --network, "
                "--live, --save-as and --runs apply to Python programs"
            )
        from .proxy import proxy_status, run_through_proxy

        returncode, proxy = run_through_proxy(trace_path, argv, mode="replay", match=match, normalize=normalize)
        outcome = Outcome(returncode, proxy_status(proxy))
        finish(ctx, outcome, summary=lambda status: summary.replayed(status, trace_path, steps), quiet=quiet)
        return
    if policy.hybrid and match in ("strict", "ordered"):
        if ctx.get_parameter_source("match") is not click.core.ParameterSource.DEFAULT:
            raise CliError(f"--live serves the rest of the run by identity: use --match parallel or fuzzy, not {match}")
        match = "parallel"  # the live side shifts every position
    session = {"REWIND_REPLAY": os.path.abspath(trace_path), "REWIND_MATCH": match, **policy.environment()}
    if require_full_consumption:
        session["REWIND_REQUIRE_FULL_CONSUMPTION"] = "1"
    if tolerate_drift:
        session["REWIND_TOLERATE_DRIFT"] = "1"
    if break_at is not None:
        session["REWIND_BREAK_AT"] = str(break_at)
    if fork_at is not None:
        session["REWIND_FORK_AT"] = str(fork_at)
    if save_as is not None:
        session["REWIND_SAVE_AS"] = os.path.abspath(save_as)
    if redact:
        session["REWIND_REDACT"] = redact
    if normalize:
        session["REWIND_NORMALIZE"] = normalize
    if network == "block":
        session["REWIND_NETWORK"] = "block"
        if allow_hosts:
            session["REWIND_ALLOW_HOSTS"] = ",".join(allow_hosts)

    if many["runs"] is not None:
        attempt = child_attempt(argv, lambda trace: {**session, "REWIND_SAVE_AS": str(trace.absolute())})
        where = f"forked at step {fork_at}" if fork_at is not None else f"with {', '.join(live)} live"
        verdict(ctx, attempt, trace_path=trace_path, where=where, **many)

    def report(status: dict[str, Any]) -> str:
        if fork_at is None:
            return summary.replayed(status, trace_path, steps)
        return summary.forked(status, trace_path, fork_at, save_as)

    finish(ctx, run_child(argv, session), summary=report, quiet=quiet)
