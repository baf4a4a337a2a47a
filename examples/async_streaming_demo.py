"""Async streaming on the real ``openai`` SDK, recorded chunk by chunk and replayed offline.

An ``AsyncOpenAI`` client opens two streams and reads them concurrently
(``asyncio.gather``) over HTTP server-sent events; ``rewind.patch_openai()`` records every chunk as the agent
reads it. One stream is abandoned halfway, which closes its connection and is recorded
as truncated. Then the server is shut down and the same code runs again: ``async for``
yields the same ``ChatCompletionChunk`` objects, from the trace alone.

    python examples/async_streaming_demo.py

``BASE_URL``, ``MODEL`` and ``OPENAI_API_KEY`` point it at a real endpoint instead of
the bundled stub server.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

try:
    import openai
except ImportError:
    sys.exit("This demo needs the openai SDK: pip install openai")

import rewind
from rewind.stub_server import StubServer

MODEL = os.environ.get("MODEL", "gpt-4o-mini")
SCRIPT = [
    "Lisbon: walk the Alfama at dawn, take tram 28, and end the day in Belem with a pastel de nata.",
    "Kyoto: start at Fushimi Inari before the crowds, lunch in Nishiki market, then Gion at dusk.",
]


async def open_stream(client: openai.AsyncOpenAI, city: str) -> openai.AsyncStream:
    return await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": f"One-line itinerary for {city}."}],
        stream=True,
        stream_options={"include_usage": True},
    )


async def read(stream: openai.AsyncStream, *, stop_after: int | None = None) -> str:
    """Plain OpenAI streaming code; it knows nothing about rewind."""
    pieces: list[str] = []
    async with stream:
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            if stop_after is not None and len(pieces) >= stop_after:
                break  # abandon the rest: the connection closes, the trace marks it truncated
    return "".join(pieces)


async def agent(client: openai.AsyncOpenAI) -> list[str]:
    lisbon = await open_stream(client, "Lisbon")
    kyoto = await open_stream(client, "Kyoto")
    # Both streams are read at the same time, their chunks interleaving.
    return list(await asyncio.gather(read(lisbon), read(kyoto, stop_after=4)))


def _client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "stub"), max_retries=0)


async def main() -> int:
    unpatch = rewind.patch_openai()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "streams.rewind"
            external = os.environ.get("BASE_URL")
            server = None if external else StubServer(script=SCRIPT, stream_delay=0.02).start()
            base_url = external or server.openai_base_url  # type: ignore[union-attr]
            started = time.perf_counter()
            async with rewind.record(path):
                live = await agent(_client(base_url))
            live_s = time.perf_counter() - started
            if server is not None:
                server.stop()
            print(f"live ({live_s:.2f}s):")
            for answer in live:
                print(f"  {answer}")
            for event in rewind.Trace.load(path):
                stream = event.get("stream") or {}
                state = "truncated" if stream.get("truncated") else "complete"
                print(f"  step {event.seq}: {len(stream.get('chunks', []))} chunks recorded, {state}")

            started = time.perf_counter()
            async with rewind.replay(path):
                replayed = await agent(_client(base_url))  # the server is gone
            print(f"replayed offline ({time.perf_counter() - started:.2f}s):")
            for answer in replayed:
                print(f"  {answer}")
            assert replayed == live, "replay must yield the same chunks"
    finally:
        unpatch()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
