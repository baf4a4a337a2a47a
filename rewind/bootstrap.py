"""Starting a session from the environment: zero-code record and replay.

    REWIND_RECORD=run.rewind opentelemetry-instrument python agent.py
    REWIND_REPLAY=run.rewind REWIND_MATCH=parallel opentelemetry-instrument python agent.py

``start_from_environment`` opens a process-wide session in the main thread's context
(asyncio tasks inherit it) and closes it at interpreter exit. It is called from the
``opentelemetry_post_instrument`` hook (so ``opentelemetry-instrument`` needs nothing
else), from every rewind instrumentor's ``_instrument`` (older OpenTelemetry releases
lack that hook), and from the ``rewind record``/``rewind replay`` CLI's child bootstrap.
Calling it again is harmless.

Variables:

| variable | meaning |
|---|---|
| ``REWIND_RECORD`` | record to this path |
| ``REWIND_REPLAY`` | replay this path offline |
| ``REWIND_FORK_AT`` | with ``REWIND_REPLAY``: fork at this step instead of replaying |
| ``REWIND_SAVE_AS`` | with ``REWIND_FORK_AT``: write the forked run here |
| ``REWIND_MATCH`` | replay/fork match strategy (``strict``, ``ordered``, ``fuzzy``, ``parallel``) |
| ``REWIND_REQUIRE_FULL_CONSUMPTION`` | ``1``: leftover recorded events fail the run |
| ``REWIND_META`` | JSON object stored in a recording's header |
| ``REWIND_STATUS_FILE`` | where to write a JSON summary at exit (used by the CLI) |
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from typing import Any

from .errors import DivergenceError, RewindError
from .session import Session, fork, record, replay

_lock = threading.Lock()
_session: Session | None = None
_started = False

TRUTHY = {"1", "true", "yes", "on"}


class EnvironmentConfigError(RewindError):
    """A ``REWIND_*`` variable has a value rewind cannot use."""


def session_from_environment(environ: dict[str, str] | None = None) -> Session | None:
    """The session the ``REWIND_*`` variables describe, not yet entered (or ``None``)."""
    env = os.environ if environ is None else environ
    record_path, replay_path = env.get("REWIND_RECORD"), env.get("REWIND_REPLAY")
    if record_path and replay_path:
        raise EnvironmentConfigError("set REWIND_RECORD or REWIND_REPLAY, not both")
    if record_path:
        return record(record_path, meta=_meta(env))
    if not replay_path:
        return None
    match = env.get("REWIND_MATCH") or "strict"
    fork_at = env.get("REWIND_FORK_AT")
    if fork_at:
        try:
            at = int(fork_at)
        except ValueError:
            raise EnvironmentConfigError(f"REWIND_FORK_AT must be a step number, not {fork_at!r}") from None
        return fork(replay_path, at=at, match=match, save_as=env.get("REWIND_SAVE_AS") or None)
    full = (env.get("REWIND_REQUIRE_FULL_CONSUMPTION") or "").lower() in TRUTHY
    return replay(replay_path, match=match, require_full_consumption=full)


def _meta(env: Any) -> dict[str, Any] | None:
    raw = env.get("REWIND_META")
    if not raw:
        return None
    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise EnvironmentConfigError(f"REWIND_META must be a JSON object ({exc})") from None
    if not isinstance(meta, dict):
        raise EnvironmentConfigError("REWIND_META must be a JSON object")
    return meta


def start_from_environment() -> Session | None:
    """Open the session the environment asks for, once per process."""
    global _session, _started
    with _lock:
        if _started:
            return _session
        _started = True
        session = session_from_environment()
        if session is None:
            return None
        session.__enter__()
        _session = session
    atexit.register(_finish, session)
    return session


def environment_session() -> Session | None:
    """The session opened by ``start_from_environment``, if any."""
    return _session


def _finish(session: Session) -> None:
    status: dict[str, Any] = {"mode": session.mode, "path": session.path, "cursor": session.cursor}
    failure: str | None = None
    try:
        session.__exit__(None, None, None)
    except RewindError as exc:
        failure = str(exc)
    divergences: list[DivergenceError] = list(getattr(session, "divergences", []))
    if divergences:
        failure = failure or str(divergences[0])
        status["divergence"] = {"step": divergences[0].step, "reason": divergences[0].reason}
    status["events"] = len(session.new_events) if session.mode == "record" else session.cursor
    status["error"] = failure
    status_file = os.environ.get("REWIND_STATUS_FILE")
    if status_file:
        with open(status_file, "w", encoding="utf-8") as fh:
            json.dump(status, fh)
    elif failure:
        sys.stderr.write(f"{failure}\n")


def autostart() -> Session | None:
    """Instrument every installed provider SDK, then open the environment's session."""
    try:
        from .integrations import auto_patch
    except ImportError:  # instrumentors not available in this install
        auto_patch = None
    if auto_patch is not None:
        auto_patch()
    return start_from_environment()
