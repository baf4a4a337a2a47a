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


#: The modules of the SDKs rewind instruments (rewind.integrations; a test keeps them equal).
SDK_MODULES = frozenset(
    {
        "openai",
        "anthropic",
        "litellm",
        "groq",
        "together",
        "fireworks",
        "mcp",
        "mistralai",
        "cohere",
        "google.genai",
        "xai_sdk",
        "botocore",
    }
)


def _watch_unrecorded_child() -> None:
    """At exit, a subprocess that used an SDK or rewind says its calls were not recorded.

    Importing rewind costs seconds, so it happens only when this process has something
    to say (rewind.nothing_recorded.report_unrecorded_child)."""
    import atexit

    mode = "record" if os.environ.get("REWIND_RECORD") else "replay"

    def report() -> None:
        if "rewind.engine.decorators" not in sys.modules and SDK_MODULES.isdisjoint(sys.modules):
            return
        try:
            from rewind.engine.nothing_recorded import report_unrecorded_child
        except Exception:
            return
        report_unrecorded_child(mode)

    atexit.register(report)


_chain()
_start()
