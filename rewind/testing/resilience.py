"""Resilience tests over a golden trace: ``resilience_cases`` and ``assert_resilient``.

``resilience_cases`` turns a golden trace into one ``pytest.param`` per mutation
(a fault injected at one step, see ``rewind.what_if.mutate``); ``assert_resilient`` runs
the agent under one and fails the test, with a one-line explanation and no traceback,
unless the outcome is allowed. The unmutated replay's answer is computed once per trace
and agent, and kept for the rest of the pytest run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


def resilience_cases(
    path: str | os.PathLike[str],
    *,
    faults: list[str] | tuple[str, ...] | None = None,
    steps: list[int] | tuple[int, ...] | None = None,
    seed: int = 0,
    max_runs: int | None = None,
    retry_after: str = "1",
) -> list[Any]:
    """One ``pytest.param`` per mutation of the golden trace at ``path`` (see ``rewind.what_if``).

        @pytest.mark.parametrize("mutation", resilience_cases(HERE / "golden.rewind", faults=["rate_limit"]))
        def test_agent_survives(mutation):
            assert_resilient(mutation, run_agent)

    The same trace and seed give the same cases and ids (``step3-rate_limit``). A trace
    that does not exist yet gives one skipped case saying so.
    """
    from rewind.what_if.mutate import plan

    target = Path(os.fspath(path))
    if not target.exists():
        reason = f"rewind: the golden trace {target} does not exist yet; record it first"
        return [pytest.param(None, id="no-golden-trace", marks=pytest.mark.skip(reason=reason))]
    mutations = plan(target, faults=faults, steps=steps, seed=seed, max_runs=max_runs, retry_after=retry_after)
    return [pytest.param(mutation, id=mutation.id) for mutation in mutations]


def assert_resilient(
    mutation: Any,
    agent: Any,
    *,
    allow: tuple[str, ...] = ("same", "different"),
    timeout: float = 30.0,
    live: bool = False,
) -> Any:
    """Run ``agent`` under ``mutation``; fail the test unless the outcome is in ``allow``.

    Returns the ``Result``. The reference answer is the unmutated replay's, computed once
    per trace and agent.
    """
    from rewind.what_if.mutate import baseline, run_mutation

    key = (mutation.trace, id(agent))
    expected = _BASELINES.get(key, _NO_BASELINE)
    if expected is _NO_BASELINE:
        expected = _BASELINES[key] = baseline(mutation.trace, agent, timeout=timeout)
    result = run_mutation(mutation, agent, expected=expected, timeout=timeout, live=live)
    if result.outcome not in allow:
        pytest.fail(
            f"rewind: with {mutation.fault} injected at step {mutation.step} ({mutation.kind} {mutation.name}) "
            f"the agent {result.describe()} (allowed: {', '.join(allow)})",
            pytrace=False,  # the report shows the message, not rewind's internal traceback
        )
    return result


_NO_BASELINE: Any = object()
_BASELINES: dict[tuple[str, int], Any] = {}
