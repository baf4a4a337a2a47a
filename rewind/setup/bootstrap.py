"""Starting a session from the environment: zero-code record and replay.

    REWIND_RECORD=run.rewind opentelemetry-instrument python agent.py
    REWIND_REPLAY=run.rewind REWIND_MATCH=parallel opentelemetry-instrument python agent.py

``start_from_environment`` opens a process-wide session in the main thread's context
(asyncio tasks inherit it) and closes it at interpreter exit. ``opentelemetry-instrument``
calls it through the ``opentelemetry_post_instrument`` entry point (``post_instrument``),
after its own configuration and every instrumentor ran; the ``rewind record``/``rewind
replay`` CLI's child bootstrap calls it through ``autostart``. Calling it again is
harmless.

The first process that opens the session owns it (``REWIND_SESSION_PID``): Python
subprocesses it starts run without that session instead of writing a second one over the
same file (one given another trace path opens its own), while a program it ``exec``s
(``opentelemetry-instrument`` does, and so do other launchers) keeps the process id and
so the session.

Variables:

| variable | meaning |
|---|---|
| ``REWIND_RECORD`` | record to this path |
| ``REWIND_REPLAY`` | replay this path offline |
| ``REWIND_MATCH`` | replay/fork match strategy (``strict``, ``ordered``, ``fuzzy``, ``parallel``) |
| ``REWIND_REQUIRE_FULL_CONSUMPTION`` | ``1``: leftover recorded events fail the replay |
| ``REWIND_TOLERATE_DRIFT`` | ``1``: an ``ordered`` replay that drifted on every step still succeeds |
| ``REWIND_BREAK_AT`` | replay: pause in the debugger when this step is served |
| ``REWIND_FORK_AT`` | with ``REWIND_REPLAY``: fork at this step instead of replaying |
| ``REWIND_SAVE_AS`` | with ``REWIND_FORK_AT``: write the forked run here |
| ``REWIND_EDIT`` | with ``REWIND_FORK_AT``: a JSON file with the changed outcome of that step (edit and continue) |
| ``REWIND_THEN`` | with ``REWIND_EDIT``: ``live`` (default) or ``replay`` what still matches after the edit |
| ``REWIND_REFRESH`` | ``1`` with ``REWIND_SAVE_AS``: replay to the first divergence, then live (``rewind refresh``) |
| ``REWIND_FAULT`` | with ``REWIND_REPLAY``: one fault to inject (JSON, written by ``rewind mutate``) |
| ``REWIND_LIVE`` | with ``REWIND_REPLAY``: a hybrid replay; these calls run live (``llm,tool:search``) |
| ``REWIND_NEVER_LIVE`` | with ``REWIND_REPLAY``: calls that must never run for real (comma-separated selectors) |
| ``REWIND_ON_MISSING`` | hybrid replay: ``error`` (default) or ``live`` for a served call with no recorded answer |
| ``REWIND_MODEL_MAP`` | hybrid replay: ``recorded=live`` model pairs (comma-separated) for live LLM calls |
| ``REWIND_NETWORK`` | replay: ``block`` refuses every connection not to loopback or ``REWIND_ALLOW_HOSTS`` |
| ``REWIND_ALLOW_HOSTS`` | with ``REWIND_NETWORK=block``: comma-separated hosts that stay reachable |
| ``REWIND_META`` | record: JSON object stored in the trace header |
| ``REWIND_EXTERNALIZE`` | record: byte threshold for content-addressed blobs |
| ``REWIND_REDACT`` | ``module:function`` scrubbing stored payloads |
| ``REWIND_NORMALIZE`` | ``module:function`` dropping volatile fields from call identity |
| ``REWIND_STATUS_FILE`` | where to write a JSON summary at exit (used by the CLI) |
| ``REWIND_QUIET`` | ``1``: no summary line on stderr at exit (failures are still reported) |
| ``REWIND_EXIT_ON_DIVERGENCE`` | ``0``: a failed replay keeps the program's exit status (default: exit 1) |

Every value is checked when the session opens (``rewind.setup.environment`` reads them
into options; this module builds the session from those); one rewind cannot use stops the
program before it runs (one line, status 2). Without ``REWIND_STATUS_FILE`` (the CLI's channel) a
replay or fork that diverged, even where the program caught the ``DivergenceError``, or
that left steps unserved under ``REWIND_REQUIRE_FULL_CONSUMPTION=1``, ends the process
with status 1 when the program itself would have exited 0, as ``rewind replay`` does.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from rewind.data import dialect
from rewind.engine import placeholder_keys
from rewind.engine.session import Session, record, replay
from rewind.errors import DivergenceError, RewindError, UnconsumedEventsWarning
from rewind.inspection import summary
from rewind.storage.trace_file import open_for_writing
from rewind.what_if.fork import fork

from . import session_owner
from .environment import EnvironmentConfigError, ExitOptions, SessionOptions, parse_exit, parse_session, target

_lock = threading.Lock()
_session: Session | None = None
_started = False


#: ``<process id>:<start time>:<trace path>`` of the process that owns the environment's session.
OWNER = session_owner.OWNER

#: The status the process ends with when the session failed and the program did not
#: (``REWIND_EXIT_ON_DIVERGENCE``); set at exit by ``_finish``, applied by the start-up hook.
exit_status = 0
#: True when the start-up hook registered the handler that applies ``exit_status`` after
#: every other exit handler (it is the first one registered in the process, so it runs last).
exit_status_applied_late = False


def owned_elsewhere(environ: Mapping[str, str] | None = None) -> bool:
    """True in a subprocess of the program that owns this same session.

    A subprocess given a session of its own (another trace path) is not held back; a
    claim on this session by a process that is not a running ancestor (a stale or copied
    ``REWIND_SESSION_PID``) is an ``EnvironmentConfigError``, never a reason to run live.
    """
    env = os.environ if environ is None else environ
    try:
        return session_owner.owned_elsewhere(env, target(env))
    except session_owner.ForeignOwnerError as exc:
        raise EnvironmentConfigError(str(exc)) from None


def session_from_environment(environ: Mapping[str, str] | None = None) -> Session | None:
    """The session the ``REWIND_*`` variables describe, not yet entered (or ``None``)."""
    options = parse_session(os.environ if environ is None else environ)
    return None if options is None else session_from_options(options)


def session_from_options(options: SessionOptions) -> Session:
    """The session ``options`` describe, not yet entered.

    Every value was checked when it was read; what is left to fail here is what only
    opening the trace tells: an edit or a fault that does not fit its step.
    """
    common: dict[str, Any] = {"match": options.match, "redact": options.redact, "normalize": options.normalize}
    if options.kind == "record":
        return record(
            options.path,
            meta=options.meta,
            redact=options.redact,
            normalize=options.normalize,
            externalize=options.externalize,
        )
    if options.kind == "replay":
        return replay(
            options.path,
            require_full_consumption=options.require_full_consumption,
            break_at=options.break_at,
            network=options.network,
            allow_hosts=options.allow_hosts,
            save_as=options.save_as,
            policy=options.policy,
            tolerate_drift=options.tolerate_drift,
            **common,
        )
    if options.kind == "refresh":
        from rewind.what_if.refresh import refresh_session

        assert options.save_as is not None
        return refresh_session(options.path, save_as=options.save_as, **common)
    assert options.kind in ("fork", "edit", "fault")
    return _what_if_session(options, common)


def _what_if_session(options: SessionOptions, common: dict[str, Any]) -> Session:
    """A fork, an edited fork or a fault: their errors are about ``REWIND_EDIT``/``REWIND_FAULT``."""
    from rewind.what_if.edits import EditError
    from rewind.what_if.faults import FaultError, fault_session
    from rewind.what_if.fork import edit_fork

    try:
        if options.kind == "fault":
            assert options.fault is not None
            return fault_session(
                options.path, options.fault, network=options.network, allow_hosts=options.allow_hosts, **common
            )
        assert options.fork_at is not None
        if options.kind == "edit":
            return edit_fork(
                options.path,
                at=options.fork_at,
                edit=options.edit,
                then=options.then,
                save_as=options.save_as,
                source=options.edit_file,
                policy=options.policy,
                **common,
            )
    except (EditError, FaultError) as exc:  # the step the edit or the fault names does not fit it
        raise EnvironmentConfigError(str(exc)) from None
    return fork(options.path, at=options.fork_at, save_as=options.save_as, policy=options.policy, **common)


def start_from_environment() -> Session | None:
    """Open the session the environment asks for, once per process; closed at exit."""
    global _session, _started
    with _lock:
        if _started:
            return _session
        if owned_elsewhere():
            _started = True
            return None
        # REWIND_QUIET & co. are read at exit: checked now, where a bad value stops the program.
        at_exit = parse_exit(os.environ) if target(os.environ) else ExitOptions()
        options = parse_session(os.environ)
        session = None if options is None else session_from_options(options)
        _started = True
        if session is None:
            return None
        if session.mode == "replay":
            placeholder_keys.fill()  # SDK clients refuse to construct without a key, even offline
        # Hints name the CLI's options under `rewind replay`, the variables otherwise.
        dialect.CURRENT.set("cli" if at_exit.status_file else "env")
        session.__enter__()
        _session = session
        os.environ[OWNER] = session_owner.claim(target(os.environ))
    # weakref.finalize closes the trace file's read handles from an atexit hook it registers
    # on first use. Registering it now makes it run after _finish (atexit is last-in,
    # first-out), which still reads recorded steps back from the file.
    weakref.finalize(_finish, int)
    atexit.register(_finish, session, at_exit)
    return session


def environment_session() -> Session | None:
    """The session opened by ``start_from_environment``, if any."""
    return _session


def environment_started() -> bool:
    """True once ``start_from_environment`` ran in this process (whatever it decided)."""
    return _started


def post_instrument() -> None:
    """The ``opentelemetry_post_instrument`` hook: open the session, or stop the program.

    ``opentelemetry-instrument`` logs and swallows a failing hook, which would let a
    run that asked for a replay go live: a session that cannot start ends the process
    with a one-line error (status 2) instead.
    """
    try:
        session = start_from_environment()
    except Exception as exc:
        fail_start(exc)
        return
    if session is not None and session.mode != "record":
        # OTEL_PYTHON_DISABLED_INSTRUMENTATIONS may leave an SDK unhooked: fine for a
        # recording (its calls go unrecorded), but a replay would send them to the service.
        instrument_on_import()


def fail_start(exc: BaseException) -> None:
    """Report a session that could not start, in one line, and end the process (status 2)."""
    sys.stderr.write(f"rewind: cannot start the session: {exc}\n")
    sys.stderr.flush()
    os._exit(2)  # still inside interpreter start-up: nothing to clean up yet


def _finish(session: Session, at_exit: ExitOptions) -> None:
    status_file = at_exit.status_file
    status: dict[str, Any] = {"mode": session.mode, "path": session.path}
    failure: str | None = None
    # At exit a warning's source line (this function) tells the user nothing: say it plainly.
    # Read before the session closes: a written event reads its body back from the open file.
    failed = _failed_steps(session)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnconsumedEventsWarning)
        try:
            session.__exit__(None, None, None)
        except RewindError as exc:
            failure = str(exc)
    divergences: list[DivergenceError] = list(getattr(session, "divergences", []))
    # A divergence that ended the program was printed with its traceback already.
    ended_program = bool(divergences) and getattr(sys, "last_value", None) is divergences[0]
    if divergences:
        # The first divergence is the cause; leftover events follow from it.
        failure = str(divergences[0])
        status["divergence"] = {"step": divergences[0].step, "reason": divergences[0].reason}
        status["reported"] = ended_program
    else:
        for warning in caught:
            sys.stderr.write(f"{dialect.translate(str(warning.message))}\n")
    blocked = list(getattr(session, "network_blocked", []))
    if blocked and not failure and getattr(sys, "last_value", None) is not blocked[0]:
        # The program caught the NetworkBlockedError and went on: it still tried.
        failure = (
            f"{blocked[0]} The program caught the error and went on ({len(blocked)} connection(s) refused); "
            "a replay with the network blocked must not try to reach it."
        )
    if failure:
        failure = dialect.translate(failure)
    if blocked:
        status["network_blocked"] = [f"{error.host}:{error.port}" for error in blocked]
    status["served"] = session.cursor
    live_from = getattr(session.matcher, "live_from", None)
    if isinstance(live_from, int):
        # Where a fork that replays while requests match (a refresh) went live, and why.
        status["live_from"] = live_from
        divergence = getattr(session.matcher, "divergence", None)
        if isinstance(divergence, DivergenceError):
            status["live_because"] = {"step": divergence.step, "reason": divergence.reason}
    status["recorded"] = len(session.new_events)
    status["failed"] = failed
    status["error"] = failure
    if failure and session.mode != "record" and not status_file and at_exit.exit_on_divergence:
        _fail_exit_status()
    if session.mode == "record" and not session.new_events:
        status.update(_nothing_recorded(session.path))
    if status_file:
        try:
            fd = open_for_writing(status_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, what="status file")
            with open(fd, "w", encoding="utf-8") as fh:
                json.dump(status, fh)
            return
        except (OSError, RewindError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            sys.stderr.write(f"rewind: cannot write the status file {status_file} ({reason})\n")
    if failure and not ended_program:
        sys.stderr.write(failure if failure.startswith("rewind:") else f"rewind: {failure}")
        sys.stderr.write("\n")
    elif not failure and not at_exit.quiet:
        # The line `rewind record|replay` prints, so a zero-code run says what it did too.
        sys.stderr.write(_summary_line(session, status) + "\n")


def _fail_exit_status() -> None:
    """Make the process exit 1 for a failed replay, unless the program failed already."""
    global exit_status
    if getattr(sys, "last_value", None) is not None:
        return  # it died of an exception: its status is 1 already
    exit_status = 1
    if not exit_status_applied_late:
        apply_exit_status()  # no start-up hook to do it after the other exit handlers


def apply_exit_status() -> None:
    """End the process with ``exit_status`` if a failed session set one (the last exit handler).

    An exit handler cannot change the status the interpreter returns, so this one ends
    the process itself, after flushing the standard streams.
    """
    if not exit_status:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(exit_status)


def _nothing_recorded(path: str) -> dict[str, str]:
    """Why a recording holds no step: ``{"incomplete": ...}`` when the program died before its
    first call (the trace is marked so), else ``{"nothing": ...}`` (rewind.nothing_recorded)."""
    from rewind.engine import nothing_recorded

    try:
        died = nothing_recorded.failure_of_the_program()
        if died is not None:
            cause = f"{type(died).__name__}: {died}"
            if nothing_recorded.mark_incomplete(path, cause):
                return {"incomplete": f"{nothing_recorded.FAILED_BEFORE_FIRST_CALL} ({cause})"}
        return {"nothing": nothing_recorded.why_nothing_recorded()}
    except Exception:  # a hint is never worth breaking the exit
        return {}


def _failed_steps(session: Session) -> list[dict[str, Any]]:
    """The steps of this run that raised: ``{"step", "kind", "name", "error"}`` each."""
    failed = []
    for event in session.new_events:
        if not event.ok:
            try:
                error = event.error if isinstance(event.error, dict) else {}
            except Exception:  # a summary detail: never let it break the exit
                error = {}
            kind = error.get("qualname") or error.get("type")
            failed.append({"step": event.seq, "kind": event.kind, "name": event.name, "error": kind})
    return failed


def _summary_line(session: Session, status: Mapping[str, Any]) -> str:
    shown = session.path
    if session.mode == "record":
        return summary.recorded(status, shown)
    if session.mode == "fork" and (getattr(session, "_provenance", None) or {}).get("refresh"):
        return summary.refreshed(status, shown, getattr(session, "_save_as", None))
    if session.mode == "fork":
        at = int(getattr(session, "_fork_at", 0) or 0)
        return summary.forked(status, shown, at, getattr(session, "_save_as", None))
    return summary.replayed(status, shown, len(session.trace.events), zero_code=True)


def autostart() -> Session | None:
    """Instrument each installed provider SDK as the program imports it, then open the session.

    Importing every SDK up front would cost seconds at start-up (and memory) for SDKs the
    program never uses; an import hook patches each one the moment it is imported.
    """
    instrument_on_import()
    return start_from_environment()


_hooked = False


def instrument_on_import() -> None:
    """Patch every installed provider SDK when it is imported (at once if it already is); once."""
    global _hooked
    with _lock:
        if _hooked:
            return
        _hooked = True
    try:
        from . import integrations
    except ImportError:  # instrumentors not available in this install
        return
    import wrapt

    from rewind.engine.providers import PROVIDERS

    for name in integrations.providers():
        provider = PROVIDERS[name]
        if provider.installed():
            wrapt.register_post_import_hook(_patch_on_import(name), provider.sdk)


def _patch_on_import(name: str) -> Callable[[Any], None]:
    def hook(module: Any) -> None:
        from .integrations import auto_patch

        try:
            auto_patch(name)
        except Exception as exc:
            session = _session
            if session is not None and session.mode == "replay":
                # Its calls would reach the real service in a run that asked for none.
                sys.stderr.write(
                    f"rewind: cannot replay: instrumenting {name} failed ({type(exc).__name__}: {exc}), so its "
                    "calls would run live; the program was stopped. Reinstall agent-rewind-otel, or unset "
                    "REWIND_REPLAY to run live on purpose\n"
                )
                sys.stderr.flush()
                os._exit(2)
            # Recording: never break the program's import; say so, and let it run.
            sys.stderr.write(f"rewind: could not instrument {name} ({type(exc).__name__}: {exc}); its calls run live\n")

    return hook
