"""``BedrockInstrumentor``: records and replays the AWS Bedrock runtime through botocore.

Hooked once, on ``botocore.client.BaseClient._make_api_call``, so every boto3/botocore
client, session, region and endpoint is covered (clients built before patching too);
calls to any other AWS service pass straight through after one string comparison.
Recorded operations of ``bedrock-runtime``:

* ``converse`` and ``invoke_model``: the parsed response (``invoke_model``'s ``body`` read
  once, recorded as JSON/text, and handed back to the agent as a fresh ``StreamingBody``);
* ``converse_stream`` and ``invoke_model_with_response_stream``: the events the agent
  reads, one event each, as the shared stream engines record any SDK stream (aborted
  reads are truncated, a mid-stream ``EventStreamError`` is replayed after the same
  events).

The identity is the operation's parameters as the agent passed them (``modelId``,
``messages``, ``system``, ``inferenceConfig``, ``toolConfig``; ``invoke_model``'s body
parsed as JSON). SigV4 signatures, credentials and request ids live in the HTTP request
botocore builds afterwards, so they never enter the identity or the trace. Replay runs
before botocore signs anything: it needs no AWS credentials and no network, and returns
what boto3 returns (plain dicts with ``ResponseMetadata``, iterable event streams, a
readable ``body``). Errors replay as the client's own modeled exception classes
(``client.exceptions.ThrottlingException``, a ``botocore.exceptions.ClientError``) with
the recorded ``e.response`` (``Error.Code``, ``Error.Message``, the HTTP status).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from rewind.data.http_error import keep_headers
from rewind.data.replayed_error import decode_error, replayed_class
from rewind.engine.providers import Failure, Faults, ProviderSpec

from ._fault_records import REQUEST_ID, located, record
from ._instrumentor import SurfaceInstrumentor
from ._kit import Kit
from ._streams import RecordEngine, ReplayEngine, stream_proxy
from ._surface import Provider, Surface, _Invocation, parameter_attributes, sync_wrapper, url_server_attributes

SERVICE = "bedrock-runtime"

#: operation -> (recorded name, GenAI operation, where the response keeps its event stream)
_OPERATIONS: dict[str, tuple[str, str, str | None]] = {
    "Converse": ("bedrock.converse", "chat", None),
    "ConverseStream": ("bedrock.converse_stream", "chat", "stream"),
    "InvokeModel": ("bedrock.invoke_model", "chat", None),
    "InvokeModelWithResponseStream": ("bedrock.invoke_model_with_response_stream", "chat", "body"),
}

_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop"}


# --------------------------------------------------------------------------- bytes in JSON


def _jsonable(value: Any) -> Any:
    """Event payloads carry ``bytes`` (``invoke_model_with_response_stream`` chunks): keep them readable."""
    if isinstance(value, (bytes, bytearray)):
        try:
            return {"$bytes": bytes(value).decode("utf-8")}
        except UnicodeDecodeError:
            return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _native(value: Any) -> Any:
    if isinstance(value, Mapping):
        if len(value) == 1 and isinstance(value.get("$bytes"), str):
            return value["$bytes"].encode("utf-8")
        if len(value) == 1 and isinstance(value.get("$base64"), str):
            return base64.b64decode(value["$base64"])
        return {k: _native(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_native(v) for v in value]
    return value


def _body_data(raw: bytes) -> Any:
    """An ``invoke_model`` body as trace data: its JSON when it is JSON, else text or base64."""
    try:
        return {"json": json.loads(raw)}
    except ValueError:
        return {"raw": _jsonable(raw)}


def _body_bytes(data: Any) -> bytes:
    if isinstance(data, Mapping) and "json" in data:
        return json.dumps(data["json"], separators=(",", ":")).encode("utf-8")
    raw = _native(data.get("raw") if isinstance(data, Mapping) else data)
    return raw if isinstance(raw, bytes) else str(raw or "").encode("utf-8")


def _streaming_body(raw: bytes) -> Any:
    import io

    from botocore.response import StreamingBody

    return StreamingBody(io.BytesIO(raw), len(raw))


# --------------------------------------------------------------------------- the provider


#: Sampling parameters and the GenAI request attributes they become.
_SAMPLING = (
    ("maxTokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("topP", "gen_ai.request.top_p"),
)


class _NoEvents:
    """The raw body of a replayed event stream: its events come from the trace, not from here."""

    def stream(self) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass


def _replayed_event_stream(operation: str) -> Any:
    """A real (never read) ``botocore.eventstream.EventStream``, so ``isinstance`` holds on replay."""
    from botocore.eventstream import EventStream

    return EventStream(_NoEvents(), None, None, operation)


class BedrockProvider(Provider):
    """What is Bedrock-specific: botocore operations, event streams, AWS error responses."""

    name = "aws.bedrock"
    package = "botocore"

    def make_kit(self) -> Kit:
        return Kit()

    def surfaces(self) -> Sequence[Surface]:
        # All four operations go through one method: one row patches it, its hook dispatches.
        return [ROWS["Converse"]]

    def hook(self, surface: Surface) -> Callable[..., Any]:
        by_operation = {operation: sync_wrapper(row) for operation, row in ROWS.items()}

        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            operation = args[0] if args else kwargs.get("operation_name")
            hooked = by_operation.get(operation) if isinstance(operation, str) else None
            if hooked is None or _service(instance) != SERVICE:
                return wrapped(*args, **kwargs)
            return hooked(wrapped, instance, args, kwargs)

        return wrapper

    def invocation(self, surface: Surface, call: Any, instance: Any, kwargs: Mapping[str, Any]) -> _Invocation:
        call.credential_source = _SignerCredentials(instance)  # read only if the call fails
        return _BedrockInvocation(surface, call, instance, kwargs)

    # -- identity and telemetry -----------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        params = args[1] if len(args) > 1 else kwargs.get("api_params") or {}
        out = dict(params) if isinstance(params, Mapping) else {"params": params}
        body = out.get("body")
        if isinstance(body, (bytes, bytearray, str)):
            raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
            out["body"] = _body_data(raw)
        return _jsonable(out)

    def span(self, surface: Surface, instance: Any, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        model = request.get("modelId")
        attrs: dict[str, Any] = {"gen_ai.operation.name": surface.operation, "gen_ai.provider.name": self.name}
        if isinstance(model, str):
            attrs["gen_ai.request.model"] = model
        endpoint = getattr(getattr(instance, "meta", None), "endpoint_url", None)
        if isinstance(endpoint, str):
            attrs.update(url_server_attributes(endpoint))
        config = request.get("inferenceConfig")
        if isinstance(config, Mapping):
            attrs.update(parameter_attributes(config, _SAMPLING, stop="stopSequences"))
        if surface.chunk is not None:
            attrs["gen_ai.request.stream"] = True
        return (f"{surface.operation} {model}" if isinstance(model, str) else surface.operation), attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            return {}
        attrs: dict[str, Any] = {}
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            for key, attr in (
                ("inputTokens", "gen_ai.usage.input_tokens"),
                ("outputTokens", "gen_ai.usage.output_tokens"),
            ):
                if isinstance(usage.get(key), int):
                    attrs[attr] = usage[key]
        reason = data.get("stopReason")
        if isinstance(reason, str):
            attrs["gen_ai.response.finish_reasons"] = [_FINISH.get(reason, reason)]
        return attrs

    # -- payloads -------------------------------------------------------------------
    def dump_chunk(self, surface: Surface, chunk: Any) -> Any:
        return _jsonable(chunk)

    def revive_chunk(self, surface: Surface, data: Any) -> Any:
        return _native(data)

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        """``converse_stream`` events as the ``converse`` response they add up to."""
        if surface.name != "bedrock.converse_stream":
            return {"events": len(chunks)}
        blocks: dict[int, dict[str, Any]] = {}
        summary: dict[str, Any] = {"output": {"message": {"role": "assistant", "content": []}}}
        for event in chunks:
            if not isinstance(event, Mapping):
                continue
            if "messageStart" in event:
                summary["output"]["message"]["role"] = event["messageStart"].get("role", "assistant")
            start = event.get("contentBlockStart")
            if isinstance(start, Mapping):
                tool = (start.get("start") or {}).get("toolUse")
                if isinstance(tool, Mapping):
                    blocks[int(start.get("contentBlockIndex") or 0)] = {"toolUse": {**tool, "input": ""}}
            delta = event.get("contentBlockDelta")
            if isinstance(delta, Mapping):
                block = blocks.setdefault(int(delta.get("contentBlockIndex") or 0), {})
                piece = delta.get("delta") or {}
                if "text" in piece:
                    block["text"] = block.get("text", "") + str(piece["text"])
                if "toolUse" in piece and "toolUse" in block:
                    block["toolUse"]["input"] += str((piece["toolUse"] or {}).get("input") or "")
            if isinstance(event.get("messageStop"), Mapping):
                summary["stopReason"] = event["messageStop"].get("stopReason")
            if isinstance(event.get("metadata"), Mapping):
                summary.update({k: v for k, v in event["metadata"].items() if k in ("usage", "metrics")})
        for index in sorted(blocks):
            block = blocks[index]
            if "toolUse" in block:
                try:
                    block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
                except ValueError:
                    pass
            summary["output"]["message"]["content"].append(block)
        return summary

    # -- errors ---------------------------------------------------------------------
    def error_record(self, exc: Exception) -> dict[str, Any]:
        from ._errors import error_record

        record = error_record(exc)
        response = getattr(exc, "response", None)
        operation = getattr(exc, "operation_name", None)
        if isinstance(response, Mapping) and isinstance(operation, str):
            kept = {k: v for k, v in response.items() if k != "ResponseMetadata"}
            meta = response.get("ResponseMetadata") or {}
            kept["ResponseMetadata"] = {k: meta[k] for k in ("RequestId", "HTTPStatusCode") if k in meta}
            record["aws"] = {"response": _jsonable(kept), "operation": operation}
            record.pop("response", None)
        return record

    def revive_error(self, record: Mapping[str, Any], step: int, client: Any = None) -> BaseException:
        aws = record.get("aws")
        if not isinstance(aws, Mapping):
            return decode_error(dict(record), step)
        import botocore.exceptions as botocore_errors

        response = _native(aws.get("response") or {})
        operation = str(aws.get("operation") or "")
        code = str((response.get("Error") or {}).get("Code") or "")
        original: Any = botocore_errors.ClientError
        if record.get("qualname") == "EventStreamError":
            original = botocore_errors.EventStreamError
        elif client is not None and code:
            try:
                original = client.exceptions.from_code(code)
            except Exception:
                pass
        cls = replayed_class(original)
        exc = cls.__new__(cls)
        original.__init__(exc, response, operation)  # botocore's own message and attributes
        exc.original_type = str(record.get("type") or original.__name__)
        exc.original_message = str(record.get("message") or "")
        exc.step = step
        return exc


def _service(client: Any) -> str | None:
    model = getattr(client, "_service_model", None)
    return getattr(model, "service_name", None)


def _metadata(request_id: Any, status: int = 200) -> dict[str, Any]:
    """``ResponseMetadata`` of a step recorded before rewind kept botocore's own."""
    return {
        "RequestId": request_id if isinstance(request_id, str) else "",
        "HTTPStatusCode": status,
        "HTTPHeaders": {},
        "RetryAttempts": 0,
    }


