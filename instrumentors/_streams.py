"""Stream and raw-response proxies: record lazily as the agent reads, replay chunk by chunk.

A proxy (``wrapt.ObjectProxy``) stands where the SDK object stood, so ``isinstance``
checks, attributes and helpers keep working; it only takes over iteration and closing.
It returns itself from ``__enter__``/``__iter__``/``__aiter__`` and hands every exit to
its engine, which finalizes exactly once however the stream ends:

* exhausted - the whole stream was read;
* an exception - the error is recorded (or, at replay, raised) after the chunks before it;
* ``close()``/``aclose()``, ``with``/``async with`` exit, or ``.response.close()`` (what
  the SDK's ``.stream()`` helpers call) - recorded as truncated;
* abandoned - garbage-collected unread, recorded as truncated.

Engines hold no reference to their proxies, so a proxy is freed (and finalized) as soon
as the agent drops it, never inside a garbage-collection cycle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import wrapt

from rewind.data.http_error import keep_headers
from rewind.errors import RedactionError, TraceWriteError

from ._stainless import sse_chunks

if TYPE_CHECKING:
    from rewind.engine.core import Call
    from rewind.storage.trace import Event

    from ._surface import Surface

#: Set while a hooked call (or the live read of its recorded stream) runs: SDK work nested
#: in it belongs to that step, so hooked methods it reaches pass straight through.
NESTED: ContextVar[bool] = ContextVar("rewind_inside_surface", default=False)


# --------------------------------------------------------------------------- engines


class RecordEngine:
    """Collects the chunks a live stream yields and writes one event when it ends."""

    def __init__(self, call: Call, surface: Surface) -> None:
        self.call = call
        self.surface = surface
        self.chunks: list[Any] = []
        self.raw = bytearray()
        self.finished = False
        #: More of the stream's own state for the event (beside ``stream``), e.g. litellm's private fields.
        self.extra: dict[str, Any] = {}

    def take(self, item: Any) -> Any:
        self.chunks.append(self.surface.provider.dump_chunk(self.surface, item))
        return item

    def feed(self, data: bytes | str) -> None:
        self.raw += data.encode("utf-8") if isinstance(data, str) else data

    def error_record(self, exc: Exception) -> dict[str, Any]:
        """The mid-stream error as trace data (an engine may scrub what its call was given)."""
        return self.surface.provider.error_record(exc)

    def finish(self, *, complete: bool, exc: BaseException | None = None) -> None:
        if self.finished:
            return
        self.finished = True
        chunks = self.chunks
        if not chunks and self.raw:
            chunks = sse_chunks(bytes(self.raw), complete=complete)
        record: dict[str, Any] = {"chunks": chunks, "truncated": not complete}
        provider = self.surface.provider
        call = self.call
        try:
            if isinstance(exc, Exception):
                extra = _redacted(call, {"stream": record, **self.extra})
                call.fail(exc, error=self.error_record(exc), extra=extra)
                return
            # A cancelled task or a closed generator aborted the read: the agent saw these chunks.
            record["truncated"] = record["truncated"] or exc is not None
            summary = provider.stream_summary(self.surface, chunks)
            call.succeed(
                summary,
                extra=_redacted(call, {"stream": record, **self.extra}),
                attributes=provider.response_attributes(self.surface, summary),
                converted=True,
            )
        except (RedactionError, TraceWriteError):
            raise  # the agent's read ends with it (close paths swallow it)
        except Exception:  # finishing must never break the agent's read
            call.abandon()

    def finish_body(self, data: Any, headers: dict[str, str] | None, status_code: int) -> None:
        """A non-streamed body read through a raw wrapper."""
        if self.finished:
            return
        self.finished = True
        extra = {"http": {"status_code": status_code, "headers": headers or {}}}
        self.call.succeed(
            data,
            extra=extra,
            attributes=self.surface.provider.response_attributes(self.surface, data),
            converted=True,
        )


class ReplayEngine:
    """Serves the recorded chunks of one event, then its recorded end."""

    def __init__(
        self,
        call: Call,
        surface: Surface,
        event: Event,
        revive_chunk: Callable[[Any], Any],
        revive_error: Callable[[Event], BaseException] | None = None,
    ) -> None:
        self.call = call
        #: How the recorded error is raised again (the invocation binds it to its request).
        self.revive_error = revive_error or (lambda e: surface.provider.revive_error(e.error or {}, e.seq))
        self.surface = surface
        self.event = event
        stream = event.get("stream") or {}
        self.chunks: list[Any] = list(stream.get("chunks") or [])
        self.position = 0
        self.revive_chunk = revive_chunk
        self.finished = False

    def next_item(self) -> Any:
        if self.position < len(self.chunks):
            chunk = self.chunks[self.position]
            self.position += 1
            return self.revive_chunk(chunk)
        self.finish(complete=True)
        raise StopIteration

    def finish(self, *, complete: bool, exc: BaseException | None = None) -> None:
        if self.finished:
            return
        self.finished = True
        event = self.event
        if not event.ok and complete:
            # The live stream failed here: the agent sees the same error after the same chunks.
            self.call.raise_recorded_error(event, self.revive_error(event))
        self.call.end_replayed(self._attributes() if self.call.annotating else None)

    def _attributes(self) -> Mapping[str, Any] | None:
        """The span's response attributes, summarized from the recorded chunks. They only
        describe the step to observers: chunks a summary cannot read (a damaged trace, an
        index of 1e400) leave them off, never fail the replay the agent is reading."""
        provider = self.surface.provider
        try:
            summary = provider.stream_summary(self.surface, self.chunks)
            attributes: Mapping[str, Any] | None = provider.response_attributes(self.surface, summary)
        except Exception:
            return None
        return attributes


Engine = RecordEngine | ReplayEngine


def _redacted(call: Call, extra: dict[str, Any]) -> dict[str, Any]:
    # A failing redactor records the step as a RedactionError and raises it.
    result: dict[str, Any] = call.redacted(extra, "stream")
    return result


def _finish_quietly(engine: Engine, **kwargs: Any) -> None:
    try:
        engine.finish(**kwargs)
    except Exception:  # never raise from close paths or __del__
        pass


# --------------------------------------------------------------------------- .response


class ClosingResponse(wrapt.ObjectProxy):
    """The stream's HTTP response; closing it (as the SDK helpers do) ends the stream."""

    def __init__(self, wrapped: Any, engine: Engine) -> None:
        super().__init__(wrapped)
        self._self_engine = engine

    def close(self) -> Any:
        _finish_quietly(self._self_engine, complete=False)
        return self.__wrapped__.close()

    async def aclose(self) -> Any:
        _finish_quietly(self._self_engine, complete=False)
        return await self.__wrapped__.aclose()


