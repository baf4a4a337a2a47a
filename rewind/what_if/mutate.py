"""``mutate``: replay a recorded run many times, one fault at one step each, and say what the agent did.

    report = rewind.mutate("golden.rewind", run_agent, faults=["rate_limit", "tool_error"])
    print(report.table())

The unmutated replay runs first: its answer is the reference. Each mutation then runs
the agent (a callable; its return value is "the answer") in a replay that serves the
fault once at its step, and is classified:

=============  ===============================================================
``same``       recovered: finished with the reference answer
``different``  recovered: finished with another answer
``crashed``    raised (the exception class is reported)
``hung``       did not finish within ``timeout`` seconds
``diverged``   asked for something the recording does not hold (a path the
               original run never took); ``live=True`` lets such calls go live
=============  ===============================================================

The network is blocked in every run (``network="block"``, unless ``live=True``): a fault
handler that falls back to a raw HTTP call is reported ``crashed`` with the
``NetworkBlockedError``, even when the agent caught it, instead of reaching the world.

The same trace and seed give the same mutations, in the same order.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rewind.data.escape import inert
from rewind.engine.network_guard import NetworkBlockedError, check_network
from rewind.errors import DivergenceError, ReplayedError, RewindError
from rewind.inspection.preview import clip
from rewind.storage.trace import PathLike, Trace

from .faults import FAULTS, FaultOptions, fault_named, fault_session, step_rng

if TYPE_CHECKING:
    from rewind.engine.session import Session

OUTCOMES = ("same", "different", "crashed", "hung", "diverged")
_UNSET: Any = object()


class MutateError(RewindError):
    """Mutation testing cannot start: the recorded run itself does not replay cleanly."""


@dataclass(frozen=True)
class Mutation:
    """One fault at one recorded step of one trace."""

    trace: str
    index: int
    step: int
    kind: str
    name: str
    fault: str
    seed: int = 0
    retry_after: str = "1"

    @property
    def id(self) -> str:
        """``step3-rate_limit``: a test id."""
        return f"step{self.step}-{self.fault}"

    def spec(self, *, live: bool = False) -> dict[str, Any]:
        """What ``REWIND_FAULT`` carries to a child process."""
        spec: dict[str, Any] = {"index": self.index, "fault": self.fault, "seed": self.seed}
        if self.retry_after != "1":
            spec["retry_after"] = self.retry_after
        if live:
            spec["live"] = True
        return spec

    def session(
        self, *, live: bool = False, match: str = "strict", network: str = "allow", allow_hosts: Sequence[str] = ()
    ) -> Session:
        """The replay session injecting this fault (not yet entered)."""
        return fault_session(self.trace, self.spec(live=live), match=match, network=network, allow_hosts=allow_hosts)

    def run(
        self, agent: Callable[[], Any], *, timeout: float = 30.0, expected: Any = _UNSET, live: bool = False
    ) -> Result:
        """Run ``agent`` under this mutation; ``expected`` defaults to the unmutated replay's answer."""
        if expected is _UNSET:
            expected = baseline(self.trace, agent, timeout=timeout)
        return run_mutation(self, agent, expected=expected, timeout=timeout, live=live)


