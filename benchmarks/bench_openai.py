"""OpenAI instrumentor overhead, as ratios against baselines measured in the same run.

    python benchmarks/bench_openai.py [--calls N] [--rounds R]

Two budgets, both on non-streamed ``chat.completions.create`` calls whose HTTP answer
comes from an in-process ``httpx`` mock transport (no network, no server):

* record overhead: ``(recorded call - plain call) / plain call`` at most 20 %. The plain
  call is the SDK's own in-process cost (unpatched, no session); the recorded call runs
  patched inside ``rewind.record()``, writing and flushing the trace file per call.
* replay: a replayed call (match, read the event back from the lazily opened trace,
  revive it into a ``ChatCompletion``) at most as slow as the SDK parsing the same
  response from wire bytes - an ``APIResponse`` over an ``httpx`` response holding the
  bytes, ``.parse()``d exactly as the SDK does after a real request. The full plain call
  is reported too, for scale.

Figures are CPU time per call in microseconds. Each round alternates the two sides of a
comparison call by call (the plain call runs in a context without the session, through
the same hooks, which pass it straight through); ratios are taken per round and the
median round is reported. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import contextvars
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RECORD_BUDGET = 0.20
REPLAY_BUDGET = 1.0

MESSAGES = [
    {"role": "system", "content": "You are a travel agent. Answer briefly and call tools when needed."},
    {"role": "user", "content": "Find me a flight from SFO to JFK tomorrow morning, window seat, under $400."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Search flights",
            "parameters": {
                "type": "object",
                "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}},
                "required": ["origin", "destination"],
            },
        },
    }
]
RESPONSE = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search_flights", "arguments": '{"origin":"SFO","destination":"JFK"}'},
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 82,
        "completion_tokens": 18,
        "total_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    },
    "system_fingerprint": "fp_bench",
}
BODY = json.dumps(RESPONSE).encode()


def _client() -> Any:
    import openai
    from rewind.instrumentors._stainless import SDKKit

    hx = SDKKit("openai").httpx

    def answer(request: Any) -> Any:
        return hx.Response(200, headers={"content-type": "application/json", "x-request-id": "req_1"}, content=BODY)

    http_client = hx.Client(transport=hx.MockTransport(answer))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http_client, max_retries=0)


def _block_us(fn: Callable[[], Any], calls: int) -> float:
    """Per-call CPU time of ``calls`` back-to-back calls, garbage collection held off.

    CPU time of this thread, not wall time: everything measured runs in-process (the
    transport is a mock), and other load on the machine then cannot skew the ratios.
    """
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        for _ in range(calls):
            fn()
        return (time.thread_time() - start) / calls * 1e6
    finally:
        gc.enable()


def _wire_parse(client: Any) -> Callable[[], Any]:
    """The SDK turning wire bytes into a ChatCompletion, as it does after a real request."""
    from openai.types.chat import ChatCompletion
    from rewind.instrumentors._stainless import SDKKit

    kit = SDKKit("openai")
    options = kit.request_options("/chat/completions")

    def parse() -> Any:
        raw = kit.httpx.Response(
            200,
            headers={"content-type": "application/json"},
            content=BODY,
            request=kit.httpx.Request("POST", "http://bench.invalid/v1/chat/completions"),
        )
        response = kit.api_response(
            raw=raw, cast_to=ChatCompletion, client=client, stream=False, stream_cls=None, options=options
        )
        return response.parse()

    return parse


def _paired_us(first: Callable[[], Any], second: Callable[[], Any], pairs: int) -> tuple[float, float]:
    """Per-call CPU time of ``first`` and ``second``, called alternately ``pairs`` times.

    Alternating call by call exposes both to the same conditions (other load on the
    machine, cache state, frequency scaling), which keeps their ratio steady.
    """
    totals = [0.0, 0.0]
    clock = time.thread_time
    gc.collect()
    gc.disable()
    try:
        for _ in range(pairs):
            start = clock()
            first()
            middle = clock()
            second()
            totals[0] += middle - start
            totals[1] += clock() - middle
    finally:
        gc.enable()
    return totals[0] / pairs * 1e6, totals[1] / pairs * 1e6


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per round")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)

    import rewind
    from rewind.integrations import patch_openai

    client = _client()

    def call() -> Any:
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, temperature=0)

    for _ in range(50):  # warm imports, caches and the connection pool
        call()
    unpatched = _median([_block_us(call, args.calls) for _ in range(3)])
    wire_parse = _wire_parse(client)
    outside = contextvars.copy_context()  # no session in here: a hooked call is a passthrough

    def plain() -> Any:
        return outside.run(call)

    samples: dict[str, list[float]] = {"plain": [], "recorded": [], "wire": [], "replayed": []}
    with tempfile.TemporaryDirectory() as tmp:
        unpatch = patch_openai()
        try:
            for round_ in range(args.rounds):
                path = Path(tmp) / f"bench-{round_}.rewind"
                with rewind.record(path):
                    base, recorded = _paired_us(plain, call, args.calls)
                samples["plain"].append(base)
                samples["recorded"].append(recorded)
                with rewind.replay(path):
                    wire, replayed = _paired_us(wire_parse, call, args.calls)
                samples["wire"].append(wire)
                samples["replayed"].append(replayed)
        finally:
            unpatch()

    # Ratios per round (both sides measured together), then the median round.
    record_overhead = _median([r / p - 1 for p, r in zip(samples["plain"], samples["recorded"])])
    replay_ratio = _median([r / w for w, r in zip(samples["wire"], samples["replayed"])])
    plain_us, wire_us = _median(samples["plain"]), _median(samples["wire"])
    recorded_us, replayed_us = _median(samples["recorded"]), _median(samples["replayed"])
    rows = [
        ("plain SDK call (mock transport)", plain_us, f"unpatched: {unpatched:.1f} us"),
        ("SDK parse from wire bytes", wire_us, ""),
        ("recorded call", recorded_us, f"overhead {record_overhead:+.1%} (budget <= {RECORD_BUDGET:.0%})"),
        (
            "replayed call",
            replayed_us,
            f"{replay_ratio:.2f}x wire parse (budget <= {REPLAY_BUDGET:.2f}x), "
            f"{replayed_us / plain_us:.2f}x plain call",
        ),
    ]
    print(f"openai instrumentor, CPU time per call, median of {args.rounds} rounds of {args.calls} paired calls:")
    for name, value, note in rows:
        print(f"  {name:34s} {value:9.1f} us  {note}")
    ok = record_overhead <= RECORD_BUDGET and replay_ratio <= REPLAY_BUDGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
