"""Edits: the changed outcome of one recorded step, from JSON or from a function.

An edit is given as

* JSON data: the step's new **response** (what the SDK or function returned), e.g. a
  chat completion whose message calls another tool;
* a step-shaped object: ``{"response": ...}`` or ``{"error": {...}}`` (optionally with a
  ``"stream"`` record), or a whole step, e.g. a line of the trace (``seq`` and
  ``kind`` present): its ``response``/``error``/``stream`` are taken;
* a callable ``edit(event) -> value`` given the recorded ``Event``, returning any of the
  above (handy to change one field of a big response).

A streamed step edited with a plain response gets its chunks made again from the new
response (OpenAI chat completions and Anthropic messages), so the agent reads the edit
chunk by chunk the way it read the original.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from rewind.data.canonical import ensure_jsonable
from rewind.data.safe_read import open_regular
from rewind.errors import TraceFormatError
from rewind.storage.trace import Event

_STEP_KEYS = frozenset({"response", "error", "stream"})


class EditError(ValueError):
    """An edit rewind cannot apply (bad JSON, a step that does not exist, a wrong shape)."""


def load_edit_file(path: str | os.PathLike[str]) -> Any:
    """The JSON in ``path``; an ``EditError`` naming the file, line and column otherwise."""
    shown = os.fspath(path)
    try:
        fd, _ = open_regular(shown, what="edit file")  # a FIFO would block the read forever
        with open(fd, encoding="utf-8") as fh:
            text = fh.read()
    except TraceFormatError as exc:
        raise EditError(f"cannot read the edit {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EditError(f"cannot read the edit {shown}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        where = f" (line {line}, column {column})" if line is not None else ""
        message = getattr(exc, "msg", str(exc))
        raise EditError(f"the edit {shown} is not valid JSON{where}: {message}") from None


def describe(edit: Any) -> str:
    """How the edit was given, for the fork's provenance."""
    if callable(edit):
        name = getattr(edit, "__qualname__", None) or type(edit).__qualname__
        module = getattr(edit, "__module__", None)
        return f"function {module}.{name}" if module and module != "builtins" else f"function {name}"
    return "value"


def edited_event(event: Event, edit: Any) -> Event:
    """``event`` with its outcome replaced as ``edit`` says (see the module docstring)."""
    recorded = event.copy()  # the edit function may change what it is given
    value = edit(recorded) if callable(edit) else edit
    change = _outcome(value, recorded.seq)
    data = recorded.to_dict()
    for key in ("response", "error", "stream", "ok"):
        data.pop(key, None)
    if "error" in change:
        data["error"] = change["error"]
    else:
        data["response"] = change["response"]
    data["what_if"] = {"edited": True}
    if "stream" in change:
        data["stream"] = change["stream"]
    edited = Event.from_dict(data)
    if recorded.get("stream") is not None and "stream" not in change:
        edited = _restream(edited, recorded)
    return edited


def _outcome(value: Any, seq: int) -> dict[str, Any]:
    if isinstance(value, Event):
        value = {k: v for k, v in value.to_dict().items() if k in _STEP_KEYS and v is not None}
    elif isinstance(value, Mapping) and "seq" in value and "kind" in value:
        value = {k: v for k, v in value.items() if k in _STEP_KEYS and v is not None}
        if not value:
            raise EditError(f"the edit of step {seq} is a whole step with neither a response nor an error")
    elif not (isinstance(value, Mapping) and value and set(value) <= _STEP_KEYS):
        value = {"response": value}
    try:
        out = dict(ensure_jsonable(dict(value), where="edit"))
    except Exception as exc:
        raise EditError(f"the edit of step {seq} is not JSON data: {exc}") from None
    if "error" in out and "response" in out:
        raise EditError(f"the edit of step {seq} gives both a response and an error; give one")
    if "error" in out:
        error = out["error"]
        if not isinstance(error, Mapping) or not isinstance(error.get("message"), str):
            raise EditError(
                f'the edit of step {seq}: an error is an object with at least a "message" (and "type", '
                '"module", "qualname" naming the exception class), as recorded errors are'
            )
    if "stream" in out and not (isinstance(out["stream"], Mapping) and isinstance(out["stream"].get("chunks"), list)):
        raise EditError(f'the edit of step {seq}: a stream is an object with a "chunks" list')
    return out


def _restream(edited: Event, recorded: Event) -> Event:
    """Chunks made again from the edited response, for a step that was streamed."""
    from rewind.storage.streams import with_stream

    if not edited.ok:
        # An error edit of a streamed call: raised when the stream is opened.
        return edited
    request = recorded.request
    restreamed = with_stream(edited, request if isinstance(request, Mapping) else {})
    if restreamed is None:
        raise EditError(
            f"step {recorded.seq} was streamed and rewind can make chunks only from an OpenAI chat completion "
            'or an Anthropic message; give the edit its own "stream": {"chunks": [...]} record'
        )
    return restreamed


EditFunction = Callable[[Event], Any]
