"""The golden-trace workflow end to end: each scenario runs pytest on an example project
in a subprocess, records with ``--rewind-record`` and replays with live calls forbidden."""

from __future__ import annotations

import shlex
import textwrap
from pathlib import Path

import pytest

from rewind import Trace

pytest_plugins = ["pytester"]

FLIGHT = """
import os

import pytest

from agent import run_agent

PROMPT = os.environ.get("AGENT_PROMPT", "find me a flight")


@pytest.mark.rewind_trace("traces/golden/flight.rewind")
def test_flight(rewind_session):
    result = run_agent(PROMPT)
    expected = os.environ.get("EXPECT")
    if expected:
        assert result["final"] == expected
"""

GOLDEN = Path("traces/golden/flight.rewind")


def _test_file(project: pytest.Pytester, source: str, name: str = "test_agent") -> None:
    project.makepyfile(**{name: textwrap.dedent(source)})


def _record(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = project.runpytest_subprocess("--rewind-record", *args)
    assert result.ret == 0, result.stdout.str()
    return result


def _answers(path: Path) -> list[str]:
    return [event.response["text"] for event in Trace.load(path).events if event.kind == "llm"]


def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_OFFLINE", "1")


def _assert_clean_report(output: str) -> None:
    """A rewind failure reads as an explanation, not as rewind's internal traceback."""
    assert "Traceback" not in output
    assert "rewind/engine/core.py" not in output
    assert "rewind/testing/pytest_plugin.py" not in output


# --------------------------------------------------------------------------- record, replay


def test_missing_trace_fails_with_the_command_that_records_it(project: pytest.Pytester) -> None:
    _test_file(project, FLIGHT)
    result = project.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*rewind: golden trace traces/golden/flight.rewind does not exist*",
            "    pytest --rewind-record test_agent.py::test_flight",
            "*pytest --rewind-record-mode=missing*",
        ]
    )
    _assert_clean_report(result.stdout.str())
    assert not (project.path / GOLDEN).exists()

    # The printed command is the one that fixes it.
    command = next(line for line in result.stdout.lines if line.strip().startswith("pytest --rewind-record "))
    args = shlex.split(command)[1:]
    assert project.runpytest_subprocess(*args).ret == 0
    assert (project.path / GOLDEN).exists()


def test_record_flag_records_live_next_to_the_test_file_and_plain_pytest_replays_offline(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = project.mkpydir("suite")
    (sub / "test_nested.py").write_text(textwrap.dedent(FLIGHT))
    # A plain flag: the path after it is still the path to test.
    result = _record(project, "suite")
    result.stdout.fnmatch_lines(["*rewind: recording golden traces (--rewind-record-mode=all)*", "*1 recorded*"])
    golden = sub / GOLDEN
    assert golden.exists()
    trace = Trace.load(golden)
    assert [event.name for event in trace.events] == ["model", "search"]
    assert trace.meta["pytest"]["nodeid"] == "suite/test_nested.py::test_flight"
    assert not list(golden.parent.glob("*.recording-*"))

    _offline(monkeypatch)
    monkeypatch.setenv("EXPECT", "SFO")
    replayed = project.runpytest_subprocess("suite")
    replayed.assert_outcomes(passed=1)
    # A quiet replay: the summary appears only when something was recorded or is missing.
    assert "rewind golden traces" not in replayed.stdout.str()


def test_divergence_fails_the_test_with_its_explanation(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(project, FLIGHT)
    _record(project)
    _offline(monkeypatch)
    monkeypatch.setenv("AGENT_PROMPT", "find me a train")
    result = project.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "rewind: replay of traces/golden/flight.rewind diverged at step 0: prompt/content drift",
            "  recorded*llm 'model'*",
            "  incoming*llm 'model'*",
            '*-  "prompt": "find me a flight"',
            '*+  "prompt": "find me a train"',
            "  hint: *",
            "If the change is intended, re-record the golden trace:",
            "    pytest --rewind-record test_agent.py::test_flight",
            "FAILED test_agent.py::test_flight - Failed: rewind: replay of*",
        ]
    )
    _assert_clean_report(result.stdout.str())


