"""What rewind needs from a Stainless-generated SDK (``openai``, ``anthropic``), found once.

Both SDKs share one generated core: ``_models.construct_type`` (the lenient parser that
turns wire JSON into SDK types), ``Stream``/``AsyncStream``, ``LegacyAPIResponse``
(``with_raw_response``), ``APIResponse``/``AsyncAPIResponse`` (``with_streaming_response``)
and an httpx flavour (``httpx`` up to openai 2.x, ``httpx2`` after). ``SDKKit`` looks
those up by name, tolerating any that an SDK version lacks, and builds the few things
replay needs from them: in-memory HTTP responses, raw-response wrappers and stream objects
that are real SDK instances, without any network.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from rewind.data.http_error import SECRET_HEADERS as SECRET_HEADERS  # litellm reads it from here
from rewind.data.http_error import keep_headers as keep_headers  # one credential policy for every header kept

from ._kit import Kit, httpx_response


def _optional(module: str, attr: str) -> Any:
    try:
        return getattr(importlib.import_module(module), attr, None)
    except ImportError:
        return None


def resolve(path: str) -> Any:
    """``"package.module:Name.attr"`` to the object, or ``None`` when it does not exist."""
    module, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        return None
    for part in qualname.split(".") if qualname else ():
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class SDKKit(Kit):
    """The generated-core classes of one Stainless SDK package, looked up by name."""

    def __init__(self, package: str) -> None:
        self.package = package
        base = importlib.import_module(f"{package}._base_client")
        # Newer SDKs moved to httpx2; the response classes must come from the same library.
        self.httpx: Any = getattr(base, "httpx2", None) or base.httpx
        self.construct_type: Any = _optional(f"{package}._models", "construct_type")
        self.validate_type: Any = _optional(f"{package}._models", "validate_type")
        self.final_request_options: Any = _optional(f"{package}._models", "FinalRequestOptions")
        # The SDK stamps every top-level response with its request id (None when the response
        # carried none) only where it has this helper; elsewhere a missing id is an AttributeError.
        models = f"{package}._models"
        self._add_request_id: Any = _optional(models, "add_request_id")
        self._add_response_ids: Any = _optional(models, "add_response_ids")
        stamps = self._add_request_id is not None or self._add_response_ids is not None
        self.base_model: Any = _optional(models, "BaseModel") if stamps else None
        error = _optional(f"{package}._exceptions", "APIError")
        #: The SDK's errors that always hold the request they failed on (``e.request``).
        self.request_errors: tuple[type, ...] = (error,) if isinstance(error, type) else ()
        self.stream: Any = _optional(f"{package}._streaming", "Stream")
        self.async_stream: Any = _optional(f"{package}._streaming", "AsyncStream")
        self.legacy_response: Any = _optional(f"{package}._legacy_response", "LegacyAPIResponse")
        self.api_response: Any = _optional(f"{package}._response", "APIResponse")
        self.async_api_response: Any = _optional(f"{package}._response", "AsyncAPIResponse")
        self.raw_header: str = _optional(f"{package}._constants", "RAW_RESPONSE_HEADER") or "X-Stainless-Raw-Response"
        sentinels = [_optional(f"{package}._types", name) for name in ("NotGiven", "Omit")]
        self.sentinels: tuple[type, ...] = tuple(s for s in sentinels if isinstance(s, type))
        self._streams = tuple(c for c in (self.stream, self.async_stream) if c is not None)
        self._wrappers = tuple(
            c for c in (self.legacy_response, self.api_response, self.async_api_response) if c is not None
        )

    # -- what a live call returned ---------------------------------------------------
    def is_stream(self, obj: Any) -> bool:
        return isinstance(obj, self._streams)

    def is_async_stream(self, obj: Any) -> bool:
        return self.async_stream is not None and isinstance(obj, self.async_stream)

    def is_http_wrapper(self, obj: Any) -> bool:
        return isinstance(obj, self._wrappers)

    def revival_gap(self) -> str | None:
        if self.construct_type is None:
            return f"rewind found no {self.package}._models.construct_type"
        return None

    def raw_mode(self, kwargs: Mapping[str, Any]) -> str | None:
        """``"true"`` for ``with_raw_response``, ``"stream"`` for ``with_streaming_response``."""
        headers = kwargs.get("extra_headers")
        if not isinstance(headers, Mapping) or not headers:
            return None
        wanted = self.raw_header.lower()
        for key, value in headers.items():
            if isinstance(key, str) and key.lower() == wanted and isinstance(value, str):
                # Other Stainless SDKs stamp "raw" where openai stamps "true".
                return "stream" if value == "stream" else "true"
        return None

    # -- building SDK objects for replay ---------------------------------------------
    def stamp_response(self, obj: Any, request_id: str | None) -> None:
        """Give a top-level response its ids with the SDK's own helper, as its parse() does."""
        if self._add_response_ids is not None:
            self._add_response_ids(obj, request_id=request_id, workspace_id=None)
        elif self._add_request_id is not None:
            self._add_request_id(obj, request_id)

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
        """An in-memory HTTP response the SDK's wrappers accept as their own."""
        return httpx_response(
            self.httpx,
            url=url,
            status_code=status_code,
            body=body,
            content_type=content_type,
            headers=headers,
            request_headers={self.raw_header: raw_mode} if raw_mode else None,
        )

    def request_options(self, path: str) -> Any:
        return self.final_request_options.construct(method="post", url=path)

    def http_wrapper(
        self,
        cls: Any,
        *,
        raw: Any,
        cast_to: Any,
        client: Any,
        stream: bool,
        stream_cls: Any,
        path: str,
        parsed: Any,
    ) -> Any:
        """A real raw-response wrapper whose ``parse()`` returns ``parsed``."""
        wrapper = cls(
            raw=raw,
            cast_to=cast_to,
            client=client,
            stream=stream,
            stream_cls=stream_cls,
            options=self.request_options(path),
        )
        # parse() consults this cache first, so the already-revived object is served as is.
        wrapper._parsed_by_type[cast_to] = parsed
        return wrapper

    def stream_object(self, *, is_async: bool, chunk_type: Any, client: Any, response: Any) -> Any:
        """A real (never iterated) SDK stream object, so ``isinstance`` checks hold on replay."""
        cls = self.async_stream if is_async else self.stream
        return cls(cast_to=chunk_type, response=response, client=client)

    def stream_class(self, *, is_async: bool, chunk_type: Any) -> Any:
        cls = self.async_stream if is_async else self.stream
        try:
            return cls[chunk_type]
        except TypeError:
            return cls


