"""The call a matcher is asked to answer: what the agent sends, read lazily from a live call."""

from __future__ import annotations

from typing import Any


class IncomingCall:
    """What the agent is asking for, as the matcher sees it.

    ``request`` is the request as JSON data before normalization (what a diff should
    show); ``identity`` the request after ``normalize=`` (what the fingerprint covers).
    Built from a live call, both are materialized only when a matcher or an error
    message reads them: strict and parallel matching decide on the fingerprint alone.
    """

    __slots__ = ("_identity", "_is_async", "_request", "_source", "fingerprint", "kind", "name")

    def __init__(
        self,
        kind: str,
        name: str,
        fingerprint: str,
        request: Any = None,
        identity: Any = None,
        *,
        is_async: bool | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.fingerprint = fingerprint
        self._request = request
        self._identity = identity
        self._is_async = is_async
        self._source: Any = None

    @classmethod
    def of(cls, call: Any) -> IncomingCall:
        """An incoming call whose request is read from ``call`` on first use."""
        incoming = cls(call.kind, call.name, call.fingerprint)
        incoming._source = call
        return incoming

    @property
    def request(self) -> Any:
        if self._source is not None:
            return self._source.request
        return self._request

    @property
    def identity(self) -> Any:
        if self._source is not None:
            return self._source.identity
        return self._identity

    @property
    def function(self) -> str | None:
        """``module.qualname`` of the decorated function making the call, when one does."""
        return getattr(self._source, "function", None)

    @property
    def is_async(self) -> bool | None:
        """Whether the agent awaits this call (an async client or coroutine), ``None`` when
        its hook does not say."""
        if self._source is not None:
            return self._source.is_async
        return self._is_async

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IncomingCall):
            return NotImplemented
        return (self.kind, self.name, self.fingerprint, self.request, self.identity) == (
            other.kind,
            other.name,
            other.fingerprint,
            other.request,
            other.identity,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IncomingCall(kind={self.kind!r}, name={self.name!r}, fingerprint={self.fingerprint[:12]!r}…)"
