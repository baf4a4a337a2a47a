"""Which process owns the environment's session: ``REWIND_SESSION_PID``.

The process that opens a session from ``REWIND_RECORD``/``REWIND_REPLAY`` sets
``REWIND_SESSION_PID=<pid>:<start>:<trace path>`` so that the Python subprocesses it starts
run without that session instead of writing a second one over the same file. Trusting
the variable blindly would let a stale or copied value (``REWIND_SESSION_PID=1:run.rewind``
exported in a shell or a CI file) turn a replay into a live run, silently. So a claim is
honoured only when it names a running ancestor of this process that started at ``<start>``
(its start time in clock ticks, from ``/proc``); where ``/proc`` is missing it must name
the parent process. A claim on this session that fails those checks is an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: The variable, set by the owner for its subprocesses.
OWNER = "REWIND_SESSION_PID"
# How far up the process tree an owner may be (a shell and a launcher or two in between).
_MAX_DEPTH = 32


class ForeignOwnerError(Exception):
    """``REWIND_SESSION_PID`` claims this session for a process that did not open it."""


def claim(target: str) -> str:
    """The value an owner of the session on ``target`` sets for its subprocesses."""
    pid = os.getpid()
    return f"{pid}:{_start_time(pid) or ''}:{target}"


def owned_elsewhere(env: Mapping[str, str], target: str) -> bool:
    """True when a verified ancestor owns the session on ``target`` (this is its subprocess).

    A claim on another trace path is not ours to judge (this process opens its own
    session); a claim on ``target`` that names no running ancestor raises ``ForeignOwnerError``.
    """
    raw = env.get(OWNER) or ""
    if not raw or not target:
        return False
    pid_text, start, path = _parse(raw)
    if path != target and raw.partition(":")[2] != target:
        return False
    if pid_text == str(os.getpid()):
        return False  # this process opened it, then exec'd (opentelemetry-instrument does)
    if pid_text.isdigit() and path == target and _is_owner_ancestor(int(pid_text), start):
        return True
    raise ForeignOwnerError(
        f"{OWNER}={raw} claims this session for a process that did not start this one (rewind sets it "
        "for the subprocesses of the process that opened the session, so they stay out of it); it is "
        f"stale or copied from another run. Unset {OWNER}"
    )


def _parse(raw: str) -> tuple[str, str, str]:
    pid, _, rest = raw.partition(":")
    start, _, path = rest.partition(":")
    return pid, start, path


def _is_owner_ancestor(pid: int, start: str) -> bool:
    if not os.path.isdir("/proc/self"):
        return pid == os.getppid() and not start
    if not start or _start_time(pid) != start:
        return False
    current = os.getpid()
    for _ in range(_MAX_DEPTH):
        parent = _parent(current)
        if parent is None or parent == current:
            return False
        if parent == pid:
            return True
        current = parent
    return False


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    return text[text.rfind(")") + 2 :].split()


def _parent(pid: int) -> int | None:
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 2 or not fields[1].isdigit():
        return None
    return int(fields[1])


def _start_time(pid: int) -> str | None:
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    return fields[19]  # field 22 of /proc/<pid>/stat: start time after boot, in clock ticks
