"""The plugin under pytest-asyncio (the session reaches async tests, their tasks and
async fixtures) and under pytest-xdist (workers record and replay; the controller reports)."""

from __future__ import annotations

import textwrap

import pytest

from rewind import Trace

pytest_plugins = ["pytester"]

ASYNC_TESTS = """
import asyncio
import os

import pytest
import rewind


def _live(name):
    if os.environ.get("AGENT_OFFLINE") == "1":
        raise RuntimeError(f"{name} went live during an offline replay")


@rewind.llm
async def amodel(prompt):
    _live("amodel")
    await asyncio.sleep(0)
    return {"text": prompt.upper()}


@rewind.tool
async def atool(query):
    _live("atool")
    await asyncio.sleep(0)
    return {"hits": [query, query + "!"]}


@pytest.fixture
async def warmed_up(rewind_session):
    # An async fixture that depends on the session runs inside it.
    assert rewind.current_session() is rewind_session
    return await amodel("warm up")


@pytest.mark.rewind_trace("traces/async.rewind")
async def test_async_agent(rewind_session, warmed_up):
    assert warmed_up == {"text": "WARM UP"}
    assert rewind.current_session() is rewind_session

    async def session_in_task():
        return rewind.current_session()

    assert await asyncio.create_task(session_in_task()) is rewind_session
    plan = await amodel(os.environ.get("AGENT_PROMPT", "plan"))
    results = await asyncio.gather(atool(plan["text"]), atool("b"))
    assert results[1] == {"hits": ["b", "b!"]}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.rewind_trace("traces/module_loop.rewind")
async def test_module_scoped_loop(rewind_session):
    assert rewind.current_session() is rewind_session
    assert (await amodel("x"))["text"] == "X"
"""


def _async_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGENT_OFFLINE", "AGENT_PROMPT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_async=textwrap.dedent(ASYNC_TESTS))
    return pytester


def test_async_tests_record_and_replay_with_the_session_in_their_tasks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _async_project(pytester, monkeypatch)
    recorded = project.runpytest_subprocess("--rewind-record")
    recorded.assert_outcomes(passed=2)
    events = Trace.load(project.path / "traces/async.rewind").events
    assert [(e.kind, e.name) for e in events] == [
        ("llm", "amodel"),
        ("llm", "amodel"),
        ("tool", "atool"),
        ("tool", "atool"),
    ]

    monkeypatch.setenv("AGENT_OFFLINE", "1")
    project.runpytest_subprocess().assert_outcomes(passed=2)

    monkeypatch.setenv("AGENT_PROMPT", "another plan")
    diverged = project.runpytest_subprocess()
    diverged.assert_outcomes(passed=1, failed=1)
    diverged.stdout.fnmatch_lines(
        [
            "rewind: replay of traces/async.rewind diverged at step 1: prompt/content drift",
            '*+  "prompt": "another plan"',
            "    pytest --rewind-record test_async.py::test_async_agent",
        ]
    )
    assert "Traceback" not in diverged.stdout.str()


XDIST_TESTS = """
import os

import pytest

from agent import run_agent


CITIES = ("sfo", "jfk", "lax", "ord")


@pytest.mark.parametrize(
    "city", [pytest.param(city, marks=pytest.mark.rewind_trace(f"traces/{city}.rewind")) for city in CITIES]
)
def test_city(rewind_session, city):
    run_agent(os.environ.get("AGENT_PROMPT", "fly to ") + city)
"""


def test_xdist_workers_record_and_replay_and_the_controller_reports(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_cities=textwrap.dedent(XDIST_TESTS))
    missing = project.runpytest_subprocess("-n", "2")
    missing.assert_outcomes(errors=4)
    missing.stdout.fnmatch_lines(["*pytest --rewind-record 'test_cities.py::test_city[[]sfo[]]'*", "*4 missing*"])

    recorded = project.runpytest_subprocess("-n", "2", "--rewind-record")
    recorded.assert_outcomes(passed=4)
    recorded.stdout.fnmatch_lines(["*rewind golden traces*", "4 recorded"])
    for city in ("sfo", "jfk", "lax", "ord"):
        assert Trace.load(project.path / f"traces/{city}.rewind").events[0].request == {"prompt": f"fly to {city}"}

    monkeypatch.setenv("AGENT_OFFLINE", "1")
    project.runpytest_subprocess("-n", "2").assert_outcomes(passed=4)

    monkeypatch.setenv("AGENT_PROMPT", "drive to ")
    diverged = project.runpytest_subprocess("-n", "2", "-k", "sfo")
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(["rewind: replay of traces/sfo.rewind diverged at step 0: prompt/content drift"])
    assert "Traceback" not in diverged.stdout.str()
