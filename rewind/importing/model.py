"""What a mapper recovers from one span: a draft step, and what is wrong with it.

A chat call is recovered as a ``Chat`` in the GenAI ``parts`` form (the one shape every
layout converts to), then ``wire`` rebuilds the provider's request and response from it.
Tool and retrieval calls are recovered as their arguments and result directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .spans import SpanRecord

#: Problem codes. A blocking problem makes the step unservable: replay refuses it.
CONTENT_MISSING = "content_missing"
CONTENT_TRUNCATED = "content_truncated"
TOOLS_MISSING = "tools_missing"
ATTRIBUTES_DROPPED = "attributes_dropped"
UNREVIVABLE = "unrevivable"
BLOB_MISSING = "blob_missing"
DIGEST_MISMATCH = "digest_mismatch"
UNREADABLE = "unreadable"
SHARED_NAME = "shared_name"


@dataclass
class Problem:
    code: str
    detail: str
    #: False for what degrades matching but still lets the step be served.
    blocking: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "detail": self.detail, "blocking": self.blocking}


@dataclass
class Chat:
    """A model call in the GenAI parts form; ``None`` means the telemetry did not carry it."""

    provider: str | None = None
    operation: str = "chat"
    model: str | None = None
    system: list[dict[str, Any]] | None = None
    input: list[dict[str, Any]] | None = None
    output: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    streamed: bool | None = None
    #: The exact request/response as sent and received, when a layout carries them whole.
    raw_request: dict[str, Any] | None = None
    raw_response: Any = None
    #: Whether the request declared tools (a tool call in the output without definitions is suspicious).
    tools_expected: bool = False


@dataclass
class Draft:
    """One step recovered from one span, before the trace numbers it."""

    span: SpanRecord
    layout: str
    kind: str
    name: str = ""
    chat: Chat | None = None
    request: Any = None
    response: Any = None
    error: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: A rewind event line carried whole by the span (fleet recording), verified by its digest.
    event: dict[str, Any] | None = None
    seq: int | None = None

    def problem(self, code: str, detail: str, *, blocking: bool = True) -> None:
        self.problems.append(Problem(code, detail, blocking))

    @property
    def replayable(self) -> bool:
        return not any(p.blocking for p in self.problems)


@dataclass
class Unmapped:
    """A span no mapper understood, with the attribute names it had (for the report)."""

    span: SpanRecord
    reason: str
    attribute_names: list[str]
