"""Carrying the session into ``ThreadPoolExecutor`` workers.

Worker threads start with an empty context, so calls made there would miss the
session. ``patch_thread_pool`` makes ``submit`` (and so ``map``) run each task in a
copy of the submitting thread's context. Reference-counted: the original ``submit``
comes back when the last caller unpatches.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_lock = threading.Lock()
_refcount = 0
_original_submit: Callable[..., Future[Any]] | None = None


def _context_submit(self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
    assert _original_submit is not None
    context = contextvars.copy_context()
    return _original_submit(self, functools.partial(context.run, fn), *args, **kwargs)


def patch_thread_pool() -> Callable[[], None]:
    """Copy the submitter's context into ThreadPoolExecutor workers; returns ``unpatch``."""
    global _refcount, _original_submit
    with _lock:
        if _refcount == 0:
            _original_submit = ThreadPoolExecutor.submit
            # Monkeypatching a method: typeshed's ParamSpec signature of submit cannot be restated here.
            ThreadPoolExecutor.submit = _context_submit  # type: ignore[method-assign,assignment]
        _refcount += 1
    done = False

    def unpatch() -> None:
        global _refcount, _original_submit
        nonlocal done
        with _lock:
            if done:
                return
            done = True
            _refcount -= 1
            if _refcount == 0 and _original_submit is not None:
                ThreadPoolExecutor.submit = _original_submit  # type: ignore[method-assign]
                _original_submit = None

    return unpatch
