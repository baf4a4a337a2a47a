"""What the shared machinery asks of an SDK's generated core: the ``Kit`` strategy.

``_surface`` records and replays any SDK through one object per provider, its kit: how
to tell a live stream from a model response, how to build the SDK's own (never iterated)
stream object for replay, how to parse a recorded payload into an SDK type, and what in
the request is a "not given" marker. ``_stainless.SDKKit`` is the kit of every
Stainless-generated SDK (``openai``, ``anthropic``, ``groq`` …) and also fills the
raw-response slots; SDKs from other generators (Speakeasy's ``mistralai``, Fern's
``cohere``, Google's ``google-genai``) subclass ``Kit`` with their own few lines and leave
the raw-response slots empty (their SDKs have no ``with_raw_response``).
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from rewind.data.http_error import encode_body


class Kit:
    """Defaults for an SDK with no raw-response wrappers and pydantic response types."""

    #: The httpx flavour the SDK's responses come from (case-insensitive error headers), if any.
    httpx: Any = None
    #: "Not given" marker classes: arguments holding one are dropped from a call's identity.
    sentinels: tuple[type, ...] = ()
    #: Stainless parsers (strict, lenient) that ``Provider.construct`` uses; other kits ``parse``.
    validate_type: Any = None
    construct_type: Any = None
    #: Stainless raw-response classes; ``None`` where an SDK has no such wrappers.
    legacy_response: Any = None
    api_response: Any = None
    #: Error classes whose live instances always hold ``e.request`` (``_http_error.bind_request``).
    request_errors: tuple[type, ...] = ()
    #: The SDK's model base class, whose top-level responses carry ``_request_id``; ``None`` elsewhere.
    base_model: Any = None
    async_api_response: Any = None

    # -- what a live call returned ---------------------------------------------------
    def is_stream(self, obj: Any) -> bool:
        """Whether a live result is a stream the agent will iterate."""
        return False

    def is_async_stream(self, obj: Any) -> bool:
        """Whether that stream is iterated with ``async for``."""
        return False

    def is_http_wrapper(self, obj: Any) -> bool:
        return False

    def raw_mode(self, kwargs: Mapping[str, Any]) -> str | None:
        """``"true"``/``"stream"`` for Stainless raw-response calls; ``None`` elsewhere."""
        return None

    # -- replay --------------------------------------------------------------------
    def stamp_response(self, obj: Any, request_id: str | None) -> None:
        """Stamp a top-level response (a ``base_model``) with its ids; SDKs without ids have none."""

    def parse(self, type_: Any, data: Any) -> Any:
        """A recorded payload as the SDK's type (``NativeProvider`` revival); raises if it cannot."""
        return type_.model_validate(data)

    def revival_gap(self) -> str | None:
        """Why replayed responses would be dicts rather than SDK types, or ``None``."""
        return None

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
        """The in-memory HTTP response a replayed stream object holds (``None``: it needs none)."""
        return None

    def stream_object(self, *, is_async: bool, chunk_type: Any, client: Any, response: Any) -> Any:
        """The SDK's own stream object (never iterated) a replayed stream proxies.

        The default suits SDKs whose stream methods are generators: an exhausted
        generator of the right flavour, so ``isinstance(stream, Generator)`` holds.
        """
        return empty_async_generator() if is_async else empty_generator()

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
        raise NotImplementedError(f"{type(self).__name__} has no raw-response wrappers")

    def stream_class(self, *, is_async: bool, chunk_type: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no raw-response wrappers")


def httpx_response(
    hx: Any,
    *,
    url: str,
    status_code: int,
    body: bytes,
    content_type: str,
    headers: Mapping[str, str] | None = None,
    request_headers: Mapping[str, str] | None = None,
) -> Any:
    """An in-memory ``httpx`` (or ``httpx2``) response, for SDK objects that hold one.

    Recorded ``headers`` come along as the server sent them (``content-length`` describes
    what it sent, ``content-type`` keeps its charset); the body is encoded again as the
    recorded ``content-encoding`` says (``encode_body``), so the SDK decodes it as it did live.
    ``content_type`` is the default when nothing was recorded.
    """
    response_headers = {"content-type": content_type}
    if headers:
        response_headers = {str(k).lower(): str(v) for k, v in headers.items()}
        response_headers.setdefault("content-type", content_type)
        body = encode_body(body, response_headers)
    request = hx.Request("POST", url, headers=dict(request_headers or {}))
    return hx.Response(status_code, headers=response_headers, content=body, request=request)


def empty_generator() -> Iterator[Any]:
    yield from ()


async def empty_async_generator() -> AsyncIterator[Any]:
    return
    yield  # a yield makes this an async generator


#: Live results that are plain generators (SDK stream methods written as ``yield`` functions).
GENERATORS = (types.GeneratorType,)
ASYNC_GENERATORS = (types.AsyncGeneratorType,)
