"""Streamed steps damaged the way a flipped bit damages them: a key renamed, a number
changed. Each ``DAMAGE`` entry turns the bytes of a recorded trace into a damaged copy;
replaying it must fail with a ``TraceFormatError`` naming the step, never crash inside the
SDK's stream code."""

from __future__ import annotations

from collections.abc import Callable

Damage = Callable[[bytes], bytes]


def _once(old: bytes, new: bytes, *, nth: int = 1) -> Damage:
    def damage(data: bytes) -> bytes:
        at = -1
        for _ in range(nth):
            at = data.index(old, at + 1)
        return data[:at] + new + data[at + len(old) :]

    return damage


#: Anthropic's streamed message (``messages.stream``): one damage per field its SDK reads.
ANTHROPIC: dict[str, Damage] = {
    "stream key renamed": _once(b'"stream":{"chunks"', b'"streqm":{"chunks"'),
    "chunks key renamed": _once(b'"stream":{"chunks"', b'"stream":{"ch5nks"'),
    "message key renamed": _once(b'"chunks":[{"message"', b'"chunks":[{"mes{age"'),
    "nested content renamed": _once(
        b'"chunks":[{"message":{"id":"msg_stub_1","content"', b'"chunks":[{"message":{"id":"msg_stub_1","gontent"'
    ),
    "index key renamed": _once(b'"index":0,"type":"content_block_delta"', b'"indey":0,"type":"content_block_delta"'),
    "index out of range": _once(b'"index":0,"type":"content_block_stop"', b'"index":1,"type":"content_block_stop"'),
    "delta key renamed": _once(b'{"delta":{"stop_reason"', b'{"delua":{"stop_reason"'),
    "start type renamed": _once(b'"type":"message_start"', b'"type":"message_stbrt"'),
    "block start type renamed": _once(b'"type":"content_block_start"', b'"ty0e":"content_block_start"'),
}

#: OpenAI's streamed chat completion.
OPENAI: dict[str, Damage] = {
    "stream key renamed": _once(b'"stream":{"chunks"', b'"streqm":{"chunks"'),
    "chunk not an object": _once(b'"chunks":[{', b'"chunks":[7,{'),
}
