"""``MistralInstrumentor``: records and replays the ``mistralai`` SDK (Speakeasy-generated).

Hooked surfaces, sync and ``*_async``, class-level (every client and ``server_url``):

* ``chat.complete``, and through it ``chat.parse`` (the SDK's structured-output helper
  calls ``complete`` and post-processes the revived response itself);
* ``chat.stream``: replay hands back the SDK's own ``EventStream`` /
  ``EventStreamAsync`` (on 1.2.0, a generator) yielding ``CompletionEvent`` objects;
* ``embeddings.create``.

Layouts: ``mistralai`` 1.x keeps its SDK flat (``mistralai.chat.Chat``); 2.x and later
moved it to ``mistralai.client`` (``mistralai.client.chat.Chat``), with the Azure and
Google Cloud flavours beside it (``mistralai.azure.client``, ``mistralai.gcp.client``,
whose ``chat`` is hooked too). Every layout present is patched; majors 1, 2 and 3 are
covered, 1.2.0 is the oldest release tested.

The SDK is not Stainless-generated, so this module brings its own kit (``_kit``): what a
stream is, how a recorded payload parses into the SDK's pydantic types, and how its
errors (``SDKError``, ``HTTPValidationError`` … which keep the HTTP response as
``raw_response``) are recorded and raised again.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rewind.data.canonical import to_jsonable
from rewind.engine.providers import Failure, Faults, ProviderSpec
from rewind.errors import PatchGapWarning

from ._errors import ReplayedHTTPResponse, add_response, error_record, revive_error
from ._fault_records import WORDING, located, read_timeout, record, response, transport_dropped
from ._instrumentor import SurfaceInstrumentor
from ._kit import ASYNC_GENERATORS, GENERATORS, Kit, httpx_response
from ._openai_compat import completion_head
from ._surface import BindingFields, NativeProvider, Surface, parameter_attributes, url_server_attributes, warn_once

#: Where each SDK layout keeps its generated core, newest first.
ROOTS = ("mistralai.client", "mistralai.azure.client", "mistralai.gcp.client", "mistralai")

#: Per-call options of the generated methods: transport, never the request.
_TRANSPORT = frozenset({"retries", "server_url", "timeout_ms", "http_headers"})


#: Sampling parameters and the GenAI request attributes they become.
_SAMPLING = (
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("random_seed", "gen_ai.request.seed"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
)


class SpeakeasyKit(Kit):
    """The generated core of every ``mistralai`` layout that is installed."""

    def __init__(self, roots: Sequence[str]) -> None:
        sentinels: list[type] = []
        sync: list[Any] = list(GENERATORS)  # 1.2.0 streams are plain generators
        asynchronous: list[Any] = list(ASYNC_GENERATORS)
        #: (root, EventStream, EventStreamAsync, unmarshal) per layout, longest root first.
        self.layouts: list[tuple[Any, ...]] = []
        for root in roots:
            try:
                events = importlib.import_module(f"{root}.utils.eventstreaming")
                utils = importlib.import_module(f"{root}.utils")
            except ImportError:
                continue
            unset = _optional_attr(f"{root}.types", "Unset")
            if isinstance(unset, type):
                sentinels.append(unset)
            stream, astream = getattr(events, "EventStream", None), getattr(events, "EventStreamAsync", None)
            sync += [stream] if stream is not None else []
            asynchronous += [astream] if astream is not None else []
            self.layouts.append((root, stream, astream, getattr(utils, "unmarshal", None)))
            if self.httpx is None:
                self.httpx = getattr(events, "httpx", None)  # httpx, or httpx2 from 3.x on
        self.layouts.sort(key=lambda layout: -len(layout[0]))
        self.sentinels = tuple(sentinels)
        self._streams = tuple(sync + asynchronous)
        self._async_streams = tuple(asynchronous)

    def is_stream(self, obj: Any) -> bool:
        return isinstance(obj, self._streams)

    def is_async_stream(self, obj: Any) -> bool:
        return isinstance(obj, self._async_streams)

    def _layout(self, type_: Any) -> tuple[Any, ...] | None:
        module = getattr(type_, "__module__", "")
        return next((layout for layout in self.layouts if module.startswith(layout[0] + ".")), None)

    def parse(self, type_: Any, data: Any) -> Any:
        try:
            # The SDK's unmarshal wraps the type in a throwaway model per call; validating
            # the model directly gives the same object twenty times faster.
            return type_.model_validate(data)
        except Exception:
            layout = self._layout(type_)
            if layout is None or layout[3] is None:
                raise
            return layout[3](data, type_)  # the SDK's own (coercing) unmarshal

    def revival_gap(self) -> str | None:
        return None if self.layouts else "rewind found no mistralai utils module"

    def fake_response(
        self,
        *,
        url: str,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        raw_mode: str | None = None,
        content_type: str = "application/json",
    ) -> Any:
        if self.httpx is None:
            return None
        return httpx_response(self.httpx, url=url, status_code=status_code, body=body, content_type=content_type)

    def stream_object(self, *, is_async: bool, chunk_type: Any, client: Any, response: Any) -> Any:
        layout = self._layout(chunk_type)
        cls = None if layout is None else layout[2 if is_async else 1]
        if cls is None or response is None:
            return super().stream_object(is_async=is_async, chunk_type=chunk_type, client=client, response=response)

        def decode(raw: str) -> Any:
            return chunk_type.model_validate_json(raw)

        return cls(response, decode, "[DONE]")  # never iterated: the replay engine serves the chunks


def _optional_attr(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


class MistralProvider(NativeProvider):
    """What is Mistral-specific about recording and replaying ``mistralai``."""

    name = "mistral_ai"
    package = "mistralai"
    transport_keys = _TRANSPORT

    def make_kit(self) -> Kit:
        return SpeakeasyKit(ROOTS)

    def surfaces(self) -> Sequence[Surface]:
        rows: list[Surface] = []
        for root in ROOTS:
            models = f"{root}.models"
            main = root in ("mistralai", "mistralai.client")
            for is_async in (False, True):
                suffix = "_async" if is_async else ""
                common: BindingFields = {"is_async": is_async, "provider": self, "required": main}
                chat = f"{root}.chat:Chat"
                rows += [
                    Surface(
                        chat,
                        f"complete{suffix}",
                        "mistral.chat.complete",
                        operation="chat",
                        path="/v1/chat/completions",
                        result=f"{models}:ChatCompletionResponse",
                        **common,
                    ),
                    Surface(
                        chat,
                        f"stream{suffix}",
                        "mistral.chat.stream",
                        operation="chat",
                        path="/v1/chat/completions",
                        result=f"{models}:ChatCompletionResponse",
                        chunk=f"{models}:CompletionEvent",
                        **common,
                    ),
                ]
                if main:  # the cloud flavours have no embeddings endpoint
                    rows.append(
                        Surface(
                            f"{root}.embeddings:Embeddings",
                            f"create{suffix}",
                            "mistral.embeddings.create",
                            operation="embeddings",
                            path="/v1/embeddings",
                            result=f"{models}:EmbeddingResponse",
                            **common,
                        )
                    )
        return rows

    # -- identity -------------------------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        out = super().request(surface, instance, args, kwargs)
        fmt = out.get("response_format")
        if fmt is not None and not isinstance(fmt, (dict, str)):
            out["response_format"] = to_jsonable(fmt)  # chat.parse passes a ResponseFormat model
        return out

    # -- telemetry --------------------------------------------------------------------
    def server_attributes(self, instance: Any) -> dict[str, Any]:
        config = getattr(instance, "sdk_configuration", None)
        try:
            url, _ = config.get_server_details()  # type: ignore[union-attr]
        except Exception:  # no configuration, or an invalid server name
            return {}
        return url_server_attributes(url)

    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        attrs = parameter_attributes(request, _SAMPLING, stop="stop")
        n = request.get("n")
        if isinstance(n, int) and n != 1:
            attrs["gen_ai.request.choice.count"] = n
        if surface.method.startswith("stream"):
            attrs["gen_ai.request.stream"] = True
        fmt = request.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
            attrs["gen_ai.output.type"] = "json"
        fmt = request.get("encoding_format")
        if isinstance(fmt, str):
            attrs["gen_ai.request.encoding_formats"] = [fmt]
        return attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if surface.operation != "embeddings" or not isinstance(data, dict):
            return {}  # the core reads id, model, usage and finish reasons of a chat completion
        items = data.get("data")
        if isinstance(items, list) and items and isinstance(items[0], dict):
            vector = items[0].get("embedding")
            if isinstance(vector, list):
                return {"gen_ai.embeddings.dimension.count": len(vector)}
        return {}

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        return accumulate_chat([c.get("data") for c in chunks if isinstance(c, dict)])

    # -- errors ---------------------------------------------------------------------
    def error_record(self, exc: Exception) -> dict[str, Any]:
        record = error_record(exc)
        raw = getattr(exc, "raw_response", None)
        add_response(record, getattr(raw, "status_code", None), getattr(raw, "headers", None), lambda: raw.text)  # type: ignore[union-attr]
        data = getattr(exc, "data", None)
        if data is not None and hasattr(data, "model_dump"):
            # HTTPValidationError (422) carries the parsed body as a model.
            record["data"] = {"type": f"{type(data).__module__}:{type(data).__qualname__}", "value": to_jsonable(data)}
        return record

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        try:
            exc = revive_error(record, step, httpx=self.kit.httpx)
        except TypeError:
            # A class that cannot be built bare (pydantic's ValidationError, raised mid-stream by
            # 1.x when a chunk does not parse): a plain ReplayedError with the recorded message.
            exc = revive_error({k: v for k, v in record.items() if k not in ("module", "qualname")}, step)
        response = getattr(exc, "response", None)
        if isinstance(response, ReplayedHTTPResponse):
            # Mistral errors keep the HTTP response as raw_response and its headers beside it.
            _set(exc, "raw_response", response)
            _set(exc, "headers", response.headers)
        data = record.get("data")
        if isinstance(data, Mapping):
            _set(exc, "data", _already_imported_model(str(data.get("type", "")), data.get("value")))
        return exc


def _set(obj: Any, name: str, value: Any) -> None:
    try:
        object.__setattr__(obj, name, value)
    except (AttributeError, TypeError):
        pass


def _already_imported_model(path: str, value: Any) -> Any:
    """``value`` as the model class at ``path``, only if its module is already loaded (trace = data)."""
    module, _, name = path.partition(":")
    cls = getattr(sys.modules.get(module), name, None)
    if cls is None or not hasattr(cls, "model_validate"):
        return value
    try:
        return cls.model_validate(value)
    except Exception:
        return value


def accumulate_chat(chunks: list[Any]) -> dict[str, Any] | None:
    """The ``chat.completion`` a list of Mistral ``CompletionChunk`` payloads adds up to.

    Mistral sends each tool call whole (arguments as a string or an object) and may send
    content as a list of typed parts (``thinking``, ``text``); both are kept as sent.
    """
    summary = completion_head(chunks)
    if summary is None:
        return None
    choices: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("usage"), dict):
            summary["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            index = choice["index"] if isinstance(choice.get("index"), int) else 0
            slot = choices.setdefault(index, {"role": "assistant", "text": [], "parts": [], "tools": []})
            delta: dict[str, Any] = choice["delta"] if isinstance(choice.get("delta"), dict) else {}
            if isinstance(delta.get("role"), str):
                slot["role"] = delta["role"]
            piece = delta.get("content")
            if isinstance(piece, str):
                slot["text"].append(piece)
            elif isinstance(piece, list):
                slot["parts"] += piece
            slot["tools"] += [t for t in delta.get("tool_calls") or [] if isinstance(t, dict)]
            if choice.get("finish_reason") is not None:
                slot["finish_reason"] = choice["finish_reason"]
    summary["choices"] = []
    for index in sorted(choices):
        slot = choices[index]
        content: Any = slot["parts"] + ([{"type": "text", "text": "".join(slot["text"])}] if slot["text"] else [])
        if not slot["parts"]:
            content = "".join(slot["text"])
        message: dict[str, Any] = {"role": slot["role"], "content": content}
        if slot["tools"]:
            message["tool_calls"] = slot["tools"]
        summary["choices"].append({"index": index, "message": message, "finish_reason": slot.get("finish_reason")})
    return summary


PROVIDER = MistralProvider()

#: The oldest mistralai release the test suite is run against (compat/mistral.txt).
MINIMUM_SDK = "1.2"


class MistralInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through ``mistralai`` (``rewind_mistral`` entry point)."""

    provider = PROVIDER
    sdk = "mistralai"
    minimum = MINIMUM_SDK

    def _instrument(self, **kwargs: Any) -> None:
        super()._instrument(**kwargs)
        patcher = self.__dict__.get("_rewind_patcher")
        if patcher is not None and not patcher.active:
            warn_once(
                "instrument:mistralai:layout",
                "rewind found none of the mistralai layouts it knows (mistralai.chat, mistralai.client.chat): "
                "mistralai calls run live and unrecorded. Upgrade rewind or pin a tested SDK version.",
                PatchGapWarning,
            )


