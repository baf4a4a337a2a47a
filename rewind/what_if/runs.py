"""Many runs of one live part, and the verdict over them: outcome groups and a success rate.

One live run proves little: an agent is not deterministic. ``run_many`` runs one attempt
K times (in parallel with ``jobs``), each saving its trace in a folder; ``judge`` groups
the runs by outcome (exit status, final output, the step where the run's trace first
differs from the most common outcome's) and gives the success rate of a criterion with
its 95% Wilson score interval.

How one attempt runs is the caller's: ``rewind fork --runs`` runs a program as a fork
(a child process), ``rewind.runs`` calls a Python function inside a fork session, and any
other way of running a live part (a hybrid replay) plugs in the same way.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewind.errors import DivergenceError, RewindError, UnconsumedEventsWarning
from rewind.inspection.diff import diff_traces
from rewind.matching.strategies import Matcher
from rewind.storage.trace import PathLike, Trace

#: The normal quantile for a two-sided 95% interval.
Z95 = 1.959963984540054


class RunsError(RewindError):
    """Runs that cannot start (bad arguments, a folder that already holds runs) or be judged."""


@dataclass(frozen=True)
class RunResult:
    """How one run ended."""

    #: 1-based run number.
    index: int
    #: The run's saved trace (``None`` when the run ended before its session wrote one).
    trace: str | None
    exit_status: int
    #: Everything the run printed to stdout (a Python agent: its return value, as text).
    output: str = ""
    #: A session failure (the replayed prefix diverged), if any.
    error: str | None = None

    @property
    def final(self) -> str:
        """The agent's final output: the last non-empty line it printed."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        return lines[-1] if lines else ""


#: How one live attempt runs: given its number and where to save its trace, run it.
Attempt = Callable[[int, Path], RunResult]
#: A success criterion over one run.
Criterion = Callable[[RunResult], bool]


def run_name(index: int) -> str:
    return f"run-{index:03d}"