def test_a_divergence_the_agent_swallowed_still_fails_the_test(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import os

        import pytest

        from agent import model, run_agent


        def careless_agent(prompt):
            try:
                if os.environ.get("WARM_UP"):
                    model("warm up")  # a call the recording does not hold
            except Exception:
                pass  # agents often swallow errors like this
            return run_agent(prompt)


        @pytest.mark.rewind_trace("traces/flight.rewind")
        def test_passes_anyway(rewind_session):
            assert careless_agent("find me a flight")["final"] == "SFO"


        @pytest.mark.rewind_trace("traces/flight.rewind")
        def test_fails_later(rewind_session):
            careless_agent("find me a flight")
            assert False, "the agent's own assertion"
        """,
    )
    _record(project, "-k", "passes_anyway")
    _offline(monkeypatch)
    monkeypatch.setenv("WARM_UP", "1")
    result = project.runpytest_subprocess()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ test_passes_anyway _*",
            "rewind: replay of traces/flight.rewind diverged at step 0: prompt/content drift",
            "*+  \"prompt\": \"warm up\"",
            "The agent caught this DivergenceError and the test went on to pass*",
            "*_ test_fails_later _*",
            "*AssertionError: the agent's own assertion*",
            "*- rewind: the replay diverged first -*",
            "rewind: replay of traces/flight.rewind diverged at step 0: prompt/content drift",
        ]
    )


def test_caught_divergence_then_another_shows_the_first_as_the_cause(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import os

        import pytest

        from agent import model, search


        def retrying_agent():
            try:
                model(os.environ.get("AGENT_PROMPT", "plan"))
            except Exception:
                model("fallback plan")  # a second miss, which reaches the test
            return search("SFO")


        @pytest.mark.rewind_trace("traces/retry.rewind")
        def test_retry(rewind_session):
            retrying_agent()
        """,
    )
    _record(project)
    _offline(monkeypatch)
    monkeypatch.setenv("AGENT_PROMPT", "changed plan")
    result = project.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "rewind: replay of traces/retry.rewind diverged at step 0: prompt/content drift",
            '*+  "prompt": "changed plan"',
            "The agent caught this DivergenceError and carried on; it diverged again at step 0 "
            "(prompt/content drift), which failed the test.",
        ]
    )
    _assert_clean_report(result.stdout.str())


def test_require_full_consumption_from_the_marker(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _test_file(
        project,
        """
        import os

        import pytest

        from agent import model, run_agent


        def short_run():
            return run_agent("find me a flight") if not os.environ.get("SHORT") else model("find me a flight")


        @pytest.mark.rewind_trace("traces/strict.rewind", require_full_consumption=True)
        def test_strict(rewind_session):
            short_run()


        @pytest.mark.rewind_trace("traces/lenient.rewind")
        def test_lenient(rewind_session):
            short_run()
        """,
    )
    _record(project)
    _offline(monkeypatch)
    monkeypatch.setenv("SHORT", "1")
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_strict*",
            "rewind: replay of traces/strict.rewind ended with 1 recorded step never served (step 1)*"
            "require_full_consumption=True makes this a failure.",
            "If the shorter run is intended, re-record the golden trace:",
            "    pytest --rewind-record test_agent.py::test_strict",
            "*UnconsumedEventsWarning*lenient.rewind*",
        ]
    )
    _assert_clean_report(result.stdout.str().split("warnings summary")[0])


# --------------------------------------------------------------------------- record modes


