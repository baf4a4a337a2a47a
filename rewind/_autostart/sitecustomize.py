"""Runs at the start of a child of ``rewind record|replay -- CMD``.

The CLI puts this folder first on ``PYTHONPATH``. We instrument the installed provider
SDKs, open the session described by the ``REWIND_*`` variables, then hand over to any
other ``sitecustomize`` further down the path (``opentelemetry-instrument`` uses one), so
wrapping an already-instrumented command keeps working.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _start() -> None:
    try:
        from rewind.bootstrap import autostart

        autostart()
    except Exception as exc:  # site.py would swallow it and the run would go live
        sys.stderr.write(f"rewind: could not start the session: {exc}\n")
        sys.stderr.flush()
        os._exit(2)


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_start()
_chain()
