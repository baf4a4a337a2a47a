"""The fault catalog: one realistic failure at one recorded step, as the SDK itself would deliver it.

Each fault turns a recorded step into the step the agent gets instead: an error record
that the instrumentor revives as the SDK's own exception class (``openai.RateLimitError``
with ``e.response.headers["retry-after"]``, ``anthropic.OverloadedError`` …), or a
response / stream that the instrumentor revives as the SDK's own objects. A fault is
served once, in front of the recorded step, so an agent that retries is answered from
the recording (see ``WhatIfMatcher``).

Provider errors (rate limit, server error, overloaded, timeout) are made for every
instrumented SDK, each as that SDK delivers it (``provider_errors``). Response faults
(empty content, malformed tool-call arguments) know OpenAI chat completions and
Anthropic messages; stream faults (connection reset, truncated stream) work on any
recorded stream; tool and retrieval faults on any ``@rewind.tool`` / ``@rewind.memory`` step.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rewind.storage.trace import Event, PathLike, Trace

from .provider_errors import dropped_stream_error, mcp_method, mcp_session_request, provider_error
from .provider_errors import sdk_of as sdk_of  # re-exported: it lived here

if TYPE_CHECKING:
    from rewind.engine.session import Normalizer, Redactor, Session


class FaultError(ValueError):
    """A fault rewind cannot inject (an unknown name, a step it does not apply to)."""


@dataclass(frozen=True)
class FaultOptions:
    """Knobs of the synthesized faults."""

    #: The ``retry-after`` header of injected 429/529 answers, in seconds.
    retry_after: str = "1"
    #: Build the fault for a call made from a coroutine (an async client): the few SDKs whose
    #: async transport fails differently (google-genai over aiohttp, xAI's grpc.aio) need it.
    in_async: bool = False


Builder = Callable[[Event, random.Random, FaultOptions], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Fault:
    """One kind of failure: a name, what it means, and how a step is changed into it."""

    name: str
    description: str
    builder: Builder
    #: A cheap "does it apply" for ``plan``, where building the change would import the SDK
    #: (litellm's import alone takes seconds); ``None``: build it and see.
    applies: Callable[[Event], bool] | None = None

    def applies_to(self, event: Event, rng: random.Random, options: FaultOptions = FaultOptions()) -> bool:
        """Whether ``apply`` would change ``event`` (``plan`` asks this of every step)."""
        if self.applies is not None:
            return event.ok and self.applies(event)
        return self.apply(event, rng, options) is not None

    def apply(self, event: Event, rng: random.Random, options: FaultOptions = FaultOptions()) -> Event | None:
        """The faulty step served in place of ``event``, or ``None`` when it does not apply."""
        if not event.ok:
            return None  # the recorded step failed already
        change = self.builder(event, rng, options)
        if change is None:
            return None
        data = event.to_dict()
        for key in ("response", "error", "stream", "ok"):
            data.pop(key, None)
        data.update({k: v for k, v in change.items() if v is not None})
        data["what_if"] = {"fault": self.name}
        return Event.from_dict(data)


# --------------------------------------------------------------------------- helpers


def _plain_error(module: str, qualname: str, message: str) -> dict[str, Any]:
    return {"type": f"{module}.{qualname}", "module": module, "qualname": qualname, "message": message}


def _restream(event: Event, response: Any) -> dict[str, Any] | None:
    """``response`` plus, for a streamed step, chunks made again from it."""
    if event.get("stream") is None:
        return {"response": response}
    from rewind.storage.streams import with_stream

    request = event.request
    remade = with_stream(
        Event.from_dict({**event.to_dict(), "response": response}), request if isinstance(request, Mapping) else {}
    )
    if remade is None:
        return None
    return {"response": response, "stream": remade.get("stream")}


def _cut(chunks: list[Any], rng: random.Random) -> int:
    return rng.randint(1, len(chunks) - 1)


# --------------------------------------------------------------------------- the faults


def _made_by_an_sdk(event: Event) -> bool:
    return sdk_of(event) is not None


def _sdk_or_mcp(event: Event) -> bool:
    """A provider's call, or an MCP request (which can time out or fail on the server too)."""
    return sdk_of(event) is not None or mcp_method(event) is not None