def test_record_mode_missing_records_only_the_traces_that_do_not_exist(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import pytest

        from agent import run_agent


        @pytest.mark.rewind_trace("traces/a.rewind")
        def test_first(rewind_session):
            run_agent("first")


        @pytest.mark.rewind_trace("traces/b.rewind")
        def test_second(rewind_session):
            run_agent("second")
        """,
    )
    _record(project, "-k", "test_first")
    monkeypatch.setenv("AGENT_ANSWER", "LAX")
    result = project.runpytest_subprocess("--rewind-record-mode=missing")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 recorded, 1 replayed*", "  recorded: traces/b.rewind"])
    assert _answers(project.path / "traces/a.rewind") == ["SFO for first"]  # replayed, untouched
    assert _answers(project.path / "traces/b.rewind") == ["LAX for second"]


def test_record_mode_all_keeps_the_old_golden_when_the_live_run_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(project, FLIGHT)
    golden = project.path / GOLDEN
    _record(project)
    before = golden.read_bytes()

    monkeypatch.setenv("AGENT_ANSWER", "LAX")
    monkeypatch.setenv("EXPECT", "SFO")  # the live model changed its answer: the test fails
    result = project.runpytest_subprocess("--rewind-record-mode=all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- rewind -*",
            "rewind: the test failed while recording, so the new recording was discarded and the golden "
            "trace is unchanged (traces/golden/flight.rewind)*",
            "*1 not saved (the test failed while recording)*",
        ]
    )
    assert golden.read_bytes() == before
    assert not list(golden.parent.glob("*.recording-*"))

    # A passing live run replaces it, stale blob folder included.
    stale_blobs = Path(f"{golden}.blobs")
    stale_blobs.mkdir()
    (stale_blobs / "old").write_text("stale")
    monkeypatch.setenv("EXPECT", "LAX")
    _record(project)
    assert _answers(golden) == ["LAX for find me a flight"]
    assert not stale_blobs.exists()


def test_record_mode_rewrite_deletes_first_and_keeps_what_a_failing_run_recorded(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(project, FLIGHT)
    golden = project.path / GOLDEN
    _record(project)
    stale_blobs = Path(f"{golden}.blobs")
    stale_blobs.mkdir()

    monkeypatch.setenv("AGENT_ANSWER", "LAX")
    monkeypatch.setenv("EXPECT", "SFO")
    result = project.runpytest_subprocess("--rewind-record-mode=rewrite")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "rewind: the test failed; traces/golden/flight.rewind holds what this failing run recorded*",
            "*1 recorded from a failing run*",
        ]
    )
    assert _answers(golden) == ["LAX for find me a flight"]
    assert not stale_blobs.exists()


def test_record_flag_and_a_different_record_mode_conflict(project: pytest.Pytester) -> None:
    _test_file(project, FLIGHT)
    result = project.runpytest_subprocess("--rewind-record", "--rewind-record-mode=missing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rewind-record means --rewind-record-mode=all*conflicts*"])
    assert project.runpytest_subprocess("--rewind-record", "--rewind-record-mode=all").ret == 0


def test_two_tests_recording_one_trace_fail_instead_of_overwriting_each_other(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import pytest

        from agent import run_agent


        @pytest.mark.rewind_trace("traces/shared.rewind")
        def test_first(rewind_session):
            run_agent("one")


        @pytest.mark.rewind_trace("traces/shared.rewind")
        def test_second(rewind_session):
            run_agent("two")


        @pytest.mark.parametrize(
            "prompt",
            [
                pytest.param("one", marks=pytest.mark.rewind_trace("traces/one.rewind")),
                pytest.param("two", marks=pytest.mark.rewind_trace("traces/two.rewind")),
            ],
        )
        def test_own(rewind_session, prompt):
            run_agent(prompt)
        """,
    )
    result = project.runpytest_subprocess("--rewind-record")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        ["*rewind: 2 tests would record the same golden trace traces/shared.rewind*Give each test its own path*"]
    )
    assert not (project.path / "traces/shared.rewind").exists()
    assert _answers(project.path / "traces/two.rewind") == ["SFO for two"]  # a param's own marker: as written
    # Selecting one of them is fine.
    _record(project, "-k", "test_first")
    _offline(monkeypatch)
    project.runpytest_subprocess("-k", "test_first").assert_outcomes(passed=1)


