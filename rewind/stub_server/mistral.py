"""The Mistral wire format: chat completions (JSON and SSE) and embeddings.

Mistral's chat API looks like OpenAI's but differs where its SDK is strict:
embeddings carry an ``id`` and read ``input``/``output_dimension``, a streamed
tool call arrives whole in one delta, usage rides on the last chunk, ``tool_choice``
may be ``"any"``, and errors are ``{"object": "error", ...}`` (422s are FastAPI
``{"detail": [...]}``, which the SDK parses into ``HTTPValidationError``).

The format is served under ``/mistral`` (``StubServer.mistral_base_url``) so it
never collides with OpenAI's identical paths; a request whose User-Agent names
the ``mistralai`` SDK is recognised at the root too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._brain import CREATED, DEFAULT_EMBEDDING_DIMS, count_tokens, embedding, text_chunks
from ._http import Ctx, Event, Exchange, WireFormat, register
from ._script import ErrorSpec
from .openai import chat_conversation

PREFIX = "/mistral"

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("unauthorized", None),
    403: ("forbidden", None),
    404: ("not_found", None),
    429: ("rate_limited", "1300"),
}


def _error_object(spec: ErrorSpec) -> dict[str, Any]:
    kind, code = _ERROR_TYPES.get(
        spec.status, ("internal_server_error" if spec.status >= 500 else "invalid_request_error", None)
    )
    message = spec.message or f"Request failed with status {spec.status} (injected by the rewind stub server)."
    return {
        "object": "error",
        "message": message,
        "type": spec.type or kind,
        "param": spec.param,
        "code": spec.code if spec.code is not None else code,
    }


def _usage(ctx: Ctx) -> dict[str, Any]:
    prompt, completion = ctx.conv.input_tokens(), ctx.answer.output_tokens()
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_calls(ctx: Ctx) -> list[dict[str, Any]]:
    calls = []
    for index, call in enumerate(ctx.answer.tool_calls):
        # Mistral's own ids are nine alphanumerics, and its API checks that on the way back in.
        call_id = call.call_id or "stub" + ctx.next_id("").zfill(5)
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
                "index": index,
            }
        )
    return calls


def _finish(ctx: Ctx) -> str:
    return "tool_calls" if ctx.answer.tool_calls else "stop"


def _chat_json(ctx: Ctx) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": ctx.answer.text or "", "prefix": False}
    calls = _tool_calls(ctx)
    message["tool_calls"] = calls or None
    return {
        "id": ctx.next_id("cmpl_stub_"),
        "object": "chat.completion",
        "model": ctx.conv.model,
        "created": CREATED,
        "usage": _usage(ctx),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(ctx)}],
    }


def _chat_events(ctx: Ctx) -> list[Event]:
    completion_id = ctx.next_id("cmpl_stub_")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": ctx.conv.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    events = [Event(chunk({"role": "assistant", "content": ""}))]
    for piece in text_chunks(ctx.answer.text or ""):
        events.append(Event(chunk({"content": piece}), kind="content"))
    for call in _tool_calls(ctx):
        events.append(Event(chunk({"content": "", "tool_calls": [call]}), kind="content"))
    last = chunk({"content": ""}, _finish(ctx))
    last["usage"] = _usage(ctx)
    events.append(Event(last, kind="final"))
    events.append(Event("[DONE]", kind="final"))
    return events


def _stream_error(spec: ErrorSpec | None, _seq: int) -> Event:
    # The SDK cannot parse an error object as a chunk, so it raises ResponseValidationError.
    return Event(_error_object(spec or ErrorSpec(status=500)))


def _embeddings_json(ctx_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    raw = body.get("input")
    inputs: list[Any] = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else [raw]
    dims = body.get("output_dimension")
    dims = dims if isinstance(dims, int) and 0 < dims <= 4096 else DEFAULT_EMBEDDING_DIMS
    data = [{"object": "embedding", "embedding": embedding(item, dims), "index": i} for i, item in enumerate(inputs)]
    tokens = sum(count_tokens(item) if isinstance(item, str) else 1 for item in inputs)
    return {
        "id": ctx_id,
        "object": "list",
        "model": str(body.get("model") or "mistral-embed"),
        "usage": {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens},
        "data": data,
    }


# --------------------------------------------------------------------------- routes


class MistralFormat(WireFormat):
    name = "mistral"
    priority = 10

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        if path == PREFIX or path.startswith(PREFIX + "/"):
            return True
        agent = headers.get("user-agent", "")
        return agent.startswith("mistral-client") or agent.endswith(" mistralai")

    def local_path(self, path: str) -> str:
        if path == PREFIX or path.startswith(PREFIX + "/"):
            path = path[len(PREFIX) :] or "/"
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:] or "/"
        return path

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        if spec.status == 422:
            message = spec.message or "Input validation failed (injected by the rewind stub server)."
            return {"detail": [{"type": spec.type or "value_error", "loc": ["body"], "msg": message, "input": None}]}
        return _error_object(spec)


FORMAT = register(MistralFormat())


@FORMAT.route("POST", r"/chat/completions")
def _chat(ex: Exchange, _match: re.Match[str]) -> None:
    conv = chat_conversation(ex.body)
    if conv.tool_choice == "any":
        conv.tool_choice = "required"
    ex.generate(
        conv,
        streaming=bool(ex.body.get("stream")),
        render_json=_chat_json,
        render_events=_chat_events,
        stream_error=_stream_error,
    )


@FORMAT.route("POST", r"/embeddings")
def _embeddings(ex: Exchange, _match: re.Match[str]) -> None:
    ex.send_json(200, _embeddings_json(ex.stub._next_id("embd_stub_"), ex.body))
