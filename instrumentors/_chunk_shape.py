"""A recorded stream checked against the shape the SDK's stream code reads, before it is served.

The SDKs build stream events without validation (``construct``), and their stream helpers
then read fields they take for granted: Anthropic's ``MessageStream`` indexes the content
with ``event.index`` and reads ``event.message``/``event.delta``. A damaged trace (a bit
flipped in a key) would crash inside that code, far from the cause. So a step is refused
as damaged, with its file and line, when:

* the call asks for a stream and the step holds no stream record (an ``ok`` step);
* the stream record is not an object, its ``chunks`` not a list, or a chunk not an object;
* a chunk of a union discriminated by ``type`` (Anthropic's events) has no type, lacks a
  field its event type always has (nested models too: ``message.usage``), or names a
  content block that has not started, or the stream never starts its message.

Only presence is checked, not values: a trace recorded with a newer SDK (new fields, new
enum values) still replays.
"""

from __future__ import annotations

import typing
from functools import lru_cache
from typing import Any

from rewind.errors import TraceFormatError
from rewind.storage.trace import Event


def check_stream(event: Event, stream: Any, chunk_type: Any, *, wanted: bool) -> None:
    """Raise ``TraceFormatError`` unless ``stream`` (the step's record) can be served."""
    if stream is None:
        if wanted and event.ok and event.get("imported") is None:
            raise _damaged(event, "the call asks for a stream but the step holds no stream record")
        return
    if not isinstance(stream, dict):
        raise _damaged(event, f"its stream record is a {type(stream).__name__}, not an object")
    chunks = stream.get("chunks")
    if not isinstance(chunks, list):
        # The recorder always writes the chunks (an empty list for a stream cut at once).
        raise _damaged(event, f"its stream record has no list of chunks ({type(chunks).__name__})")
    # Field by field only for Anthropic's message events, whose fields have been stable
    # since its first streaming release: other unions (OpenAI's Responses events) gained
    # required fields over releases, and an older recording must still replay.
    members = _members_by_type(chunk_type) if _is_message_stream(chunk_type) else {}
    if chunks and members and not any(_type_of(c) == "message_start" for c in chunks):
        # Every other event builds on the message it starts (the SDK asserts on it at the end).
        raise _damaged(event, "its stream has no message_start event")
    blocks = 0
    for index, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            raise _damaged(event, f"stream chunk {index} is a {type(chunk).__name__}, not an object")
        if not members:
            continue
        kind = chunk.get("type")
        if not isinstance(kind, str):
            raise _damaged(event, f"stream chunk {index} has no event type")
        model = members.get(kind)
        if model is None:
            continue  # an event type this SDK does not know (a newer API): it skips it too
        missing = _missing(model, chunk)
        if missing:
            raise _damaged(event, f"stream chunk {index} ({kind}) lacks {missing}, which it always has")
        # Content blocks are numbered as they start; a delta or stop names one that started.
        if kind == "content_block_start":
            blocks += 1
        elif "index" in chunk and not (type(chunk["index"]) is int and 0 <= chunk["index"] < blocks):
            raise _damaged(event, f"stream chunk {index} ({kind}) names content block {chunk['index']!r} of {blocks}")


def _is_message_stream(chunk_type: Any) -> bool:
    return "message_start" in _members_by_type(chunk_type)


def _type_of(chunk: Any) -> Any:
    return chunk.get("type") if isinstance(chunk, dict) else None


def _missing(model: Any, value: dict[str, Any], depth: int = 0) -> str | None:
    """The first required field of ``model`` (a pydantic model) absent from ``value``, dotted."""
    fields = getattr(model, "model_fields", None)
    if not isinstance(fields, dict) or depth > 4:
        return None
    for name, info in fields.items():
        if name not in value:
            if info.is_required():
                return name
            continue
        inner = info.annotation
        if isinstance(inner, type) and isinstance(value[name], dict) and hasattr(inner, "model_fields"):
            deeper = _missing(inner, value[name], depth + 1)
            if deeper:
                return f"{name}.{deeper}"
    return None


def _damaged(event: Event, what: str) -> TraceFormatError:
    path, line = _where(event)
    return TraceFormatError(
        f"step {event.seq} ({event.kind} call {event.name!r}): {what}; the trace file is damaged here: "
        "restore it from a copy or re-record the run",
        path=path,
        line=line,
    )


def _where(event: Event) -> tuple[str | None, int | None]:
    source = getattr(event, "_source", None)
    if source is None:
        return None, None
    try:
        return source.path, source.line_number(event._offset)
    except (AttributeError, OSError, ValueError):
        return getattr(source, "path", None), None


@lru_cache(maxsize=64)
def _members_by_type(chunk_type: Any) -> dict[str, Any]:
    """For a union of event models discriminated by ``type``: each type's model."""
    if typing.get_origin(chunk_type) is typing.Annotated:
        chunk_type = typing.get_args(chunk_type)[0]
    if typing.get_origin(chunk_type) is not typing.Union:
        return {}
    members: dict[str, Any] = {}
    for member in typing.get_args(chunk_type):
        fields = getattr(member, "model_fields", None)
        if not isinstance(fields, dict) or "type" not in fields:
            continue
        for name in typing.get_args(fields["type"].annotation):
            if isinstance(name, str):
                members[name] = member
    return members