def test_one_marker_on_a_parametrized_test_gives_each_parameter_its_own_trace(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import pytest

        from agent import run_agent


        @pytest.mark.parametrize("prompt", ["paris", "new york/JFK"])
        @pytest.mark.rewind_trace("traces/weather.rewind")
        def test_weather(rewind_session, prompt):
            run_agent(prompt)
        """,
    )
    # Before: both parameters claimed traces/weather.rewind and errored at setup.
    _record(project)
    traces = project.path / "traces"
    assert sorted(p.name for p in traces.iterdir()) == ["weather-new_york_JFK.rewind", "weather-paris.rewind"]
    assert _answers(traces / "weather-paris.rewind") == ["SFO for paris"]
    assert _answers(traces / "weather-new_york_JFK.rewind") == ["SFO for new york/JFK"]
    _offline(monkeypatch)
    project.runpytest_subprocess().assert_outcomes(passed=2)


# --------------------------------------------------------------------------- marker options


def test_marker_forwards_normalize_and_redact(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _test_file(
        project,
        """
        import json
        import os
        import uuid

        import pytest
        import rewind


        def drop_nonce(request):
            request.pop("nonce", None)
            return request


        def scrub(payload):
            return json.loads(json.dumps(payload).replace("sk-secret", "[REDACTED]"))


        @rewind.tool
        def fetch(url, nonce, token):
            if os.environ.get("AGENT_OFFLINE") == "1":
                raise RuntimeError("fetch went live")
            return {"body": "ok " + url, "echo": token}


        @pytest.mark.rewind_trace("traces/fetch.rewind", normalize=drop_nonce, redact=scrub)
        def test_fetch(rewind_session):
            assert fetch("https://example.test", str(uuid.uuid4()), "sk-secret")["body"] == "ok https://example.test"
        """,
    )
    _record(project)
    text = (project.path / "traces/fetch.rewind").read_text()
    assert "sk-secret" not in text
    assert "[REDACTED]" in text
    _offline(monkeypatch)
    project.runpytest_subprocess().assert_outcomes(passed=1)  # a fresh nonce still matches


def test_marker_forwards_the_match_strategy(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _test_file(
        project,
        """
        import os

        import pytest

        from agent import run_agent


        @pytest.mark.rewind_trace("traces/ordered.rewind", match="ordered")
        def test_ordered(rewind_session):
            assert run_agent(os.environ.get("AGENT_PROMPT", "find me a flight"))["final"] == "SFO"


        @pytest.mark.rewind_trace("traces/ordered.rewind", match="no-such-strategy")
        def test_unknown(rewind_session):
            pass
        """,
    )
    _record(project, "-k", "test_ordered")
    _offline(monkeypatch)
    monkeypatch.setenv("AGENT_PROMPT", "find me a cheap flight")
    result = project.runpytest_subprocess("-W", "default")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "rewind: @pytest.mark.rewind_trace('traces/ordered.rewind'): unknown match strategy 'no-such-strategy'*",
            "*ReplayDriftWarning*",
        ]
    )


def test_marked_test_runs_in_its_session_even_without_asking_for_the_fixture(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import os

        import pytest
        import rewind

        from agent import model

        pytestmark = pytest.mark.rewind_trace("traces/module.rewind")


        def test_implicit():
            session = rewind.current_session()
            assert session is not None
            assert session.mode == ("replay" if os.environ.get("AGENT_OFFLINE") else "record")
            model("module level")


        @pytest.mark.rewind_trace("traces/class.rewind")  # the closest marker wins
        class TestClosest:
            def test_method(self):
                model("class level")
        """,
    )
    _record(project)
    assert _answers(project.path / "traces/module.rewind") == ["SFO for module level"]
    assert _answers(project.path / "traces/class.rewind") == ["SFO for class level"]
    _offline(monkeypatch)
    project.runpytest_subprocess().assert_outcomes(passed=2)