# --------------------------------------------------------------------------- streams


class SyncStream(wrapt.ObjectProxy):
    """A ``Stream`` that records (live) or serves (replay) what the agent iterates.

    ``items`` is where the live items come from when the stream is only iterable (botocore's
    ``EventStream`` has ``__iter__`` alone): the proxy still stands where the SDK's object
    stood, so ``isinstance`` and its own methods hold.
    """

    def __init__(self, wrapped: Any, engine: Engine, items: Iterator[Any] | None = None) -> None:
        super().__init__(wrapped)
        self._self_engine = engine
        self._self_response: Any = None
        self._self_items = items

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        engine = self._self_engine
        if isinstance(engine, ReplayEngine):
            return engine.next_item()
        if engine.finished:
            return self._pull()  # read on after close(): the SDK decides what happens
        token = NESTED.set(True)  # a lazy SDK stream sends its request on the first read
        try:
            with engine.call.activate():
                item = self._pull()
        except StopIteration:
            engine.finish(complete=True)
            raise
        except BaseException as exc:
            engine.finish(complete=False, exc=exc)
            raise
        finally:
            NESTED.reset(token)
        return engine.take(item)

    def _pull(self) -> Any:
        items = self._self_items
        return items.__next__() if items is not None else self.__wrapped__.__next__()

    def __enter__(self) -> SyncStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        _finish_quietly(self._self_engine, complete=False)
        wrapped = self.__wrapped__
        if hasattr(wrapped, "close"):
            wrapped.close()
        else:  # some SDKs' streams (mistralai 1.x) only close through their HTTP response
            wrapped.response.close()

    @property
    def response(self) -> Any:
        if self._self_response is None:
            self._self_response = ClosingResponse(self.__wrapped__.response, self._self_engine)
        return self._self_response

    def __del__(self) -> None:
        engine = self._self_engine
        if engine.finished:
            return
        _finish_quietly(engine, complete=False)
        if isinstance(engine, RecordEngine):
            try:
                self.__wrapped__.close()  # abandoned: release the connection now, not at the next GC cycle
            except Exception:
                pass