def _provider_fault(fault: str) -> Builder:
    """A builder of one provider fault: the error its SDK raises (``provider_errors``)."""

    def build(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
        error = provider_error(fault, event, options.retry_after, in_async=options.in_async)
        return None if error is None else {"error": error}

    build.__name__ = f"_{fault}"
    return build


def _chunks(event: Event) -> list[Any] | None:
    """The recorded chunks of a streamed step that has two or more (a stream can be cut there)."""
    stream = event.get("stream")
    chunks = stream.get("chunks") if isinstance(stream, Mapping) else None
    return chunks if isinstance(chunks, list) and len(chunks) >= 2 else None


def _connection_reset(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
    stream = event.get("stream")
    chunks = _chunks(event)
    if chunks is None:
        return None
    kept = chunks[: _cut(chunks, rng)]
    # What the agent's loop over the stream gets from its SDK when the connection drops.
    error = dropped_stream_error(event, kept, in_async=options.in_async)
    return {"response": event.response, "error": error, "stream": {**stream, "chunks": kept, "truncated": True}}


def _truncated_stream(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
    stream = event.get("stream")
    chunks = _chunks(event)
    if chunks is None:
        return None
    kept = chunks[: _cut(chunks, rng)]
    return {"response": event.response, "stream": {**stream, "chunks": kept, "truncated": True}}


def _empty_content(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
    response = event.response
    if event.kind != "llm" or not isinstance(response, dict):
        return None
    response = json.loads(json.dumps(response))
    if response.get("object") == "chat.completion":
        for choice in response.get("choices") or []:
            message = choice.get("message") or {}
            message["content"] = ""
            message.pop("tool_calls", None)
            message.pop("function_call", None)
            choice["finish_reason"] = "stop"
    elif response.get("type") == "message":
        response["content"] = []
        response["stop_reason"] = "end_turn"
    else:
        return None
    return _restream(event, response)


def _malformed_tool_args(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
    response = event.response
    if event.kind != "llm" or not isinstance(response, dict) or response.get("object") != "chat.completion":
        return None
    response = json.loads(json.dumps(response))
    calls = [
        call
        for choice in response.get("choices") or []
        for call in (choice.get("message") or {}).get("tool_calls") or []
        if isinstance(call.get("function"), dict)
    ]
    if not calls:
        return None
    function = rng.choice(calls)["function"]
    arguments = str(function.get("arguments") or "{}")
    broken = arguments[: max(1, len(arguments) // 2)]
    if _parses(broken):
        broken = arguments + "}"  # still invalid: one brace too many
    function["arguments"] = broken
    return _restream(event, response)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _tool_error(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
    if event.kind != "tool":
        return None
    method = mcp_method(event)
    if method == "tools/call":
        # An MCP server reports a tool that raised as a result, not a protocol error: the
        # client returns it with isError set (its text as mcp's servers word it).
        text = f"Error executing tool {event.name}: fault injected by rewind mutate at step {event.seq}"
        return {"response": {"content": [{"type": "text", "text": text}], "isError": True}}
    if method is not None:
        return None  # the session's own requests (list_tools, initialize …) are not tools
    message = f"tool {event.name!r} failed (fault injected by rewind mutate at step {event.seq})"
    return {"error": _plain_error("builtins", "RuntimeError", message)}


def _empty_retrieval(event: Event, rng: random.Random, options: FaultOptions) -> dict[str, Any] | None:
    if event.kind != "memory":
        return None
    response = event.response
    empty: Any
    if isinstance(response, dict) and mcp_method(event) is not None:
        # An MCP result keeps its type: its lists (contents, prompts, resources, messages)
        # empty, and no next page.
        empty = {key: [] if isinstance(value, list) else value for key, value in response.items()}
        empty.pop("nextCursor", None)
    elif isinstance(response, list):
        empty = []
    elif isinstance(response, dict):
        empty = {}
    elif isinstance(response, str):
        empty = ""
    else:
        return None
    if response == empty:
        return None
    return {"response": empty}


FAULTS: dict[str, Fault] = {
    fault.name: fault
    for fault in (
        Fault(
            "rate_limit",
            "HTTP 429 with retry-after (the SDK's rate-limit error)",
            _provider_fault("rate_limit"),
            _made_by_an_sdk,
        ),
        Fault(
            "server_error",
            "HTTP 500 (the SDK's server error; for MCP, a JSON-RPC internal error)",
            _provider_fault("server_error"),
            _sdk_or_mcp,
        ),
        Fault(
            "overloaded",
            "the provider is overloaded (529 or 503, as the provider says it), with retry-after",
            _provider_fault("overloaded"),
            _made_by_an_sdk,
        ),
        Fault(
            "timeout",
            "the request timed out (the SDK's own timeout error)",
            _provider_fault("timeout"),
            _sdk_or_mcp,
        ),
        Fault(
            "connection_reset",
            "the connection dropped mid-stream (the error the SDK raises then)",
            _connection_reset,
            lambda event: _chunks(event) is not None,
        ),
        Fault("truncated_stream", "the stream ended early, without an error", _truncated_stream),
        Fault("empty_content", "the model answered with empty content and no tool calls", _empty_content),
        Fault("malformed_tool_args", "a tool call's arguments are cut-off JSON", _malformed_tool_args),
        Fault(
            "tool_error",
            "the tool raised (RuntimeError; for an MCP tool call, a result with isError)",
            _tool_error,
            # Without reading the step: a plain tool and an MCP tool call both take it.
            lambda event: event.kind == "tool" and not mcp_session_request(event),
        ),
        Fault("empty_retrieval", "the retrieval returned nothing", _empty_retrieval),
    )
}


def fault_named(name: str) -> Fault:
    try:
        return FAULTS[name]
    except KeyError:
        raise FaultError(f"unknown fault {name!r}; use one of {', '.join(FAULTS)}") from None


def step_rng(seed: int, index: int, fault: str) -> random.Random:
    """The random choices of one mutation (where a stream is cut …): fixed by the seed."""
    return random.Random(f"{seed}:{index}:{fault}")


def faulty_event(
    event: Event, fault: str, *, index: int, seed: int = 0, options: FaultOptions = FaultOptions()
) -> Event:
    made = fault_named(fault).apply(event, step_rng(seed, index, fault), options)
    if made is None:
        raise FaultError(f"fault {fault!r} does not apply to step {event.seq} ({event.kind} {event.name!r})")
    return made


def fault_session(
    path: PathLike,
    spec: str | Mapping[str, Any],
    *,
    match: str = "strict",
    redact: Redactor | None = None,
    normalize: Normalizer | None = None,
    network: str = "allow",
    allow_hosts: Sequence[str] = (),
) -> Session:
    """The replay (or, with ``"live": true``, the fork) that injects the fault ``spec`` describes.

    ``spec`` is ``{"index": N, "fault": NAME, "seed": S, "retry_after": "1", "live": false}``
    (as JSON text in ``REWIND_FAULT``).
    """
    from rewind.engine.session import Session
    from rewind.matching import resolve_matcher

    from .matcher import Change, WhatIfMatcher

    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError as exc:
            raise FaultError(f"REWIND_FAULT is not JSON ({exc})") from None
    if (
        not isinstance(spec, Mapping)
        or not isinstance(spec.get("index"), int)
        or not isinstance(spec.get("fault"), str)
    ):
        raise FaultError('a fault is {"index": step index, "fault": name, "seed": number}')
    trace = Trace.open(path)
    index = spec["index"]
    if not 0 <= index < len(trace.events):
        raise FaultError(f"{trace.path} has {len(trace.events)} steps; there is no step at index {index}")
    options = FaultOptions(retry_after=str(spec.get("retry_after") or "1"))
    seed = int(spec.get("seed") or 0)
    event = faulty_event(trace.events[index], spec["fault"], index=index, seed=seed, options=options)
    # An async client may get another class for the same fault: served when the call comes from a task.
    async_options = dataclasses.replace(options, in_async=True)
    in_async = faulty_event(trace.events[index], spec["fault"], index=index, seed=seed, options=async_options)
    label = f"{spec['fault']} at step {trace.events[index].seq}"
    live = bool(spec.get("live"))
    change = Change(
        index,
        event,
        replaces=False,
        label=label,
        async_event=None if in_async.to_dict() == event.to_dict() else in_async,
    )
    matcher = WhatIfMatcher(resolve_matcher(match), {index: change}, then="replay")
    if live:
        return Session("fork", path=path, match=matcher, fork_at=index + 1, redact=redact, normalize=normalize)
    return Session(
        "replay",
        path=path,
        match=matcher,
        redact=redact,
        normalize=normalize,
        network=network,
        allow_hosts=allow_hosts,
    )