def _kept_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """botocore's ``ResponseMetadata`` as a trace keeps it: its scalars, and the response
    headers minus credentials (``keep_headers``)."""
    kept: dict[str, Any] = {k: v for k, v in meta.items() if isinstance(v, (str, int, bool)) or v is None}
    if isinstance(meta.get("HTTPHeaders"), Mapping):
        kept["HTTPHeaders"] = keep_headers(meta["HTTPHeaders"])
    return kept


def _replayed_metadata(event: Any) -> dict[str, Any]:
    kept = event.get("response_metadata")
    if isinstance(kept, Mapping):
        return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in kept.items()}
    return _metadata(event.get("request_id"))


class _SignerCredentials:
    """A botocore client's credentials, where ``client_credentials`` looks for an SDK client's.

    botocore keeps them on the client's request signer, not where the HTTP SDKs keep an
    API key: without this, an error that quotes the session token the request carried
    (``X-Amz-Security-Token``), the secret key or a Bedrock API key given in code reaches
    the trace and the span as it is (the environment's are removed anyway). Read when the
    call has failed, from the fields themselves: a refreshable credential is never refreshed.
    """

    __slots__ = ("_boto",)

    def __init__(self, client: Any) -> None:
        self._boto = client

    def _field(self, owner: str, *names: str) -> Any:
        signer = getattr(self._boto, "_request_signer", None)
        fields = getattr(getattr(signer, owner, None), "__dict__", None) or {}
        return next((fields[name] for name in names if isinstance(fields.get(name), str)), None)

    @property
    def token(self) -> Any:  # the session token
        return self._field("_credentials", "token", "_token")

    @property
    def api_key(self) -> Any:  # the secret access key (never sent, but no error should carry it)
        return self._field("_credentials", "secret_key", "_secret_key")

    @property
    def bearer_token(self) -> Any:  # a Bedrock API key given in code (FrozenAuthToken)
        signer = getattr(self._boto, "_request_signer", None)
        token = getattr(getattr(signer, "_auth_token", None), "token", None)
        return token if isinstance(token, str) else None