class AsyncStream(wrapt.ObjectProxy):
    """An ``AsyncStream`` that records (live) or serves (replay) what the agent iterates."""

    def __init__(self, wrapped: Any, engine: Engine) -> None:
        super().__init__(wrapped)
        self._self_engine = engine
        self._self_response: Any = None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        engine = self._self_engine
        if isinstance(engine, ReplayEngine):
            try:
                return engine.next_item()
            except StopIteration:
                raise StopAsyncIteration from None
        if engine.finished:
            return await self.__wrapped__.__anext__()
        token = NESTED.set(True)
        try:
            with engine.call.activate():
                item = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            engine.finish(complete=True)
            raise
        except BaseException as exc:
            engine.finish(complete=False, exc=exc)
            raise
        finally:
            NESTED.reset(token)
        return engine.take(item)

    async def __aenter__(self) -> AsyncStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def close(self) -> None:
        _finish_quietly(self._self_engine, complete=False)
        wrapped = self.__wrapped__
        if hasattr(wrapped, "close"):
            await wrapped.close()
        elif hasattr(wrapped, "aclose"):  # an async generator (some SDKs' stream methods)
            await wrapped.aclose()
        else:  # some SDKs' streams (mistralai 1.x) only close through their HTTP response
            await wrapped.response.aclose()

    async def aclose(self) -> None:
        await self.close()

    @property
    def response(self) -> Any:
        if self._self_response is None:
            self._self_response = ClosingResponse(self.__wrapped__.response, self._self_engine)
        return self._self_response

    def __del__(self) -> None:
        _finish_quietly(self._self_engine, complete=False)


def stream_proxy(wrapped: Any, engine: Engine, *, is_async: bool, items: Iterator[Any] | None = None) -> Any:
    return AsyncStream(wrapped, engine) if is_async else SyncStream(wrapped, engine, items)


# --------------------------------------------------------------------------- raw wrappers (live)


