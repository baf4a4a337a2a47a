"""The pytest plugin: golden traces in one marker.

    @pytest.mark.rewind_trace("traces/flight.rewind")
    def test_flight(rewind_session):
        assert "SFO" in run_agent("find me a flight")["final"]

Plain ``pytest`` replays each marked test's golden trace offline; ``pytest
--rewind-record`` runs the marked tests live and rewrites their traces. The
``--rewind-record-mode`` option picks finer policies (``missing``, ``rewrite``).

What a marker asks for is read in ``rewind.testing.golden``, and the resilience helpers
live in ``rewind.testing.resilience``; both are importable from here. Registered through
the ``pytest11`` entry point. Importing this module has no side
effects: sessions (and so any OpenTelemetry machinery) start only when a marked test
runs.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rewind.engine import placeholder_keys
from rewind.engine.session import Session, record, replay
from rewind.errors import DivergenceError, RewindError
from rewind.matching import resolve_matcher
from rewind.storage import scratch

from .golden import (
    FIXTURE,
    MARKER,
    MARKER_HELP,
    RECORD_MODES,
    GoldenTrace,
    golden_trace,
    records_live,
    refreshes,
)
from .golden import parameter_path as parameter_path  # importable from here, as before the split
from .resilience import assert_resilient, resilience_cases

__all__ = ["RECORD_MODES", "GoldenTrace", "assert_resilient", "resilience_cases", "rewind_session"]

# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rewind", "agent-rewind golden traces")
    # A plain flag on purpose: `pytest --rewind-record tests/` must not read tests/ as a value.
    group.addoption(
        "--rewind-record",
        action="store_true",
        default=False,
        help="run tests marked rewind_trace live and rewrite their golden traces (same as --rewind-record-mode=all)",
    )
    group.addoption(
        "--rewind-record-mode",
        choices=RECORD_MODES,
        default=None,
        help="none: replay only (default); missing: record only tests whose trace does not exist; "
        "all: record every marked test, keeping the new trace when the test passes; "
        "rewrite: delete each trace, then record, keeping the result even when the test fails; "
        "refresh: replay each trace until it diverges, record only the rest live, and keep it when the test "
        "passes (with an HTML diff beside it)",
    )
    group.addoption(
        "--rewind-network",
        choices=("block", "allow"),
        default=None,
        help="replays: block (default) makes any connection to a host other than loopback (or the marker's "
        "allow_hosts) fail; allow lets them through, overriding every marker",
    )


_MODE_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    flag = bool(config.getoption("rewind_record", False))
    mode = config.getoption("rewind_record_mode", None)
    if flag and mode not in (None, "all"):
        raise pytest.UsageError(
            f"--rewind-record means --rewind-record-mode=all; it conflicts with --rewind-record-mode={mode}. "
            "Pass only one of them."
        )
    config.stash[_MODE_KEY] = "all" if flag else (mode or "none")
    config.pluginmanager.register(_Summary(), "rewind-golden-summary")


def pytest_report_header(config: pytest.Config) -> str | None:
    mode = config.stash.get(_MODE_KEY, "none")
    if mode == "none":
        return None
    return f"rewind: recording golden traces (--rewind-record-mode={mode})"


def record_mode(config: pytest.Config) -> str:
    """The record mode of this pytest run: one of ``RECORD_MODES``."""
    return config.stash.get(_MODE_KEY, "none")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, object, None]:
    """A module of golden-trace tests is imported with placeholder API keys when the run replays.

    A module that builds its client at import time (``client = openai.OpenAI()``) would
    otherwise fail collection where no key is set; the placeholders are gone once it is
    imported, and each replayed test holds them again (``rewind_session``).
    """
    if isinstance(collector, pytest.Module) and record_mode(collector.config) == "none" and _uses_golden(collector):
        with placeholder_keys.placeholders():
            yield
    else:
        yield


def _uses_golden(module: pytest.Module) -> bool:
    try:
        return MARKER in module.path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


# --------------------------------------------------------------------------- collection

_DUPLICATE_KEY = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)  # after -k/-m deselection, so only tests that will run count
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mode = record_mode(config)
    recorders: dict[Path, list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker(MARKER) is None:
            continue
        # A marked test always runs inside its session, even if it forgot to ask for
        # the fixture: otherwise a replay would silently go live.
        names = getattr(item, "fixturenames", None)
        if isinstance(names, list) and FIXTURE not in names:
            names.append(FIXTURE)
        try:
            trace = golden_trace(item)
        except (TypeError, ValueError):
            continue  # reported when the test sets up
        if trace is not None and (records_live(mode, trace) or refreshes(mode, trace)):
            recorders.setdefault(trace.path.resolve(), []).append(item)
    for path, group in recorders.items():
        if len(group) < 2:
            continue
        ids = ", ".join(item.nodeid for item in group)
        for item in group:
            item.stash[_DUPLICATE_KEY] = (
                f"rewind: {len(group)} tests would record the same golden trace {_show(item.config, path)} "
                f"({ids}); each recording would overwrite the last. Give each test its own path, "
                "for instance from the test name."
            )


# --------------------------------------------------------------------------- per-test state


@dataclass
class _Run:
    """One marked test's golden-trace session and what became of its trace."""

    trace: GoldenTrace
    shown: str
    command: str
    recording: bool
    mode: str
    target: Path
    #: Replaying until the first divergence, recording the rest into ``target``.
    refreshing: bool = False
    session: Session | None = None
    outcome: str = ""
    #: What a refresh kept and recorded anew (for the session summary).
    detail: str = ""

    @property
    def divergences(self) -> list[DivergenceError]:
        """Every divergence of the replay, including those the agent caught and swallowed."""
        return self.session.divergences if self.session is not None else []


