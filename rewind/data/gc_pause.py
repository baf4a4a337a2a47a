"""Pause Python's cyclic garbage collector while a reader builds many objects.

Parsing a trace creates hundreds of thousands of lists and dicts that all stay
alive. Each allocation counts towards the collector's thresholds, so a long parse
keeps triggering collections that walk everything built so far and free nothing:
on a 22 MB trace that is a quarter or more of ``Trace.load``'s time. What a trace
reader builds is acyclic (JSON values, events), so reference counting frees it
whatever the collector does, and pausing the collector for the parse loses nothing.

The collector's first collection afterwards walks what the parse built once. (Splicing
it into the oldest generation instead, with ``gc.freeze()``/``gc.unfreeze()``, saves
that walk but hides every young garbage cycle of the application from all but the rare
full collections: the chaos suite's fuzz run grew by 735 MiB.)

The collector is process-wide state: pauses nest and overlap across threads, and it is
switched back on only when the last pause ends, and only if it was on when the first
one began (an application that turned it off keeps it off).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_active = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the ``with`` block (see the module docstring)."""
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _was_enabled:
                gc.enable()