class _BedrockInvocation(_Invocation):
    """A botocore call: a response dict holding, for two operations, a body or an event stream."""

    __slots__ = ()

    def _adopt(self, result: Any) -> Any:
        surface, call = self.surface, self.call
        provider = surface.provider
        stream_key = _OPERATIONS[surface.path[1:]][2]
        meta = result.get("ResponseMetadata") or {}
        extra: dict[str, Any] = {"request_id": meta.get("RequestId")} if isinstance(meta.get("RequestId"), str) else {}
        if isinstance(meta, Mapping) and meta:
            extra["response_metadata"] = _kept_metadata(meta)  # what the agent reads of the HTTP exchange
        if stream_key is not None:
            engine = RecordEngine(call, surface)
            engine.extra.update(extra or {})
            live = result[stream_key]
            result[stream_key] = stream_proxy(live, engine, is_async=False, items=iter(live))
            return result
        data = {k: v for k, v in result.items() if k not in ("ResponseMetadata", "body")}
        if "body" in result:
            raw = result["body"].read()
            result["body"] = _streaming_body(raw)  # the agent reads it as if we never had
            data["body"] = _body_data(raw)
        data = _jsonable(data)
        call.succeed(data, extra=extra, attributes=provider.response_attributes(surface, data))
        return result

    def replay(self) -> Any:
        call, surface = self.call, self.surface
        provider: BedrockProvider = surface.provider  # type: ignore[assignment]
        event = call.take_served()
        stream_record = event.get("stream")
        if not event.ok and stream_record is None:
            call.raise_recorded_error(event, provider.revive_error(event.error or {}, event.seq, self.instance))
        result: dict[str, Any] = {"ResponseMetadata": _replayed_metadata(event)}
        stream_key = _OPERATIONS[surface.path[1:]][2]
        if stream_record is not None and stream_key is not None:
            engine = ReplayEngine(call, surface, event, lambda chunk: provider.revive_chunk(surface, chunk))
            result[stream_key] = stream_proxy(_replayed_event_stream(surface.path[1:]), engine, is_async=False)
            if stream_key == "body":
                result["contentType"] = "application/json"
            return result
        data = dict(event.response or {})
        if "body" in data:
            data["body"] = _streaming_body(_body_bytes(data["body"]))
        result.update(_native(data))
        call.end_replayed(provider.response_attributes(surface, event.response))
        return result


