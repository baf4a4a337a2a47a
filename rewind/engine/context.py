"""The active session: which one a call in this thread or asyncio task belongs to.

A leaf of the engine: ``core`` reads it on every call, ``session`` sets it, and neither has
to import the other for it. Sessions live in a ``ContextVar``, so asyncio tasks created
inside one inherit it and threads start without it.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING

from rewind.errors import ThreadlessCallWarning

if TYPE_CHECKING:
    from .session import Session

ACTIVE: ContextVar[Session | None] = ContextVar("rewind_session", default=None)
#: Every session open in the process, whatever context it is active in.
OPEN: weakref.WeakSet[Session] = weakref.WeakSet()


def current_session() -> Session | None:
    """The session active in this context (thread or asyncio task), or ``None``."""
    return ACTIVE.get()


def warn_if_threadless(kind: str, name: str) -> None:
    """Warn once per session when a call escapes it by running in another thread."""
    if not OPEN:
        return
    here = threading.current_thread()
    for session in list(OPEN):
        if session._thread is not here and not session._warned_threadless:
            session._warned_threadless = True
            warnings.warn(
                f"rewind: {kind} call {name!r} ran in thread {here.name!r} outside the active "
                f"{session.mode} session, so it was neither recorded nor replayed (it ran live). "
                "Threads start with an empty context: call rewind.patch_thread_pool() for "
                "ThreadPoolExecutor workers, or run the function via contextvars.copy_context().run.",
                ThreadlessCallWarning,
                stacklevel=4,
            )