def has_extras(obj: Any) -> bool:
    """Whether a validated model holds a field its class does not declare, at any depth."""
    if getattr(obj, "__pydantic_extra__", None):
        return True
    values = getattr(obj, "__dict__", None) if hasattr(obj, "__pydantic_fields_set__") else None
    for value in values.values() if values else ():
        if isinstance(value, list):
            if any(hasattr(item, "__pydantic_fields_set__") and has_extras(item) for item in value):
                return True
        elif hasattr(value, "__pydantic_fields_set__") and has_extras(value):
            return True
    return False


def dump_model(obj: Any) -> Any:
    """Wire-shaped JSON of an SDK model: API field names, only the fields the API sent."""
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        try:
            return to_dict(mode="json", warnings=False)
        except (TypeError, ValueError):
            return to_dict(mode="json")
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json", by_alias=True, exclude_unset=True)
    from rewind.data.canonical import to_jsonable

    return to_jsonable(obj)


def sse_bytes(chunks: list[Any], *, named: bool, done: bool) -> bytes:
    """The server-sent-events body that carried ``chunks`` on the wire."""
    parts: list[str] = []
    for chunk in chunks:
        data = json.dumps(chunk, separators=(",", ":"), ensure_ascii=False)
        kind = chunk.get("type") if named and isinstance(chunk, dict) else None
        parts.append(f"event: {kind}\ndata: {data}\n\n" if isinstance(kind, str) else f"data: {data}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode("utf-8")


def sse_chunks(body: bytes, *, complete: bool = True) -> list[Any]:
    """The JSON payloads of the server-sent events in ``body`` (for raw byte taps).

    An event cut off by an aborted read is dropped unless the body ended there.
    """
    chunks: list[Any] = []
    text = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    blocks = text.split("\n\n")
    if not complete and blocks and not text.endswith("\n\n"):
        blocks = blocks[:-1]
    for block in blocks:
        data = [line[5:].lstrip(" ") if line.startswith("data:") else None for line in block.split("\n")]
        payload = "\n".join(d for d in data if d is not None)
        if not payload or payload.startswith("[DONE]"):
            continue
        try:
            chunks.append(json.loads(payload))
        except ValueError:
            chunks.append(payload)
    return chunks
