"""Interpreter start-up: ``REWIND_RECORD`` / ``REWIND_REPLAY`` mean the same in every Python.

The installed ``zz_agent_rewind_otel.pth`` imports this module at start-up, only when one
of those variables is set (the check costs one environment lookup otherwise). Then:

- under ``rewind record|replay -- CMD`` nothing happens here: the CLI's own
  ``sitecustomize`` (beside this file) opens the session;
- under ``opentelemetry-instrument``, OpenTelemetry's ``sitecustomize`` runs now, so its
  configuration and rewind's ``opentelemetry_post_instrument`` hook run first. If that
  start-up failed (an exporter that is not installed, a typo in ``OTEL_*_EXPORTER``),
  OpenTelemetry logs the error and carries on without loading any instrumentor: the
  program would run live. It ends here instead, with status 2 and what to set;
- under plain ``python`` (and any other ``sitecustomize``, which runs first), the SDKs
  are instrumented as they are imported and the session opens, as the CLI does.

A session that cannot open ends the process with status 2 before the program runs.

``REWIND_GUARD_NETWORK`` (set for its children by a process holding the
``network="block"`` guard, see ``rewind._guard_children``) also runs this hook: the
guard is installed before anything else, session or not.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys
from types import ModuleType

#: Programs that only launch another one: the session belongs to the program they start.
LAUNCHERS = frozenset({"rewind", "opentelemetry-instrument", "opentelemetry-bootstrap"})

_OTEL_FOLDER = os.path.join("opentelemetry", "instrumentation", "auto_instrumentation")
_HERE = os.path.dirname(os.path.abspath(__file__))


def requested() -> str:
    """The variable asking for a session (``REWIND_RECORD``/``REWIND_REPLAY``), or ``""``."""
    for name in ("REWIND_RECORD", "REWIND_REPLAY"):
        if os.environ.get(name):
            return name
    return ""


def _on_path(folder: str) -> bool:
    return any(os.path.abspath(p or os.curdir) == folder for p in sys.path)


class _Captured(logging.Handler):
    """Holds what OpenTelemetry's start-up logs, to name its error in our one line.

    A handler on the logger stops Python's last-resort printing, so records are passed on
    to it as they come (warnings) or afterwards (errors, unless rewind reports them itself).
    """

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.error: BaseException | None = None
        self.held: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            if record.exc_info and record.exc_info[1] is not None and self.error is None:
                self.error = record.exc_info[1]
            self.held.append(record)
        else:
            _last_resort(record)

    def pass_on(self) -> None:
        for record in self.held:
            _last_resort(record)


def _last_resort(record: logging.LogRecord) -> None:
    handler = logging.lastResort
    if handler is not None and record.levelno >= handler.level:
        handler.handle(record)


def _run_sitecustomize() -> ModuleType | None:
    """Run the ``sitecustomize`` site.py would run later (site.py then finds it imported)."""
    if "sitecustomize" in sys.modules:
        return sys.modules["sitecustomize"]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # reported the way site.py reports it; rewind's checks still run
        sys.stderr.write(f"Error in sitecustomize ({spec.origin}); set PYTHONVERBOSE for traceback:\n")
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
    return module


def _is_opentelemetry(module: ModuleType | None) -> bool:
    origin = getattr(module, "__file__", None) or ""
    return os.path.dirname(os.path.abspath(origin)).endswith(_OTEL_FOLDER) if origin else False


def opentelemetry_failed_message(variable: str, error: BaseException | None) -> str:
    """Why the program was stopped under ``opentelemetry-instrument``, and what to set."""
    cause = f" ({type(error).__name__}: {error})" if error is not None else " (see its log above)"
    going = "called the real services" if variable == "REWIND_REPLAY" else "gone unrecorded"
    return (
        f"rewind: cannot start the session: OpenTelemetry's start-up failed{cause}, so no instrumentor "
        f"loaded and the run would have {going}; the program did not run. Fix the OTEL_* setting it names: "
        "OTEL_TRACES_EXPORTER=console or none (OTEL_METRICS_EXPORTER/OTEL_LOGS_EXPORTER too), or install the "
        "exporter it asks for (pip install opentelemetry-exporter-otlp); or run without opentelemetry-instrument, "
        f"e.g. {variable}={os.environ.get(variable, 'run.rewind')} python agent.py"
    )


def _inherit_network_guard() -> None:
    """A child of a ``network="block"`` replay holds the guard before its program runs."""
    if not os.environ.get("REWIND_GUARD_NETWORK"):
        return
    try:
        from rewind.engine.network_guard import inherit

        inherit()
    except Exception as exc:  # the program must not run unguarded
        sys.stderr.write(
            f"rewind: cannot install the network guard this process inherits from a network='block' replay "
            f"({type(exc).__name__}: {exc}); the program did not run\n"
        )
        sys.stderr.flush()
        os._exit(2)


def run() -> None:
    """Open the session the environment asks for, or end the process (status 2)."""
    _inherit_network_guard()
    variable = requested()
    if not variable or os.path.basename(sys.argv[0] if sys.argv else "") in LAUNCHERS:
        return
    if _on_path(_HERE):
        return  # a child of `rewind record|replay`: its sitecustomize opens the session
    from rewind.setup import bootstrap
    from rewind.setup.bootstrap import autostart, environment_started, fail_start, owned_elsewhere

    # The start-up hook registered the exit handler that applies a failed replay's status.
    bootstrap.exit_status_applied_late = True
    try:
        if owned_elsewhere():
            from rewind.engine.nothing_recorded import watch_unrecorded_child

            watch_unrecorded_child(variable.removeprefix("REWIND_").lower())
            return  # a subprocess of the program that owns this session
    except Exception as exc:  # a stale or copied REWIND_SESSION_PID
        fail_start(exc)
    captured = _Captured()
    otel_logger = logging.getLogger("opentelemetry.instrumentation.auto_instrumentation")
    otel_logger.addHandler(captured)
    try:
        module = _run_sitecustomize()
    finally:
        otel_logger.removeHandler(captured)
    if _is_opentelemetry(module):
        # Its post_instrument hook opens the session; it never ran if start-up failed.
        if not environment_started():
            # Our line names OpenTelemetry's error: its traceback would only bury it.
            sys.stderr.write(opentelemetry_failed_message(variable, captured.error) + "\n")
            sys.stderr.flush()
            os._exit(2)
        captured.pass_on()
        return
    captured.pass_on()
    try:
        autostart()
    except Exception as exc:
        fail_start(exc)