@dataclass(frozen=True)
class Result:
    """What the agent did under one mutation."""

    mutation: Mutation
    outcome: str
    detail: str = ""
    answer: Any = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def recovered(self) -> bool:
        return self.outcome in ("same", "different")

    def describe(self) -> str:
        text = {
            "same": "recovered, same answer",
            "different": "recovered, different answer",
            "crashed": "crashed",
            "hung": "hung",
            "diverged": "diverged",
        }[self.outcome]
        return f"{text}: {self.detail}" if self.detail else text

    def to_dict(self) -> dict[str, Any]:
        m = self.mutation
        return {
            "step": m.step,
            "kind": m.kind,
            "name": m.name,
            "fault": m.fault,
            "outcome": self.outcome,
            "detail": self.detail,
            "error": self.error,
            "answer": _jsonable(self.answer),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class MutationReport:
    """Every mutation's result, in plan order."""

    trace: str
    seed: int
    baseline: Any
    results: list[Result] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {outcome: sum(1 for r in self.results if r.outcome == outcome) for outcome in OUTCOMES}

    @property
    def failed(self) -> list[Result]:
        """The mutations the agent did not survive (crashed or hung)."""
        return [r for r in self.results if r.outcome in ("crashed", "hung")]

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "seed": self.seed,
            "baseline": _jsonable(self.baseline),
            "counts": self.counts(),
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def table(self) -> str:
        return render_table(self.results, self.counts(), header=f"{self.trace} (seed {self.seed})")


# --------------------------------------------------------------------------- the plan


def plan(
    trace: PathLike | Trace,
    *,
    faults: Iterable[str] | None = None,
    steps: Iterable[int] | None = None,
    seed: int = 0,
    max_runs: int | None = None,
    retry_after: str = "1",
) -> list[Mutation]:
    """Every (step, fault) pair that applies, in step order; ``max_runs`` samples them by ``seed``."""
    source = trace if isinstance(trace, Trace) else Trace.open(trace)
    names = list(faults) if faults is not None else list(FAULTS)
    for name in names:
        fault_named(name)  # an unknown name fails before anything runs
    wanted = set(steps) if steps is not None else None
    if wanted is not None:
        known = {event.seq for event in source.events}
        missing = sorted(wanted - known)
        if missing:
            raise ValueError(
                f"{source.path} has no step {', '.join(map(str, missing))} (steps 0-{len(source.events) - 1})"
            )
    options = FaultOptions(retry_after=retry_after)
    found: list[Mutation] = []
    for index, event in enumerate(source.events):
        if wanted is not None and event.seq not in wanted:
            continue
        for name in names:
            if not fault_named(name).applies_to(event, step_rng(seed, index, name), options):
                continue
            found.append(Mutation(str(source.path), index, event.seq, event.kind, event.name, name, seed, retry_after))
    if max_runs is not None and len(found) > max_runs:
        chosen = sorted(random.Random(seed).sample(range(len(found)), max_runs))
        found = [found[i] for i in chosen]
    return found


# --------------------------------------------------------------------------- running


@dataclass
class _Ran:
    finished: bool = False
    value: Any = None
    error: BaseException | None = None
    divergence: DivergenceError | None = None
    #: Connections the network guard refused during the run (even ones the agent swallowed).
    blocked: list[NetworkBlockedError] = field(default_factory=list)


def _run_bounded(session: Session, agent: Callable[[], Any], timeout: float) -> _Ran:
    """Run ``agent`` inside ``session`` on a worker thread; give up on it after ``timeout``.

    A hung agent cannot be stopped from outside: its daemon thread is left behind (the
    process ends it at exit), together with its session, which nothing else can see.
    """
    ran = _Ran()

    def work() -> None:
        try:
            with session:
                value = agent()
                if inspect.isawaitable(value):
                    value = asyncio.run(_await(value))
                ran.value = value
        except BaseException as exc:  # the agent's crash is the result
            ran.error = exc
        finally:
            if session.divergences:
                ran.divergence = session.divergences[0]
            ran.blocked = list(session.network_blocked)
            ran.finished = True

    worker = threading.Thread(target=work, name="rewind-mutate", daemon=True)
    worker.start()
    worker.join(timeout)
    return ran


async def _await(value: Any) -> Any:
    return await value


def _error_name(exc: BaseException) -> str:
    if isinstance(exc, ReplayedError):
        name = str(getattr(exc, "original_type", "") or type(exc).__qualname__)
        return name.removeprefix("builtins.")
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


def run_mutation(
    mutation: Mutation,
    agent: Callable[[], Any],
    *,
    expected: Any,
    timeout: float = 30.0,
    live: bool = False,
    match: str = "strict",
    network: str | None = None,
    allow_hosts: Sequence[str] = (),
) -> Result:
    """Run ``agent`` once under ``mutation`` and classify what it did.

    ``network`` is ``"block"`` unless ``live`` (then ``"allow"``): see the module docstring.
    """
    network = network_for(network, live=live)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # steps a crashed run left unserved are the result, not news
        session = mutation.session(live=live, match=match, network=network, allow_hosts=allow_hosts)
        ran = _run_bounded(session, agent, timeout)
    seconds = time.perf_counter() - started
    if not ran.finished:
        return Result(mutation, "hung", f"no answer after {timeout:g}s", seconds=seconds)
    if ran.blocked:
        first = ran.blocked[0]
        return Result(
            mutation,
            "crashed",
            f"NetworkBlockedError: tried to reach {first.host}:{first.port} (the network is blocked)",
            error=_error_name(first),
            seconds=seconds,
        )
    if ran.divergence is not None:
        step = ran.divergence.step
        return Result(
            mutation,
            "diverged",
            f"at step {step}: the agent took a path the recording does not hold",
            error=_error_name(ran.divergence),
            seconds=seconds,
        )
    if ran.error is not None:
        name = _error_name(ran.error)
        return Result(mutation, "crashed", f"{name}: {clip(str(ran.error), 120)}", error=name, seconds=seconds)
    if _same(ran.value, expected):
        return Result(mutation, "same", answer=ran.value, seconds=seconds)
    return Result(mutation, "different", clip(repr(ran.value), 120), answer=ran.value, seconds=seconds)


def network_for(network: str | None, *, live: bool) -> str:
    """The network a mutation runs with: blocked, unless ``live`` lets calls go out."""
    return check_network(network if network is not None else ("allow" if live else "block"))


def baseline(
    trace: PathLike,
    agent: Callable[[], Any],
    *,
    timeout: float = 30.0,
    match: str = "strict",
    network: str = "block",
    allow_hosts: Sequence[str] = (),
) -> Any:
    """The agent's answer in the unmutated replay (the reference every mutation is compared to)."""
    from rewind.engine.session import replay

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ran = _run_bounded(replay(trace, match=match, network=network, allow_hosts=allow_hosts), agent, timeout)
    if not ran.finished:
        raise MutateError(
            f"the unmutated replay of {trace} did not finish within {timeout:g}s; mutations would mean nothing"
        )
    if ran.divergence is not None:
        raise MutateError(f"the unmutated replay of {trace} diverged: {ran.divergence}")
    if ran.blocked:
        raise MutateError(f"the unmutated replay of {trace} tried to reach the network: {ran.blocked[0]}")
    if ran.error is not None:
        raise MutateError(
            f"the unmutated replay of {trace} raised {_error_name(ran.error)}: {ran.error}; "
            "fix that first (rewind replay shows it)"
        ) from ran.error
    return ran.value


def mutate(
    trace: PathLike,
    agent: Callable[[], Any],
    *,
    faults: Iterable[str] | None = None,
    steps: Iterable[int] | None = None,
    seed: int = 0,
    max_runs: int | None = None,
    timeout: float = 30.0,
    live: bool = False,
    match: str = "strict",
    retry_after: str = "1",
    network: str | None = None,
    allow_hosts: Sequence[str] = (),
) -> MutationReport:
    """Replay ``trace`` once per mutation, running ``agent()`` each time; see the module docstring.

    ``faults`` (names from ``FAULTS``) and ``steps`` narrow the plan; ``max_runs`` samples it
    (by ``seed``). ``live=True`` lets calls the recording does not hold go live instead of
    reporting ``diverged``. ``network`` is ``"block"`` unless ``live`` (``allow_hosts`` stay
    reachable); a run that tried to reach anything else is ``crashed``.
    """
    network = network_for(network, live=live)
    if timeout <= 0:
        raise ValueError(f"mutate(timeout=...) must be > 0 seconds, not {timeout!r}")
    mutations = plan(trace, faults=faults, steps=steps, seed=seed, max_runs=max_runs, retry_after=retry_after)
    expected = baseline(trace, agent, timeout=timeout, match=match, network=network, allow_hosts=allow_hosts)
    report = MutationReport(str(trace), seed, expected)
    for mutation in mutations:
        result = run_mutation(
            mutation,
            agent,
            expected=expected,
            timeout=timeout,
            live=live,
            match=match,
            network=network,
            allow_hosts=allow_hosts,
        )
        report.results.append(result)
    return report


# --------------------------------------------------------------------------- output


def render_table(results: Sequence[Result], counts: dict[str, int], *, header: str) -> str:
    rows = [("step", "call", "fault", "outcome")]
    for r in results:
        m = r.mutation
        rows.append((str(m.step), clip(f"{m.kind} {m.name}", 40), m.fault, r.describe()))
    widths = [max(len(inert(row[i])) for row in rows) for i in range(3)]
    lines = [f"rewind mutate: {inert(header)}: {len(results)} mutation{'s' if len(results) != 1 else ''}"]
    for row in rows:
        cells = [inert(cell).ljust(widths[i]) for i, cell in enumerate(row[:3])]
        lines.append("  ".join([*cells, inert(clip(row[3], 100))]).rstrip())
    summary = ", ".join(f"{count} {outcome}" for outcome, count in counts.items() if count)
    lines.append(f"summary: {summary or 'nothing to run'}")
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


__all__ = [
    "OUTCOMES",
    "MutateError",
    "Mutation",
    "MutationReport",
    "Result",
    "baseline",
    "mutate",
    "plan",
    "render_table",
    "run_mutation",
]