def test_misuse_is_reported_plainly(project: pytest.Pytester) -> None:
    _test_file(
        project,
        """
        import pytest


        def test_fixture_without_marker(rewind_session):
            pass


        @pytest.mark.rewind_trace("traces/x.rewind", bogus=1)
        def test_unknown_option():
            pass


        @pytest.mark.rewind_trace()
        def test_no_path():
            pass


        @pytest.mark.rewind_trace("traces/x.rewind", require_full_consumption="yes")
        def test_bad_flag():
            pass


        @pytest.mark.rewind_trace("traces/x.rewind", normalize="lower")
        def test_bad_normalize():
            pass
        """,
    )
    result = project.runpytest_subprocess("--strict-markers")
    result.assert_outcomes(errors=5)
    result.stdout.fnmatch_lines(
        [
            "rewind: the rewind_session fixture needs a golden trace; mark the test with "
            "@pytest.mark.rewind_trace('traces/test_fixture_without_marker.rewind').",
            "rewind: @pytest.mark.rewind_trace(path, *, match='strict', *): got an unexpected keyword argument 'bogus'",
            "rewind: @pytest.mark.rewind_trace(path, *, match='strict', *): missing a required argument: 'path'",
            "rewind: require_full_consumption= must be True or False, not 'yes'",
            "rewind: normalize= must be a callable payload -> payload, not str",
        ]
    )
    _assert_clean_report(result.stdout.str())
    markers = project.runpytest_subprocess("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.rewind_trace(path, *, match='strict', *"])


def test_loading_the_plugin_starts_no_opentelemetry(project: pytest.Pytester) -> None:
    _test_file(
        project,
        """
        import sys

        from opentelemetry import trace


        def test_nothing_started():
            assert "rewind.testing.pytest_plugin" in sys.modules
            from rewind.telemetry import TRACERS

            assert TRACERS._private is None
            assert not TRACERS._routed
            assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
        """,
    )
    project.runpytest_subprocess().assert_outcomes(passed=1)


def test_gzip_golden_traces_are_recorded_compressed_and_replayed(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import pytest

        from agent import run_agent


        @pytest.mark.rewind_trace("traces/flight.rewind.gz")
        def test_flight(rewind_session):
            assert run_agent("find me a flight")["final"] == "SFO"
        """,
    )
    assert project.runpytest_subprocess("--rewind-record-mode=rewrite").ret == 0
    golden = project.path / "traces/flight.rewind.gz"
    assert golden.read_bytes()[:2] == b"\x1f\x8b"
    assert _answers(golden) == ["SFO for find me a flight"]
    assert not list(golden.parent.glob("*.recording-*"))
    _offline(monkeypatch)
    project.runpytest_subprocess().assert_outcomes(passed=1)


def test_a_corrupt_golden_trace_fails_with_the_command_that_rerecords_it(project: pytest.Pytester) -> None:
    _test_file(project, FLIGHT)
    golden = project.path / GOLDEN
    golden.parent.mkdir(parents=True)
    golden.write_text("this is not a trace\n")
    result = project.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "rewind: cannot replay golden trace traces/golden/flight.rewind: *not a rewind trace*",
            "Re-record it (this runs the test live) with:",
            "    pytest --rewind-record test_agent.py::test_flight",
        ]
    )
    _assert_clean_report(result.stdout.str())


def test_a_test_skipped_while_recording_keeps_its_old_golden(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_file(
        project,
        """
        import os

        import pytest

        from agent import run_agent


        @pytest.mark.rewind_trace("traces/flight.rewind")
        def test_flight(rewind_session):
            run_agent("find me a flight")
            if os.environ.get("SKIP"):
                pytest.skip("the service is down")
        """,
    )
    golden = project.path / "traces/flight.rewind"
    _record(project)
    before = golden.read_bytes()
    monkeypatch.setenv("AGENT_ANSWER", "LAX")
    monkeypatch.setenv("SKIP", "1")
    result = project.runpytest_subprocess("--rewind-record")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["1 not saved (the test was skipped or xfailed)"])
    assert golden.read_bytes() == before
    assert not list(golden.parent.glob("*.recording-*"))
