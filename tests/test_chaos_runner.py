"""The chaos suite's verdicts (tests/chaos/run.py): a figure past its bound fails the run.

The suite itself runs as ``make test-chaos``; this only checks, quickly, that its
judging cannot pass a regression."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "chaos"))

import run  # tests/chaos/run.py
from thresholds import NETWORK_EXPECTED, THRESHOLDS


def test_a_figure_past_its_bound_fails() -> None:
    assert run.judge("kill.acknowledged_lost", 0) == ("== 0", "ok")
    assert run.judge("kill.acknowledged_lost", 1)[1] == "FAIL"
    assert run.judge("fuzz.traces", 999)[1] == "FAIL"
    assert run.judge("fuzz.slowest_trace_s", 10.5)[1] == "FAIL"
    assert run.judge("kill.kills", "missing")[1] == "FAIL"  # not a number: never a pass
    assert run.judge("kill.torn_tails_seen", 3)[1] == "info"


def test_a_network_attack_that_gets_through_fails_and_a_closed_hole_is_announced() -> None:
    blocked = next(name for name, state in NETWORK_EXPECTED.items() if state == "blocked")
    assert run.judge(f"network.{blocked}", "blocked")[1] == "ok"
    assert run.judge(f"network.{blocked}", "open")[1] == "FAIL"
    hole = next(name for name, state in NETWORK_EXPECTED.items() if state == "open")
    assert run.judge(f"network.{hole}", "blocked")[1] == "BETTER: update thresholds"


def test_every_scenario_has_bounds_and_a_module() -> None:
    for scenario in run.SCENARIOS:
        assert (Path(run.__file__).parent / f"{scenario}.py").is_file(), scenario
        assert scenario == "network" or any(key.startswith(f"{scenario}.") for key in THRESHOLDS), scenario
    assert {key.partition(".")[0] for key in THRESHOLDS} <= set(run.SCENARIOS)
