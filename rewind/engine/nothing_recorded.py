"""A recording that holds nothing says why, instead of a silent "recorded 0 steps".

Three ways a run records nothing, each said where it happens:

* the program never reached an instrumented SDK or a decorated function in the process
  that opened the session: ``why_nothing_recorded`` names the reason for the summary
  (no instrumented SDK installed, none imported, or imported but never called);
* the calls ran in a Python subprocess that inherited ``REWIND_RECORD``: rewind records
  only the process that opened the session, so ``watch_unrecorded_child`` makes such a
  subprocess say, at its exit, that its calls were not recorded (or, in a replay, ran
  live) and which command to record instead;
* the program failed before its first call (a ``SyntaxError``, an import error, a
  crash): ``mark_incomplete`` rewrites the header-only trace with an ``incomplete``
  reason, which ``rewind check``, ``rewind show`` and a replay report, so it never reads
  as a finished run that made no calls.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from typing import Any

from .providers import PROVIDERS

#: The header key of a trace whose program failed before its first call.
INCOMPLETE = "incomplete"

FAILED_BEFORE_FIRST_CALL = "the program failed before its first call"


def _installed_sdks() -> list[tuple[str, str]]:
    """``(provider, sdk module)`` for each instrumented SDK this interpreter can import."""
    return [(name, p.sdk) for name, p in sorted(PROVIDERS.items()) if p.installed()]


def _imported_sdks() -> list[str]:
    """The instrumented SDKs this process imported."""
    return sorted(name for name, p in PROVIDERS.items() if p.sdk in sys.modules)


def _decorated_here() -> int:
    decorators = sys.modules.get("rewind.engine.decorators")
    return int(getattr(decorators, "defined", 0) or 0)


def why_nothing_recorded() -> str:
    """Why this process recorded no step, and what to do (for the end-of-run summary)."""
    elsewhere = (
        "if the program starts the agent as a subprocess, that process is not recorded (rewind records "
        "only the Python process it starts): record the agent's own command"
    )
    if not _installed_sdks() and not _decorated_here():
        return (
            f"no instrumented SDK (openai, anthropic, …) is installed for {sys.executable}, and no "
            "@rewind.llm/tool/memory function was defined; install the SDK the agent uses in this "
            f"interpreter, or decorate its functions; {elsewhere}"
        )
    imported = _imported_sdks()
    if not imported and not _decorated_here():
        return (
            "the program never imported an instrumented SDK (openai, anthropic, …) nor defined a "
            f"@rewind.llm/tool/memory function in this process; {elsewhere}"
        )
    what = ", ".join(imported) if imported else "decorated functions"
    return f"the program has {what} but made no call through it in this process; {elsewhere}"


def watch_unrecorded_child(mode: str) -> None:
    """In a subprocess of the process that owns the session: say at exit if it had calls to make."""
    atexit.register(report_unrecorded_child, mode)


def report_unrecorded_child(mode: str) -> None:
    """Say on stderr that this subprocess's calls were not recorded (or replayed), if it made any."""
    owner = os.environ.get("REWIND_SESSION_PID", "").partition(":")[0] or "?"
    try:
        imported = _imported_sdks()
        decorated = _decorated_here()
    except Exception:  # interpreter shutdown: a hint is never worth a traceback
        return
    if not imported and not decorated:
        return
    what = ", ".join(imported) if imported else "@rewind-decorated functions"
    went = "were not recorded" if mode == "record" else "were not replayed (they ran live)"
    command = " ".join(sys.argv) if sys.argv and sys.argv[0] else sys.executable
    sys.stderr.write(
        f"rewind: this Python subprocess (pid {os.getpid()}: {command}) uses {what}, but its calls {went}: "
        f"rewind follows only the process that opened the session (pid {owner}), not the subprocesses it "
        f"starts. Run the agent's own command under rewind {mode} instead\n"
    )
    sys.stderr.flush()


def failure_of_the_program() -> BaseException | None:
    """The exception that ended the program (set before exit handlers run), if one did."""
    value = getattr(sys, "last_value", None)
    if value is None or isinstance(value, SystemExit):
        return None
    return value if isinstance(value, BaseException) else None


def mark_incomplete(path: str, cause: str) -> bool:
    """Rewrite a header-only trace at ``path`` as incomplete (True: it was marked).

    Only a trace holding nothing but its header is touched, and it is replaced whole (a
    temporary file renamed over it), so a reader never sees half a header."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1 << 20)
    except OSError:
        return False
    first, _, rest = raw.partition(b"\n")
    if rest.strip() or not first:
        return False  # it holds steps (or is not ours to judge)
    try:
        header: Any = json.loads(first)
    except ValueError:
        return False
    if not isinstance(header, dict) or header.get("format") != "agent-rewind" or INCOMPLETE in header:
        return False
    header[INCOMPLETE] = f"{FAILED_BEFORE_FIRST_CALL} ({cause})"
    temporary = f"{path}.incomplete-{os.getpid()}"
    try:
        with open(temporary, "wb") as fh:
            line = json.dumps(header, ensure_ascii=False, separators=(",", ":"))
            fh.write(line.encode("utf-8", "surrogatepass") + b"\n")
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
    return True


def incomplete_reason(header: Any) -> str | None:
    """The ``incomplete`` reason a trace header carries, if any."""
    reason = header.get(INCOMPLETE) if isinstance(header, dict) else None
    return reason if isinstance(reason, str) and reason else None


__all__ = [
    "FAILED_BEFORE_FIRST_CALL",
    "INCOMPLETE",
    "incomplete_reason",
    "mark_incomplete",
    "report_unrecorded_child",
    "watch_unrecorded_child",
    "why_nothing_recorded",
]
