"""Pause Python's cyclic garbage collector while a reader builds many objects.

Parsing a trace creates hundreds of thousands of lists and dicts that all stay
alive. Each allocation counts towards the collector's thresholds, so a long parse
keeps triggering collections that walk everything built so far and free nothing:
on a 22 MB trace that is a quarter or more of ``Trace.load``'s time. What a trace
reader builds is acyclic (JSON values, events), so reference counting frees it
whatever the collector does, and pausing the collector for the parse loses nothing.

Re-enabled as it is, the collector's first collection would then walk every object
the parse built (all still in the youngest generation) only to move them on: a fifth
of ``Trace.load`` again. So a pause that ends normally splices what was built into
the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``), where only a full
collection, which walks everything anyway, looks at them. The splice would also
carry along the application's young objects, and with them any garbage cycle among
them, out of reach of all but the rare full collections (a fuzz run of a thousand
failing loads once grew by 735 MiB that way). Hence the first pause collects the
young generations before it starts (a small walk: at most a few thousand objects),
and a pause left by an exception, whose tracebacks are cycles, does not splice.
Garbage another thread makes while a read runs is spliced along with it; it waits
for a full collection. Nothing is spliced when the application has frozen objects
of its own (``unfreeze`` would thaw them).

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
_splice = False


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the ``with`` block (see the module docstring)."""
    global _active, _was_enabled, _splice
    if gc.isenabled() and gc.get_freeze_count() == 0:
        # Outside the lock: a finalizer this collection runs may itself read a trace.
        gc.collect(1)
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            _splice = _was_enabled and gc.get_freeze_count() == 0
            gc.disable()
        _active += 1
    failed = True
    try:
        yield
        failed = False
    finally:
        with _lock:
            _active -= 1
            if failed:
                _splice = False
            if _active == 0 and _was_enabled:
                if _splice:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
