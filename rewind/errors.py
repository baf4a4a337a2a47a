"""Every error and warning rewind raises or emits.

Errors are part of the interface: each one says what happened, where (step, file,
line) and what to do about it.
"""

from __future__ import annotations

from typing import Any


class RewindError(Exception):
    """Base class for all rewind errors."""


class TraceFormatError(RewindError):
    """A trace file is missing, empty, corrupt, or written by a newer rewind."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


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


class ReplayedError(RewindError):
    """An error that happened at record time, raised again at replay.

    When the original class is importable from modules already loaded, the raised
    instance also subclasses it, so ``except openai.RateLimitError:`` still works.
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


class ScriptExhausted(RewindError):
    """A ScriptedLLM was called more times than its script has items."""


class LiveCallDuringReplay(RewindError):
    """A NeverCalled double was reached: a replay went live."""


class RewindWarning(UserWarning):
    """Base class for rewind warnings."""


class LossySerializationWarning(RewindWarning):
    """A value was recorded as its repr because it has no JSON form."""


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
