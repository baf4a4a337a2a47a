"""Test doubles: a scripted fake model and a proof that nothing went live."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from rewind.errors import LiveCallDuringReplay, ScriptExhausted


class ScriptedLLM:
    """A fake model that plays a script, one item per call.

    Items are values (returned), exception instances or classes (raised) or callables
    (called with the request, their result returned). ``.calls`` holds every request
    received and ``.remaining`` how many items are left.
    """

    def __init__(self, script: Iterable[Any]) -> None:
        self._script = list(script)
        self._position = 0
        self._lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        return len(self._script) - self._position

    def __call__(self, *args: Any, **request: Any) -> Any:
        if args:
            if len(args) == 1 and isinstance(args[0], dict) and not request:
                request = dict(args[0])
            else:
                request = {"args": list(args), **request}
        with self._lock:
            self.calls.append(request)
            if self._position >= len(self._script):
                raise ScriptExhausted(
                    f"ScriptedLLM ran out of script after {len(self._script)} "
                    f"{'item' if len(self._script) == 1 else 'items'}; "
                    f"call {len(self.calls)} had nothing to return. Add items to the script."
                )
            item = self._script[self._position]
            self._position += 1
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, type) and issubclass(item, BaseException):
            raise item()
        if callable(item):
            return item(request)
        return item

    def complete(self, **request: Any) -> Any:
        """The same as calling the double, for agents that expect a client method."""
        return self(**request)

    def __repr__(self) -> str:
        return f"ScriptedLLM(calls={len(self.calls)}, remaining={self.remaining})"


class NeverCalled:
    """A live backend that must never be reached: raises ``LiveCallDuringReplay``.

    Put it where the real client was to prove a replay stayed offline. Any call, any
    attribute access that is then called, raises.
    """

    def __init__(self, label: str = "live backend") -> None:
        self.label = label

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise LiveCallDuringReplay(
            f"{self.label} was called during replay: a call escaped the trace and went live. "
            "Check that it is decorated or patched, and that the session covers it."
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return NeverCalled(f"{self.label}.{name}")

    def __repr__(self) -> str:
        return f"NeverCalled({self.label!r})"