def prepare_folder(folder: PathLike) -> Path:
    """The folder the runs are saved in: created, and refused if it already holds runs."""
    path = Path(os.fspath(folder))
    if path.exists() and not path.is_dir():
        raise RunsError(f"{path}: is a file; the runs need a folder (pass another one)")
    if path.is_dir() and any(path.glob("run-*.rewind")):
        raise RunsError(f"{path} already holds runs; remove them or save these runs in another folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_many(attempt: Attempt, *, runs: int, folder: PathLike, jobs: int = 1) -> list[RunResult]:
    """Run ``attempt`` ``runs`` times, ``jobs`` at a time; each saves ``folder/run-NNN.rewind``."""
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise RunsError(f"runs= must be a whole number >= 1, not {runs!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise RunsError(f"jobs= must be a whole number >= 1, not {jobs!r}")
    where = prepare_folder(folder)
    paths = [where / f"{run_name(index)}.rewind" for index in range(1, runs + 1)]
    if jobs == 1:
        return [attempt(index, path) for index, path in enumerate(paths, 1)]
    with ThreadPoolExecutor(max_workers=min(jobs, runs), thread_name_prefix="rewind-run") as pool:
        return list(pool.map(attempt, range(1, runs + 1), paths))


# -- success criteria --------------------------------------------------------------------


def criterion(
    *,
    expect_exit: int | None = None,
    expect_output: str | None = None,
    expect: Callable[[Trace], Any] | None = None,
) -> tuple[Criterion, str]:
    """The success criterion these expectations make (all must hold), and how it reads.

    ``expect_output`` is a regular expression searched in the run's whole output;
    ``expect`` a function given the run's ``Trace``. With none, success is exit status 0.
    """
    checks: list[Criterion] = []
    words: list[str] = []
    if expect_exit is None and expect_output is None and expect is None:
        expect_exit = 0
    if expect_exit is not None:
        code = expect_exit
        checks.append(lambda run: run.exit_status == code)
        words.append(f"exit status {code}")
    if expect_output is not None:
        try:
            pattern = re.compile(expect_output, re.MULTILINE)
        except re.error as exc:
            raise RunsError(f"expect_output {expect_output!r} is not a regular expression ({exc})") from None
        checks.append(lambda run: pattern.search(run.output) is not None)
        words.append(f"output matches /{expect_output}/")
    if expect is not None:
        if not callable(expect):
            raise RunsError(f"expect= must be a function of the run's Trace, not {type(expect).__name__}")
        checks.append(_on_trace(expect))
        words.append(f"{getattr(expect, '__qualname__', repr(expect))}(trace)")
    return (lambda run: all(check(run) for check in checks)), " and ".join(words)


def _on_trace(expect: Callable[[Trace], Any]) -> Criterion:
    def check(run: RunResult) -> bool:
        if run.trace is None or not os.path.exists(run.trace):
            return False
        try:
            return bool(expect(Trace.load(run.trace)))
        except Exception as exc:
            raise RunsError(
                f"the success criterion {getattr(expect, '__qualname__', expect)!r} raised on run {run.index} "
                f"({run.trace}): {type(exc).__name__}: {exc}"
            ) from exc

    return check


def wilson_interval(successes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95% with the default ``z``)."""
    if runs <= 0 or not 0 <= successes <= runs:
        raise ValueError(f"wilson_interval needs 0 <= successes <= runs and runs > 0, not {successes}/{runs}")
    p = successes / runs
    z2 = z * z
    denominator = 1 + z2 / runs
    center = (p + z2 / (2 * runs)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / runs + z2 / (4 * runs * runs))
    return max(0.0, center - half), min(1.0, center + half)


# -- the verdict ---------------------------------------------------------------------------


@dataclass
class Group:
    """Runs that ended the same way."""

    exit_status: int
    final: str
    #: The step where these runs' traces first differ from the most common outcome's
    #: representative (``None`` for runs that took the same path).
    differs_at: int | None
    runs: list[RunResult] = field(default_factory=list)
    successes: int = 0

    @property
    def representative(self) -> RunResult:
        return self.runs[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "exit_status": self.exit_status,
            "final_output": self.final,
            "differs_at": self.differs_at,
            "count": len(self.runs),
            "successes": self.successes,
            "representative": self.representative.trace,
            "runs": [run.index for run in self.runs],
        }


@dataclass
class Verdict:
    """K runs of one live part, grouped by outcome, and the success rate of a criterion."""

    source: str
    runs: list[RunResult]
    groups: list[Group]
    successes: int
    criterion: str
    folder: str
    #: Where the live part starts (for the header line), e.g. ``from step 3``.
    where: str = ""

    @property
    def rate(self) -> float:
        return self.successes / len(self.runs)

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, len(self.runs))

    def lines(self) -> list[str]:
        """The distribution and the success rate, for a terminal."""
        total = len(self.runs)
        head = f"{total} runs of {self.source}"
        lines = [f"{head} {self.where}, saved in {self.folder}".replace("  ", " ")]
        width = len(str(total))
        for group in self.groups:
            share = f"{len(group.runs) * 100 / total:.0f}%"
            where = "same path" if group.differs_at is None else f"differs from step {group.differs_at}"
            ok = "success" if group.successes == len(group.runs) else f"{group.successes} succeeded"
            shown = _clip(group.final) if group.final else "(no output)"
            if group.representative.error:
                # A session failure (the replayed prefix diverged) says more than the output.
                shown += f"  rewind: {_clip(group.representative.error.splitlines()[0], 100)}"
            name = os.path.basename(group.representative.trace or run_name(group.representative.index))
            lines.append(
                f"  {len(group.runs):>{width}} ({share:>4})  exit {group.exit_status}  {shown}  [{where}; {ok}; "
                f"e.g. {name}]"
            )
        low, high = self.interval
        lines.append(
            f"success ({self.criterion}): {self.successes}/{total} = {self.rate:.0%}, "
            f"95% interval {low:.1%}-{high:.1%} (Wilson)"
        )
        return lines

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "source": self.source,
            "folder": self.folder,
            "runs": len(self.runs),
            "successes": self.successes,
            "success_rate": self.rate,
            "interval": {"low": low, "high": high, "confidence": 0.95, "method": "wilson"},
            "criterion": self.criterion,
            "groups": [group.to_dict() for group in self.groups],
            "results": [
                {
                    "run": run.index,
                    "trace": run.trace,
                    "exit_status": run.exit_status,
                    "final_output": run.final,
                    "error": run.error,
                }
                for run in self.runs
            ],
        }


def save_verdict(verdict: Verdict) -> Path:
    """Write ``verdict.json`` (``Verdict.to_dict()``) beside the runs, atomically; its path."""
    target = Path(verdict.folder) / "verdict.json"
    temporary = target.with_name(f".verdict.json.tmp-{os.getpid()}")
    temporary.write_text(json.dumps(verdict.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, target)
    return target


def _clip(text: str, width: int = 60) -> str:
    shown = text if len(text) <= width else text[: width - 1] + "…"
    return repr(shown)


def judge(
    results: Sequence[RunResult], success: Criterion, *, described: str, source: str, folder: str, where: str = ""
) -> Verdict:
    """Group ``results`` by outcome and count the successes."""
    if not results:
        raise RunsError("no runs to judge")
    by_outcome: dict[tuple[int, str], list[RunResult]] = {}
    for run in results:
        by_outcome.setdefault((run.exit_status, run.final), []).append(run)
    # The most common outcome's first run is what every other run is compared with.
    reference = max(by_outcome.values(), key=len)[0]
    groups: dict[tuple[int, str, int | None], Group] = {}
    successes = 0
    for run in results:
        key = (run.exit_status, run.final, _differs_at(reference, run))
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(*key)
        group.runs.append(run)
        if success(run):
            group.successes += 1
            successes += 1
    ordered = sorted(groups.values(), key=lambda g: (-len(g.runs), g.runs[0].index))
    return Verdict(
        source=source,
        runs=list(results),
        groups=ordered,
        successes=successes,
        criterion=described,
        folder=folder,
        where=where,
    )


def _differs_at(reference: RunResult, run: RunResult) -> int | None:
    """The step where ``run``'s trace first differs from ``reference``'s (ids, times, usage ignored)."""
    if run is reference or reference.trace is None or run.trace is None:
        return None
    if not (os.path.exists(reference.trace) and os.path.exists(run.trace)):
        return None
    first = diff_traces(reference.trace, run.trace).first_divergence
    if first is None:
        return None
    return first.b_step if first.b_step is not None else first.a_step


# -- the Python API: a function run inside a fork, K times ------------------------------------


def fork_attempt(path: PathLike, agent: Callable[[], Any], *, at: int, match: str | Matcher = "strict") -> Attempt:
    """An attempt that calls ``agent()`` inside ``rewind.fork(path, at=at)``; its return value
    is the run's output, an exception it raises exit status 1 (and the exception as output)."""
    from rewind.what_if.fork import fork

    def attempt(index: int, save_as: Path) -> RunResult:
        trace = str(save_as)
        try:
            # A prefix left unserved is a warning of the fork (the CLI's runs print it, not
            # fail on it); here it must not become the run's outcome under warnings-as-errors.
            with warnings.catch_warnings():
                warnings.simplefilter("default", UnconsumedEventsWarning)
                with fork(path, at=at, match=match, save_as=save_as) as session:
                    value = agent()
        except DivergenceError as exc:
            return RunResult(index, trace, 1, "", error=str(exc))
        except Exception as exc:
            return RunResult(index, trace, 1, f"{type(exc).__name__}: {exc}")
        output = "" if value is None else str(value)
        if session.divergences:
            # The agent caught the DivergenceError and went on: the run still left the recording.
            return RunResult(index, trace, 1, output, error=str(session.divergences[0]))
        return RunResult(index, trace, 0, output)

    return attempt


def runs(
    path: PathLike,
    agent: Callable[[], Any],
    *,
    at: int,
    runs: int,
    folder: PathLike,
    match: str | Matcher = "strict",
    expect_exit: int | None = None,
    expect_output: str | None = None,
    expect: Callable[[Trace], Any] | None = None,
) -> Verdict:
    """Fork ``path`` at step ``at`` ``runs`` times, calling ``agent()`` live each time; the verdict.

        verdict = rewind.runs("golden.rewind", run_agent, at=3, runs=20, folder="runs",
                              expect_output=r"umbrella")
        low, high = verdict.interval

    Each run's trace is ``folder/run-NNN.rewind``; the verdict is also saved as
    ``folder/verdict.json``.

    The runs go one after another in this process (a run's session is this thread's); run
    a program in parallel with ``rewind fork --runs K -j J``.
    """
    if not callable(agent):
        raise RunsError(f"agent must be a function taking no arguments, not {type(agent).__name__}")
    success, described = criterion(expect_exit=expect_exit, expect_output=expect_output, expect=expect)
    results = run_many(fork_attempt(path, agent, at=at, match=match), runs=runs, folder=folder)
    source, saved_in = os.fspath(path), os.fspath(folder)
    verdict = judge(results, success, described=described, source=source, folder=saved_in, where=f"forked at step {at}")
    save_verdict(verdict)
    return verdict


__all__ = [
    "Z95",
    "Attempt",
    "Criterion",
    "Group",
    "RunResult",
    "RunsError",
    "Verdict",
    "criterion",
    "fork_attempt",
    "judge",
    "prepare_folder",
    "run_many",
    "run_name",
    "runs",
    "save_verdict",
    "wilson_interval",
]
