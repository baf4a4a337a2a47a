"""The AWS Bedrock runtime wire format: Converse (JSON and event stream) and InvokeModel.

``boto3.client("bedrock-runtime", endpoint_url=server.bedrock_endpoint_url, ...)`` talks
to it with any (fake) credentials: SigV4 headers are accepted and never checked.

* ``POST /model/{id}/converse`` and ``/converse-stream``: Bedrock's provider-neutral
  Converse API; the stream is AWS's binary event-stream framing (``messageStart``,
  ``contentBlockStart``/``Delta``/``Stop``, ``messageStop``, ``metadata``), with tool use.
* ``POST /model/{id}/invoke`` and ``/invoke-with-response-stream``: the model's native
  body. An Anthropic Messages body (``anthropic_version`` + ``messages``) gets an Anthropic
  message back (streamed: each Anthropic event base64-encoded in a ``chunk`` event);
  any other body gets a Titan-style ``{"results": [{"outputText": ...}]}``.
* Errors are Bedrock's: the ``x-amzn-ErrorType`` header (``ThrottlingException``,
  ``ValidationException`` …) and ``{"message": ...}``; mid-stream, an ``exception`` event.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import unquote

from ._brain import Conversation, Msg, Tool, count_tokens, fixed_chunks, text_chunks, text_of
from ._http import Ctx, Event, Exchange, WireFormat, register
from ._script import ErrorSpec
from .anthropic import _anthropic_conversation, _anthropic_events, _anthropic_json

EVENT_STREAM = "application/vnd.amazon.eventstream"

_ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def error_type(spec: ErrorSpec) -> str:
    return spec.type or _ERROR_TYPES.get(spec.status, "InternalServerException")


# --------------------------------------------------------------------------- event-stream framing


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack("!B", len(raw_name)) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude, prelude CRC, headers, payload, message CRC."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack("!II", total, len(head))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + head + payload
    return message + struct.pack("!I", binascii.crc32(message) & 0xFFFFFFFF)


def encode_event(event: Event) -> bytes:
    if event.event == "__exception__":
        kind, payload = event.data
        headers = {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"}
        return frame(headers, json.dumps(payload).encode())
    headers = {":event-type": str(event.event), ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(event.data, separators=(",", ":")).encode())


def _stream_error(spec: ErrorSpec | None, _seq: int) -> Event:
    spec = spec or ErrorSpec(status=503)
    kind = error_type(spec)
    kind = kind[0].lower() + kind[1:]  # event-stream exceptions are camelCase members
    message = spec.message or "Injected mid-stream failure (rewind stub server)."
    return Event((kind, {"message": message}), event="__exception__")


# --------------------------------------------------------------------------- Converse


def _converse_conversation(model: str, body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=model)
    for block in body.get("system") or []:
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            conv.messages.append(Msg("system", block["text"]))
    for raw in body.get("messages") or []:
        if not isinstance(raw, Mapping):
            continue
        content = [b for b in raw.get("content") or [] if isinstance(b, Mapping)]
        results = [b["toolResult"] for b in content if isinstance(b.get("toolResult"), Mapping)]
        if results:
            conv.messages.append(Msg("tool", "\n".join(text_of(r.get("content")) for r in results)))
        elif raw.get("role") == "assistant":
            uses = [b["toolUse"] for b in content if isinstance(b.get("toolUse"), Mapping)]
            calls = tuple(str(use.get("name", "")) for use in uses)
            conv.messages.append(Msg("assistant", text_of([b for b in content if "text" in b]), calls))
        else:
            conv.messages.append(Msg("user", text_of([b for b in content if "text" in b])))
    config = body.get("toolConfig")
    for tool in (config.get("tools") if isinstance(config, Mapping) else None) or []:
        spec = tool.get("toolSpec") if isinstance(tool, Mapping) else None
        if isinstance(spec, Mapping):
            schema = (spec.get("inputSchema") or {}).get("json")
            conv.tools.append(Tool(str(spec.get("name", "tool")), dict(schema) if isinstance(schema, Mapping) else {}))
    choice = config.get("toolChoice") if isinstance(config, Mapping) else None
    if isinstance(choice, Mapping):
        if "any" in choice:
            conv.tool_choice = "required"
        elif isinstance(choice.get("tool"), Mapping):
            conv.tool_choice = str(choice["tool"].get("name", "auto"))
    return conv


def _usage(ctx: Ctx) -> dict[str, int]:
    prompt, completion = ctx.conv.input_tokens(), ctx.answer.output_tokens()
    return {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion}


def _tool_uses(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        {"toolUseId": call.call_id or ctx.next_id("tooluse_stub_"), "name": call.name, "input": call.arguments_obj()}
        for call in ctx.answer.tool_calls
    ]


def _stop(ctx: Ctx) -> str:
    return "tool_use" if ctx.answer.tool_calls else "end_turn"


def _converse_json(ctx: Ctx) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if ctx.answer.text:
        content.append({"text": ctx.answer.text})
    content += [{"toolUse": use} for use in _tool_uses(ctx)]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _stop(ctx),
        "usage": _usage(ctx),
        "metrics": {"latencyMs": 7},
    }


def _converse_events(ctx: Ctx) -> list[Event]:
    def ev(kind: str, payload: dict[str, Any], role: Literal["meta", "content", "final"] = "meta") -> Event:
        return Event(payload, event=kind, kind=role)

    events = [ev("messageStart", {"role": "assistant"})]
    index = 0
    if ctx.answer.text:
        for piece in text_chunks(ctx.answer.text):
            events.append(ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}}, "content"))
        events.append(ev("contentBlockStop", {"contentBlockIndex": 0}))
        index = 1
    for use in _tool_uses(ctx):
        start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
        events.append(ev("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        for piece in fixed_chunks(json.dumps(use["input"])):
            delta = {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}
            events.append(ev("contentBlockDelta", delta, "content"))
        events.append(ev("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    events.append(ev("messageStop", {"stopReason": _stop(ctx)}, "final"))
    events.append(ev("metadata", {"usage": _usage(ctx), "metrics": {"latencyMs": 7}}, "final"))
    return events


# --------------------------------------------------------------------------- InvokeModel


def _is_anthropic(body: Mapping[str, Any]) -> bool:
    return "anthropic_version" in body and "messages" in body


def _titan_conversation(model: str, body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=model)
    conv.messages.append(Msg("user", str(body.get("inputText") or body.get("prompt") or "")))
    return conv


def _titan_json(ctx: Ctx) -> dict[str, Any]:
    text = ctx.answer.text or ""
    return {
        "inputTextTokenCount": ctx.conv.input_tokens(),
        "results": [{"tokenCount": count_tokens(text), "outputText": text, "completionReason": "FINISH"}],
    }


def _titan_events(ctx: Ctx) -> list[Event]:
    final = _titan_json(ctx)["results"][0]
    return [Event({"outputText": final["outputText"], "completionReason": "FINISH", "index": 0}, kind="content")]


def _chunked(events: list[Event]) -> list[Event]:
    """Native stream events, each base64-wrapped in a ``chunk`` event as InvokeModel streams them."""
    out = []
    for event in events:
        raw = json.dumps(event.data, separators=(",", ":")).encode()
        out.append(Event({"bytes": base64.b64encode(raw).decode("ascii")}, event="chunk", kind=event.kind))
    return out


# --------------------------------------------------------------------------- routes


class BedrockFormat(WireFormat):
    name = "bedrock"
    priority = 5

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        return path.startswith("/model/")

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        return {"message": spec.message or f"Request failed with status {spec.status} (rewind stub server)."}

    def error_headers(self, spec: ErrorSpec) -> tuple[tuple[str, str], ...]:
        # botocore reads the error code from this header.
        return (("x-amzn-ErrorType", f"{error_type(spec)}:http://internal.amazon.com/coral/"),)


FORMAT = register(BedrockFormat())

_MODEL = r"/model/(?P<model>[^/]+)"


def _model(match: re.Match[str]) -> str:
    return unquote(match.group("model"))


@FORMAT.route("POST", _MODEL + r"/converse")
def _converse(ex: Exchange, match: re.Match[str]) -> None:
    conv = _converse_conversation(_model(match), ex.body)
    ex.generate(conv, streaming=False, render_json=_converse_json, render_events=_converse_events, stream_error=None)


@FORMAT.route("POST", _MODEL + r"/converse-stream")
def _converse_stream(ex: Exchange, match: re.Match[str]) -> None:
    conv = _converse_conversation(_model(match), ex.body)
    ex.generate(
        conv,
        streaming=True,
        render_json=_converse_json,
        render_events=_converse_events,
        stream_error=_stream_error,
        encode=encode_event,
        content_type=EVENT_STREAM,
    )


@FORMAT.route("POST", _MODEL + r"/invoke")
def _invoke(ex: Exchange, match: re.Match[str]) -> None:
    model, body = _model(match), ex.body
    if _is_anthropic(body):
        conv = _anthropic_conversation({**body, "model": model})
        ex.generate(
            conv, streaming=False, render_json=_anthropic_json, render_events=_anthropic_events, stream_error=None
        )
    else:
        conv = _titan_conversation(model, body)
        ex.generate(conv, streaming=False, render_json=_titan_json, render_events=_titan_events, stream_error=None)


@FORMAT.route("POST", _MODEL + r"/invoke-with-response-stream")
def _invoke_stream(ex: Exchange, match: re.Match[str]) -> None:
    model, body = _model(match), ex.body
    anthropic = _is_anthropic(body)
    conv = _anthropic_conversation({**body, "model": model}) if anthropic else _titan_conversation(model, body)
    ex.generate(
        conv,
        streaming=True,
        render_json=_anthropic_json if anthropic else _titan_json,
        render_events=lambda ctx: _chunked(_anthropic_events(ctx) if anthropic else _titan_events(ctx)),
        stream_error=_stream_error,
        encode=encode_event,
        content_type=EVENT_STREAM,
    )