_RUN_KEY = pytest.StashKey[_Run]()
_CALL_KEY = pytest.StashKey[pytest.TestReport]()
_ERROR_KEY = pytest.StashKey[BaseException]()


def _show(config: pytest.Config, path: Path) -> str:
    """``path`` relative to the rootdir when it lies inside it (shorter, copy-pasteable)."""
    try:
        return os.path.relpath(path, config.rootpath) if path.is_relative_to(config.rootpath) else str(path)
    except ValueError:  # another drive on Windows
        return str(path)


def _record_command(item: pytest.Item) -> str:
    return f"pytest --rewind-record {shlex.quote(item.nodeid)}"


_Failed = pytest.fail.Exception


def _fail(message: str) -> BaseException:
    # pytrace=False: the report shows the message, not rewind's internal traceback.
    return _Failed(message, pytrace=False)


def _open_session(item: pytest.Item, run: _Run) -> Session:
    trace = run.trace
    try:
        resolve_matcher(trace.match)  # a typo in match= fails when recording too, not first in CI
    except (TypeError, ValueError) as exc:
        raise _fail(f"rewind: @pytest.mark.{MARKER}({run.shown!r}): {exc}") from None
    if run.refreshing:
        from rewind.what_if.refresh import refresh_session

        return refresh_session(
            trace.path, save_as=run.target, match=trace.match, redact=trace.redact, normalize=trace.normalize
        )
    if run.recording:
        if run.mode == "rewrite":
            _remove_trace(trace.path)
        meta = {"pytest": {"nodeid": item.nodeid}}
        return record(run.target, meta=meta, redact=trace.redact, normalize=trace.normalize)
    return replay(
        trace.path,
        match=trace.match,
        require_full_consumption=trace.require_full_consumption,
        redact=trace.redact,
        normalize=trace.normalize,
        network=item.config.getoption("rewind_network", None) or trace.network,
        allow_hosts=trace.allow_hosts,
        policy=trace.policy,
    )


def _remove_trace(path: Path) -> None:
    path.unlink(missing_ok=True)
    shutil.rmtree(f"{path}.blobs", ignore_errors=True)


_scratch_path = scratch.scratch_path
_promote = scratch.promote
_discard = scratch.discard


def _plan(item: pytest.Item) -> _Run:
    if _DUPLICATE_KEY in item.stash:
        raise _fail(item.stash[_DUPLICATE_KEY])
    try:
        trace = golden_trace(item)
    except (TypeError, ValueError) as exc:
        raise _fail(f"rewind: {exc}") from None
    if trace is None:
        raise _fail(
            f"rewind: the {FIXTURE} fixture needs a golden trace; mark the test with "
            f"@pytest.mark.{MARKER}('traces/{getattr(item, 'originalname', item.name)}.rewind')."
        )
    mode = record_mode(item.config)
    recording = records_live(mode, trace)
    refreshing = refreshes(mode, trace)
    target = trace.path
    if refreshing or (recording and (mode != "rewrite" or trace.path.name.endswith(".gz"))):
        target = _scratch_path(trace.path)
    return _Run(
        trace=trace,
        shown=_show(item.config, trace.path),
        command=_record_command(item),
        recording=recording,
        mode=mode,
        target=target,
        refreshing=refreshing,
    )


