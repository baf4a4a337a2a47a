"""Runs at the start of a child of ``rewind record|replay -- CMD``.

The CLI puts this folder first on ``PYTHONPATH``. We first hand over to any other
``sitecustomize`` further down the path (``opentelemetry-instrument`` uses one, and
configures the application's tracer provider there, which rewind's spans should reach),
then instrument the installed provider SDKs and open the session described by the
``REWIND_*`` variables. A session that cannot start ends the process with status 2:
site.py would swallow the error and the run would go live.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # as site.py reports it; our session must still start
        sys.stderr.write(f"Error in sitecustomize ({spec.origin}); set PYTHONVERBOSE for traceback:\n")
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")


def _start() -> None:
    target = os.environ.get("REWIND_RECORD") or os.environ.get("REWIND_REPLAY")
    if not target:
        return
    try:
        from rewind.setup.bootstrap import autostart, owned_elsewhere
    except BaseException as exc:  # rewind is not importable by this interpreter
        where = sys.executable
        sys.stderr.write(f"rewind: cannot start the session: {exc} (is agent-rewind-otel installed for {where}?)\n")
        sys.stderr.flush()
        os._exit(2)
    try:
        if owned_elsewhere():
            _watch_unrecorded_child()
            return  # a subprocess of the program that owns this session
        autostart()
    except Exception as exc:
        from rewind.setup.bootstrap import fail_start

        fail_start(exc)


#: The import names of the SDKs rewind instruments, comma-separated: ``rewind record|replay``
#: derives them from the providers' declarations (``rewind.engine.providers``) and passes them
#: down, since learning them here would mean importing rewind in every process.
#: (``rewind._autostart.SDK_MODULES_VARIABLE`` names the same variable.)
SDK_MODULES_VARIABLE = "REWIND_SDK_MODULES"


def _sdk_modules() -> frozenset[str] | None:
    """The instrumented SDKs' modules as the CLI passed them; ``None`` when it did not."""
    listed = os.environ.get(SDK_MODULES_VARIABLE)
    return None if listed is None else frozenset(name for name in listed.split(",") if name)


def _watch_unrecorded_child() -> None:
    """At exit, a subprocess that used an SDK or rewind says its calls were not recorded.

    Importing rewind costs seconds, so it happens only when this process has something
    to say (rewind.nothing_recorded.report_unrecorded_child)."""
    import atexit

    mode = "record" if os.environ.get("REWIND_RECORD") else "replay"

    def report() -> None:
        sdks = _sdk_modules()  # unknown: ask rewind, which costs time but never misses a call
        if "rewind.engine.decorators" not in sys.modules and sdks is not None and sdks.isdisjoint(sys.modules):
            return
        try:
            from rewind.engine.nothing_recorded import report_unrecorded_child
        except Exception:
            return
        report_unrecorded_child(mode)

    atexit.register(report)


_chain()
_start()