class _RawBase(wrapt.ObjectProxy):
    """A live ``with_raw_response`` / ``with_streaming_response`` wrapper being recorded."""

    def __init__(self, wrapped: Any, engine: RecordEngine, *, streaming: bool, is_async: bool) -> None:
        super().__init__(wrapped)
        self._self_engine = engine
        self._self_streaming = streaming
        self._self_is_async = is_async
        self._self_stream: Any = None
        if streaming:
            # A streamed body is recorded chunk by chunk; its status and headers are kept beside it.
            http = wrapped.http_response
            engine.extra["http"] = {"status_code": int(http.status_code), "headers": keep_headers(http.headers)}

    def _adopt(self, parsed: Any, to: Any) -> Any:
        kit = self._self_engine.surface.provider.kit
        if self._self_streaming and kit.is_stream(parsed) and not isinstance(parsed, (SyncStream, AsyncStream)):
            if self._self_stream is None:
                self._self_stream = stream_proxy(parsed, self._self_engine, is_async=kit.is_async_stream(parsed))
            return self._self_stream
        if not self._self_streaming and to is None:
            self._record_body()
        return parsed

    def _record_body(self) -> None:
        engine = self._self_engine
        if engine.finished:
            return
        http = self.__wrapped__.http_response
        try:
            data = http.json()
        except Exception:  # not JSON: keep the text
            data = http.text
        engine.finish_body(data, keep_headers(http.headers), int(http.status_code))

    def _body_read(self, data: Any) -> Any:
        """The agent read a whole non-streamed body: that is the step's response."""
        if not self._self_streaming:
            self._record_body()
        return data

    def _feed(self, piece: Any) -> None:
        """Record one piece of the raw body as the agent reads it (lines, for SSE)."""
        engine = self._self_engine
        engine.feed(piece if isinstance(piece, (bytes, str)) else b"")
        if isinstance(piece, str) and not piece.endswith("\n"):
            engine.feed("\n")

    def _tap_ended(self, complete: bool, exc: BaseException | None = None) -> None:
        if exc is not None:
            _finish_quietly(self._self_engine, complete=False, exc=exc)
        elif self._self_streaming:
            _finish_quietly(self._self_engine, complete=complete)
        elif complete:
            self._record_body()

    def _tap(self, source: Iterator[Any]) -> Iterator[Any]:
        complete = False
        try:
            for piece in source:
                self._feed(piece)
                yield piece
            complete = True
        except BaseException as exc:
            self._tap_ended(False, exc)
            raise
        finally:
            self._tap_ended(complete)

    async def _atap(self, source: AsyncIterator[Any]) -> AsyncIterator[Any]:
        complete = False
        try:
            async for piece in source:
                self._feed(piece)
                yield piece
            complete = True
        except BaseException as exc:
            self._tap_ended(False, exc)
            raise
        finally:
            self._tap_ended(complete)

    def __del__(self) -> None:
        _finish_quietly(self._self_engine, complete=False)


class SyncRaw(_RawBase):
    """``LegacyAPIResponse`` (sync or async client) or a sync ``APIResponse``."""

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        return self._adopt(self.__wrapped__.parse(*args, **kwargs), kwargs.get("to"))

    def read(self) -> Any:
        return self._body_read(self.__wrapped__.read())

    def json(self) -> Any:
        return self._body_read(self.__wrapped__.json())

    def iter_bytes(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._tap(self.__wrapped__.iter_bytes(*args, **kwargs))

    def iter_text(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._tap(self.__wrapped__.iter_text(*args, **kwargs))

    def iter_lines(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._tap(self.__wrapped__.iter_lines(*args, **kwargs))

    def close(self) -> Any:
        self._finish_on_close()
        return self.__wrapped__.close()

    def _finish_on_close(self) -> None:
        engine = self._self_engine
        if engine.finished:
            return
        if self._self_streaming:
            _finish_quietly(engine, complete=False)
            return
        try:
            self.__wrapped__.read()
            self._record_body()
        except Exception:
            _finish_quietly(engine, complete=False)


class AsyncRaw(_RawBase):
    """An ``AsyncAPIResponse`` (``with_streaming_response`` on the async client)."""

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        return self._adopt(await self.__wrapped__.parse(*args, **kwargs), kwargs.get("to"))

    async def read(self) -> Any:
        return self._body_read(await self.__wrapped__.read())

    async def json(self) -> Any:
        return self._body_read(await self.__wrapped__.json())

    def iter_bytes(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self._atap(self.__wrapped__.iter_bytes(*args, **kwargs))

    def iter_text(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self._atap(self.__wrapped__.iter_text(*args, **kwargs))

    def iter_lines(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self._atap(self.__wrapped__.iter_lines(*args, **kwargs))

    async def close(self) -> Any:
        engine = self._self_engine
        if not engine.finished:
            if self._self_streaming:
                _finish_quietly(engine, complete=False)
            else:
                try:
                    await self.__wrapped__.read()
                    self._record_body()
                except Exception:
                    _finish_quietly(engine, complete=False)
        return await self.__wrapped__.close()
