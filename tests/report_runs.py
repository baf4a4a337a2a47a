"""Recorded runs for the HTML report tests.

``record_agent_run`` records what a report must show, through the real ``openai`` and
``anthropic`` SDKs talking HTTP to the stub server and through decorated tools: a
conversation with tool calls and their results, images, a failed tool, parallel tool
calls (concurrency lanes), a stream the consumer abandoned (truncated) and an
Anthropic exchange. ``hostile=True`` puts markup and script in every place a trace
can carry text.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import rewind
from rewind.stub_server import StubServer

# What an attacker would put in a trace (names, payloads, meta, errors).
HOSTILE = (
    '</script><script>window.__pwned = "script"</script>'
    "<img src=x onerror=\"window.__pwned = 'img'\">"
    "<!--<script>window.__pwned='comment'</script>--> </SCRIPT > & \u2028\u2029 \x1b[31m"
)


def tiny_png(red: int = 200, green: int = 40, blue: int = 40, size: int = 8) -> bytes:
    """A real ``size`` x ``size`` PNG of one colour."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    row = b"\x00" + bytes([red, green, blue]) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(row * size)) + chunk(b"IEND", b"")
    )


def png_data_url(**colour: int) -> str:
    return "data:image/png;base64," + base64.b64encode(tiny_png(**colour)).decode("ascii")


def record_agent_run(path: Path, stub: StubServer, *, city: str = "Paris", hostile: bool = False) -> Path:
    import anthropic
    import openai

    from rewind.setup.integrations import patch_anthropic, patch_openai

    text = HOSTILE if hostile else "Plan a weekend in " + city
    tool_name = ("weather" + HOSTILE) if hostile else "get_weather"

    @rewind.memory(name="recall")
    def recall(topic: str) -> list[str]:
        return ["likes museums", text]

    @rewind.tool(name=tool_name)
    def get_weather(city: str) -> dict[str, Any]:
        return {"city": city, "forecast": "sunny", "note": text}

    @rewind.tool(name="book")
    def book(hotel: str) -> dict[str, Any]:
        raise RuntimeError(f"booking backend down for {hotel}: {text}")

    @rewind.tool(name="search")
    async def search(query: str, delay: float) -> dict[str, Any]:
        await asyncio.sleep(delay)
        return {"query": query, "hits": [f"{query} 1", f"{query} 2"]}

    async def parallel() -> None:
        await asyncio.gather(search("hotels", 0.03), search("museums", 0.03), search("food", 0.01))

    stub.add_script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": city}}]},
        f"Sunny in {city}: go to the Louvre. {text}",
        f"Anthropic says {city} is lovely. {text}",
    )
    undo_openai, undo_anthropic = patch_openai(), patch_anthropic()
    oa = openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test", max_retries=0)
    an = anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key="sk-ant-test", max_retries=0)
    try:
        with rewind.record(path, meta={"ticket": "T-7", "note": text}):
            notes = recall("preferences")
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": "You plan trips. Notes: " + "; ".join(notes)},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": png_data_url()}},
                    ],
                },
            ]
            tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
            first = oa.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            call = first.choices[0].message.tool_calls[0]
            weather = get_weather(**json.loads(call.function.arguments))
            messages.append(first.choices[0].message.model_dump(exclude_none=True))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(weather)})
            oa.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            asyncio.run(parallel())
            try:
                book("Hotel " + city)
            except RuntimeError:
                pass
            picture = base64.b64encode(tiny_png(green=160)).decode("ascii")
            an.messages.create(
                model="claude-haiku-4-5",
                max_tokens=100,
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is in this picture? " + text},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": picture}},
                        ],
                    }
                ],
            )
            stream = oa.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Tell me a long story"}], stream=True
            )
            next(iter(stream))
            stream.close()  # abandoned after one chunk: recorded as truncated
    finally:
        oa.close()
        an.close()
        undo_anthropic()
        undo_openai()
    return path


def write_odd_trace(path: Path) -> Path:
    """A hand-edited trace: infinite and negative numbers, NaN, markup and control
    characters in names, odd error fields, NaN where JSON has none."""
    header = {"format": "agent-rewind", "version": 1, "rewind_version": "0.1.0", "meta": {"<b>": "\u202eevil"}}
    lines = [json.dumps(header)]
    skeleton = {"fingerprint": "ab", "ok": True, "live": True}
    odd = [
        {"seq": 0, "kind": "llm", "name": "chat\n<i>x</i>", "ts": 1e300, "duration_ms": -5},
        {"seq": 1, "kind": "weird<kind>", "name": "\x1b[31mred", "ts": 1700000000.0, "duration_ms": 1e308},
        {"seq": 2, "kind": "tool", "name": "broken", "ts": 1700000000.5, "duration_ms": 3.0, "ok": False},
    ]
    bodies: list[dict[str, Any]] = [
        {"response": {"choices": [{"message": {"role": "assistant", "content": float("nan")}}]}, "request": {}},
        {"response": [float("inf"), "\u2028"], "request": {"messages": "not a list"}},
        {"error": {"qualname": "<b>Boom</b>", "message": 42}, "request": None},
    ]
    for head, body in zip(odd, bodies):
        event = {"seq": head["seq"], "kind": head["kind"], "name": head["name"], **skeleton}
        event.update({k: head[k] for k in ("ts", "duration_ms")})
        event["ok"] = head.get("ok", True)
        ordered = {k: event[k] for k in ("seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live")}
        lines.append(json.dumps({**ordered, **body}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
