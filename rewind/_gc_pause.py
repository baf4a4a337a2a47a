"""Pause Python's cyclic garbage collector while a reader builds many objects.

Parsing a trace creates hundreds of thousands of lists and dicts that all stay
alive. Each allocation counts towards the collector's thresholds, so a long parse
keeps triggering collections that walk everything built so far and free nothing:
on a 22 MB trace that is a quarter or more of ``Trace.load``'s time. What a trace
reader builds is acyclic (JSON values, events), so reference counting frees it
whatever the collector does, and pausing the collector for the parse loses nothing.

The objects built are then moved to the oldest generation in one step (see
``_promote_young``). The collector is process-wide state: pauses nest and overlap across threads, and it
is switched back on only when the last pause ends, and only if it was on when the
first one began (an application that turned it off keeps it off).
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
                _promote_young()
                gc.enable()


def _promote_young() -> None:
    """Move what the pause built into the oldest generation without walking it.

    Re-enabled as it is, the collector's first collection would walk every object
    built during the pause (all still in the youngest generation) to move them on,
    costing a quarter of the parse again. ``freeze`` then ``unfreeze`` splices them
    into the oldest generation instead, where the next full collection (which walks
    everything anyway) is the first to look at them. Skipped when the application has
    frozen objects of its own (``unfreeze`` would thaw those too)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