__all__ = ["MistralInstrumentor", "MistralProvider", "SpeakeasyKit", "accumulate_chat"]


# --------------------------------------------------------------------------- provider faults

_CLIENT_MODULES = ("mistralai.client.basesdk", "mistralai.basesdk")


def _fault(failure: Failure) -> dict[str, Any]:
    """mistralai: every non-422 status is an ``SDKError`` keeping the body text and the raw response."""
    if failure.fault == "timeout":
        return read_timeout(*_CLIENT_MODULES)
    module, qualname = located("mistralai.client.errors:SDKError", "mistralai.models:SDKError")
    kind, code = {"rate_limit": ("rate_limited", "1300")}.get(failure.fault, ("internal_server_error", None))
    text = json.dumps({"object": "error", "message": WORDING[failure.fault], "type": kind, "param": None, "code": code})
    if module.startswith("mistralai.models"):  # 1.x: the status and body on lines of their own
        message, short = f"API error occurred: Status {failure.status}\n{text}", "API error occurred"
    else:
        message = short = f"API error occurred: Status {failure.status}. Body: {text}"
    return record(
        module,
        qualname,
        message,
        attrs={"message": short, "status_code": failure.status, "body": text},
        body=text,
        response=response(failure.status, failure, text),
    )


def _dropped(failure: Failure) -> dict[str, Any]:
    return transport_dropped(*_CLIENT_MODULES)  # the HTTP library's error comes through unwrapped


DECLARATION = ProviderSpec(
    name="mistral",
    sdk="mistralai",
    instrumentor="rewind.instrumentors.mistral:MistralInstrumentor",
    keys=("MISTRAL_API_KEY",),
    faults=Faults(_fault, _dropped),
)