def _missing_message(run: _Run) -> str:
    return (
        f"rewind: golden trace {run.shown} does not exist, so there is nothing to replay.\n"
        f"Record it (this runs the test live, against the real services) with:\n"
        f"    {run.command}\n"
        f"or record every missing golden trace with:\n"
        f"    pytest --rewind-record-mode=missing"
    )


def _open_message(run: _Run, exc: Exception) -> str:
    if run.recording:
        return f"rewind: cannot record golden trace {run.shown}: {exc}"
    return (
        f"rewind: cannot replay golden trace {run.shown}: {exc}\n"
        f"Re-record it (this runs the test live) with:\n    {run.command}"
    )


@pytest.fixture
def rewind_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    """The test's golden-trace session: a replay, or a recording under ``--rewind-record``.

    Entered here, in the test's context, so the test body, the asyncio tasks it
    starts and the fixtures that depend on this one all run inside it.
    """
    item = request.node
    for key in (_CALL_KEY, _ERROR_KEY):  # a rerun plugin may run the same item again
        if key in item.stash:
            del item.stash[key]
    run = _plan(item)
    item.stash[_RUN_KEY] = run
    if not run.recording and not run.trace.path.exists():
        run.outcome = "missing"
        raise _fail(_missing_message(run))
    session = _open_session(item, run)
    try:
        session.__enter__()
    except (RewindError, OSError) as exc:
        run.outcome = "unreadable"
        raise _fail(_open_message(run, exc)) from None
    run.session = session
    try:
        yield session  # a replay holds placeholder API keys while it is open (keyless CI)
    finally:
        _close(item, run, session)


def _close(item: pytest.Item, run: _Run, session: Session) -> None:
    error = item.stash.get(_ERROR_KEY, None)
    report = item.stash.get(_CALL_KEY, None)
    passed = report is not None and report.passed
    skipped = report is not None and report.skipped
    try:
        if error is not None:
            # Let the session know the run failed: it then skips the consumption check,
            # which would only repeat the real failure.
            session.__exit__(type(error), error, error.__traceback__)
        else:
            session.__exit__(None, None, None)
    except RewindError as exc:
        _settle(run, passed=False)
        message = str(exc).replace(str(run.trace.path), run.shown)
        hint = f"If the shorter run is intended, re-record the golden trace:\n    {run.command}"
        raise _fail(f"{message}\n{hint}") from None
    _settle(run, passed, skipped=skipped)
    blocked = session.network_blocked
    if passed and blocked:
        # The code caught the NetworkBlockedError and the test passed anyway: it still tried.
        raise _fail(
            f"{blocked[0]}\nThe code caught this error and the test went on to pass, but a replay must not "
            f"reach the network ({len(blocked)} connection(s) refused)."
        )


def _settle(run: _Run, passed: bool, *, skipped: bool = False) -> None:
    """Carry out what becomes of a recording once the test's outcome is known."""
    if run.refreshing:
        _settle_refresh(run, passed)
    elif not run.recording:
        run.outcome = "replayed"
    elif run.mode == "rewrite":
        if run.target != run.trace.path:
            _promote(run.target, run.trace.path)
        run.outcome = "recorded" if passed else "kept"
    elif passed:
        _promote(run.target, run.trace.path)
        run.outcome = "recorded"
    else:
        _discard(run.target)
        run.outcome = "skipped" if skipped else "discarded"


def _settle_refresh(run: _Run, passed: bool) -> None:
    """A passing refresh that changed the run replaces the golden, with a diff beside it."""
    from rewind.report import write_diff_report
    from rewind.storage.trace import Trace
    from rewind.what_if.refresh import divergence_of, html_diff_path, summarize

    if not passed or not run.target.exists():
        _discard(run.target)
        run.outcome = "unrefreshed"
        return
    golden, refreshed = Trace.load(run.trace.path), Trace.load(run.target)
    where = divergence_of(run.session) if run.session is not None else None
    report = summarize(golden, refreshed, shown=run.shown, divergence=where)
    if not report.changed:
        _discard(run.target)
        run.outcome = "replayed"
        return
    page = html_diff_path(run.trace.path)
    write_diff_report(golden, refreshed, page)
    _promote(run.target, run.trace.path)
    run.outcome = "refreshed"
    told = report.lines(None)[0].removeprefix(f"rewind: refreshed {run.shown}: ")
    run.detail = f"{told}; diff beside it: {page.name}"


