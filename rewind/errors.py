"""Every error and warning rewind raises or emits.

Errors are part of the interface: each one says what happened, where (step, file,
line) and what to do about it.
"""

from __future__ import annotations

from typing import Any


class RewindError(Exception):
    """Base class for all rewind errors.

    Every rewind error survives ``pickle`` and ``copy`` (so it crosses a process pool or
    a pytest-xdist worker): subclasses whose ``__init__`` takes keyword arguments rebuild
    from their message and attributes rather than from ``args``.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        if type(self).__init__ is Exception.__init__:
            return super().__reduce__()  # type: ignore[return-value]  # a tuple for exceptions
        return (_rebuild, (type(self), self.args, dict(vars(self))))


def _rebuild(cls: type[RewindError], args: tuple[Any, ...], state: dict[str, Any]) -> RewindError:
    """Unpickle a rewind error without calling its keyword-only ``__init__``."""
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class TraceFormatError(RewindError):
    """A trace file is missing, empty, corrupt, or written by a newer rewind."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


class TraceWriteError(RewindError):
    """Writing a step (or the header) to a trace file failed: disk full, a file size
    limit, an I/O error. The partial line was removed, so the file still ends after its
    last complete step and every step before stays readable. ``path`` and ``step`` say
    where; the ``OSError`` is the ``__cause__``.
    """

    def __init__(self, message: str, *, path: str | None = None, step: int | None = None) -> None:
        self.path = path
        self.step = step
        super().__init__(message)


class TraceLockedError(RewindError):
    """Another recorder (another process, or another session of this one) is writing
    the same trace file."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path is not None else message)


class DivergenceError(RewindError):
    """Replay could not match an incoming call against the recorded trace.

    ``step`` is the recorded step the replay was at, ``reason`` a short
    classification, ``expected`` the recorded event (or ``None`` past the end) and
    ``got`` a description of the incoming call.
    """

    def __init__(
        self,
        message: str,
        *,
        step: int,
        reason: str,
        expected: Any = None,
        got: Any = None,
        diff: str = "",
        hint: str = "",
    ) -> None:
        self.step = step
        self.reason = reason
        self.expected = expected
        self.got = got
        self.diff = diff
        self.hint = hint
        super().__init__(message)


class NeverLiveError(DivergenceError):
    """A call named by ``never_live=`` would have run for real: no recorded answer fits it.

    Raised in the agent instead of the call (nothing reached the real function); like any
    divergence it fails the replay even when the agent catches it.
    """


class ReplayedError(RewindError):
    """An error that happened at record time, raised again at replay.

    When the original class is importable from modules already loaded, the raised
    instance also subclasses it, so ``except openai.RateLimitError:`` still works. Those
    subclasses are made, and pickled, by ``rewind.data.replayed_error``.
    """

    original_type: str
    original_message: str
    step: int

    def __init__(self, message: str = "", *, original_type: str = "", step: int = -1) -> None:
        super().__init__(message)
        self.original_type = original_type
        self.original_message = message
        self.step = step

    def __str__(self) -> str:
        return self.original_message


class RedactionError(RewindError):
    """A ``redact=`` function raised: the payload it was given was not written.

    ``step`` is the step the call took (or would have taken). Its message names the
    redactor, the call and what it was redacting, never the payload or the redactor's
    own message (which may echo what it saw); that exception is the ``__cause__``.
    """

    def __init__(self, message: str, *, step: int = -1) -> None:
        self.step = step
        super().__init__(message)


class ScriptExhausted(RewindError):
    """A ScriptedLLM was called more times than its script has items."""


class LiveCallDuringReplay(RewindError):
    """A NeverCalled double was reached: a replay went live."""


class RewindWarning(UserWarning):
    """Base class for rewind warnings."""


class LossySerializationWarning(RewindWarning):
    """A value was recorded as its repr because it has no JSON form."""


class IdentityCollisionWarning(RewindWarning):
    """Two different functions recorded calls under the same kind and name in one run:
    with the same arguments their calls are indistinguishable at replay."""


class ReviveFallbackWarning(RewindWarning):
    """A recorded payload could not be turned back into its SDK type; the dict was served."""


class PatchGapWarning(RewindWarning):
    """An instrumentor could not hook an SDK surface it expected to find."""


class FuzzyMatchWarning(RewindWarning):
    """Fuzzy replay served an approximate or out-of-position match."""


class ReplayDriftWarning(RewindWarning):
    """Ordered replay served a response for a request that drifted from the recording."""


class UnconsumedEventsWarning(RewindWarning):
    """Replay ended with recorded events that were never served."""


class ThreadlessCallWarning(RewindWarning):
    """An intercepted call ran in a thread that does not carry the session's context."""