PROVIDER = BedrockProvider()
ROWS = {
    operation: Surface(
        "botocore.client:BaseClient",
        "_make_api_call",
        name,
        operation=kind,
        path=f"/{operation}",
        result="",
        chunk="event" if stream_key else None,
        provider=PROVIDER,
    )
    for operation, (name, kind, stream_key) in _OPERATIONS.items()
}


class BedrockInstrumentor(SurfaceInstrumentor):
    """Records and replays ``bedrock-runtime`` calls of any boto3 client (``rewind_bedrock`` entry point)."""

    provider = PROVIDER
    sdk = "botocore"
    minimum = "1.34.116"  # the first release with Converse / ConverseStream


# --------------------------------------------------------------------------- provider faults

_FAULT_OPERATIONS = {
    "bedrock.converse": "Converse",
    "bedrock.converse_stream": "ConverseStream",
    "bedrock.invoke_model": "InvokeModel",
    "bedrock.invoke_model_with_response_stream": "InvokeModelWithResponseStream",
}
_FAULT_CODES = {
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an internal error."),
    503: ("ServiceUnavailableException", "The service is overloaded. Please try again later."),
}


def _fault(failure: Failure) -> dict[str, Any]:
    """boto3: a ``ClientError`` whose ``response`` has the error code; revived as the client's modeled class."""
    operation = _FAULT_OPERATIONS.get(failure.event.name, "Converse")
    if failure.fault == "timeout":
        module, qualname = located("botocore.exceptions:ReadTimeoutError")
        message = 'Read timeout on endpoint URL: "bedrock-runtime (timed out by rewind mutate)"'
        return record(module, qualname, message, attrs={"request": None, "response": None})
    code, text = _FAULT_CODES[failure.status]
    answer = {
        "Error": {"Message": text, "Code": code},
        "message": text,
        "ResponseMetadata": {"RequestId": REQUEST_ID, "HTTPStatusCode": failure.status},
    }
    return record(
        "botocore.errorfactory",
        code,
        f"An error occurred ({code}) when calling the {operation} operation: {text}",
        attrs={"operation_name": operation},
        aws={"response": answer, "operation": operation},
    )


def _dropped(failure: Failure) -> dict[str, Any]:
    """botocore reads an event stream through urllib3, whose error it lets through."""
    module, qualname = located("urllib3.exceptions:ProtocolError")
    return record(module, qualname, "Response ended prematurely")


DECLARATION = ProviderSpec(
    name="bedrock",
    sdk="botocore",
    instrumentor="rewind.instrumentors.bedrock:BedrockInstrumentor",
    frames=("boto3", "botocore"),
    faults=Faults(_fault, _dropped),
)
