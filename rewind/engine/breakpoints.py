"""``replay(break_at=N)``: pause in the agent's own code when step N has been served.

The step is served deep inside rewind (and, for SDK calls, inside the SDK and wrapt).
A plain ``breakpoint()`` there would open the debugger in rewind's internals, several
``up`` commands away from anything the user wrote. So:

- with the standard debugger (``PYTHONBREAKPOINT`` unset or ``pdb.set_trace``), pdb stops
  at the agent's next line, in the frame that made the call: the served value is already
  returned to it (and assigned, when the call was an assignment);
- with any other hook (``PYTHONBREAKPOINT=ipdb.set_trace``, a custom one) that hook is
  called as ``breakpoint()`` would, and ``up`` reaches the agent's frames;
- ``PYTHONBREAKPOINT=0`` disables the pause.

Either way one line on stderr says which step was served and where the agent is.
"""

from __future__ import annotations

import os
import pdb
import sys
from types import FrameType
from typing import TYPE_CHECKING

from .providers import PROVIDERS

if TYPE_CHECKING:
    from rewind.storage.trace import Event

#: Modules whose frames are plumbing between the agent and a served step, besides the
#: provider SDKs (each provider declares its own, ``ProviderSpec.plumbing``): rewind itself,
#: the wrapping and telemetry libraries, the HTTP clients and the standard library's call helpers.
PLUMBING = (
    "rewind",
    "instrumentors",
    "wrapt",
    "opentelemetry",
    "httpx",
    "httpcore",
    "requests",
    "urllib3",
    "aiohttp",
    "functools",
    "contextlib",
    "concurrent.futures",
    "threading",
)


def plumbing() -> tuple[str, ...]:
    """Every module root whose frames are plumbing: ``PLUMBING`` and every provider's SDK modules."""
    return PLUMBING + tuple(root for provider in PROVIDERS.values() for root in provider.plumbing)


def _plumbing(frame: FrameType, roots: tuple[str, ...]) -> bool:
    name = str(frame.f_globals.get("__name__", ""))
    return any(name == root or name.startswith(root + ".") for root in roots)


def agent_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above ``frame`` that belongs to the user's code."""
    roots = plumbing()
    while frame is not None and _plumbing(frame, roots):
        frame = frame.f_back
    return frame


def pause(event: Event, path: str) -> None:
    """Stop in the agent's frame (or call the configured hook) now that ``event`` was served."""
    hook = os.environ.get("PYTHONBREAKPOINT", "")
    if hook == "0":
        return
    frame = agent_frame(sys._getframe(1))
    where = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}()" if frame else "the agent"
    sys.stderr.write(
        f"rewind: break_at={event.seq}: step {event.seq} ({event.kind} {event.name!r}) was just served from "
        f"{path}; pausing in {where}\n"
    )
    sys.stderr.flush()
    standard = sys.breakpointhook is sys.__breakpointhook__ and hook in ("", "pdb.set_trace")
    if frame is None or not standard:
        sys.breakpointhook()
        return
    _stop_at_next_line(pdb.Pdb(), frame)


def _stop_at_next_line(debugger: pdb.Pdb, frame: FrameType) -> None:
    """``debugger.set_trace(frame)``, but stopping at ``frame``'s next line, not at once.

    ``set_trace`` would stop at the very next line executed anywhere, which is rewind's
    own code on the way back; ``set_next(frame)`` stops only when ``frame`` runs again.
    """
    debugger.reset()
    outer: FrameType | None = frame
    while outer is not None:
        outer.f_trace = debugger.trace_dispatch
        debugger.botframe = outer
        outer = outer.f_back
    debugger.set_next(frame)
    sys.settrace(debugger.trace_dispatch)


__all__ = ["PLUMBING", "agent_frame", "pause", "plumbing"]