def _failed_recording_note(run: _Run) -> str | None:
    """What ``_settle`` will do with the recording of a failed test, told in its report."""
    if run.refreshing:
        return f"rewind: the test failed while refreshing, so {run.shown} is unchanged."
    if not run.recording:
        return None
    if run.mode == "rewrite":
        return (
            f"rewind: the test failed; {run.shown} holds what this failing run recorded "
            "(--rewind-record-mode=rewrite keeps it)."
        )
    kept = "the golden trace is unchanged" if run.trace.path.exists() else "no golden trace was written"
    return (
        f"rewind: the test failed while recording, so the new recording was discarded and {kept} "
        f"({run.shown}). Use --rewind-record-mode=rewrite to keep the recording of a failing run."
    )


# --------------------------------------------------------------------------- reporting


def _divergence_message(run: _Run, raised: DivergenceError | None) -> str:
    """The first divergence, explained; ``raised`` is the one that reached pytest, if any."""
    first = run.divergences[0] if run.divergences else raised
    assert first is not None
    head, _, rest = str(first).partition("\n")
    generic = "rewind: replay diverged"
    if head.startswith(generic):
        head = f"rewind: replay of {run.shown} diverged{head[len(generic) :]}"
    else:
        head = f"rewind: replay of {run.shown}: {head}"
    lines = [head, rest] if rest else [head]
    if raised is None:
        lines.append(
            "The agent caught this DivergenceError and the test went on to pass, but a golden test "
            "must replay its trace exactly: whatever ran after the divergence was not the recorded run."
        )
    elif first is not raised:
        lines.append(
            f"The agent caught this DivergenceError and carried on; it diverged again at step {raised.step} "
            f"({raised.reason}), which failed the test."
        )
    lines.append(f"If the change is intended, re-record the golden trace:\n    {run.command}")
    return "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    run = pyfuncitem.stash.get(_RUN_KEY, None)
    try:
        result = yield
    except DivergenceError as error:
        if run is None:
            raise
        raise _fail(_divergence_message(run, error)) from None
    if run is not None and run.divergences:
        raise _fail(_divergence_message(run, None))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        return report
    if call.when == "call":
        # The fixture's teardown decides the recording's fate from these.
        item.stash[_CALL_KEY] = report
        if call.excinfo is not None:
            item.stash[_ERROR_KEY] = call.excinfo.value
    if report.failed and call.excinfo is not None:
        error = call.excinfo.value
        if isinstance(error, DivergenceError):
            # Raised outside the test body (by a fixture): same explanation, no traceback.
            report.longrepr = _divergence_message(run, error)
        elif run.divergences and not isinstance(error, _Failed):
            report.sections.append(("rewind: the replay diverged first", _divergence_message(run, run.divergences[0])))
    if call.when == "call" and report.failed:
        note = _failed_recording_note(run)
        if note is not None:
            report.sections.append(("rewind", note))
    if call.when == "teardown" and run.outcome:
        # Travels with the report (also from xdist workers) to the terminal summary.
        report.rewind = {"trace": run.shown, "outcome": run.outcome, "detail": run.detail}  # type: ignore[attr-defined]
    return report


_LABELS = {
    "recorded": "recorded",
    "replayed": "replayed",
    "discarded": "not saved (the test failed while recording)",
    "skipped": "not saved (the test was skipped or xfailed)",
    "kept": "recorded from a failing run",
    "refreshed": "refreshed",
    "unrefreshed": "not refreshed (the test failed; the golden is unchanged)",
    "missing": "missing",
    "unreadable": "unreadable",
}


class _Summary:
    """Collects what became of each golden trace, for the terminal summary.

    It reads the ``rewind`` attribute of teardown reports, so under pytest-xdist the
    controller, which runs no tests itself, still sees every worker's outcome.
    """

    def __init__(self) -> None:
        self.outcomes: list[dict[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        info = getattr(report, "rewind", None)
        if report.when == "teardown" and isinstance(info, dict):
            self.outcomes.append(info)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        counts = Counter(info.get("outcome", "") for info in self.outcomes)
        quiet = record_mode(config) == "none" and set(counts) <= {"replayed"} and terminalreporter.verbosity < 1
        if not self.outcomes or quiet:
            return
        parts = [f"{counts[key]} {label}" for key, label in _LABELS.items() if counts.get(key)]
        terminalreporter.write_sep("-", "rewind golden traces")
        terminalreporter.write_line(", ".join(parts))
        for info in self.outcomes:
            if info.get("outcome") in ("recorded", "kept", "discarded", "skipped", "refreshed", "unrefreshed"):
                detail = f" ({info['detail']})" if info.get("detail") else ""
                terminalreporter.write_line(f"  {_LABELS[info['outcome']]}: {info.get('trace')}{detail}")
