"""The ``bench_openai`` measurement for any Stainless SDK of an OpenAI-compatible service.

``bench_groq.py``, ``bench_together.py`` and ``bench_fireworks.py`` each describe their
SDK with a ``Target`` and call ``run``. The budgets and method are ``bench_openai``'s:

* record overhead: ``(recorded call - plain call) / plain call`` at most 20 %, on
  non-streamed ``chat.completions.create`` calls answered by an in-process ``httpx`` mock
  transport (the plain call is the SDK's own in-process cost, through the same hooks
  outside any session);
* replay: a replayed call (match, read the event back, revive it) at most as slow as the
  SDK parsing the same response from wire bytes (an ``APIResponse`` over an ``httpx``
  response holding the bytes, ``.parse()``d as the SDK does after a real request).

CPU time per call in microseconds; each round alternates the two sides call by call and
the median round's ratio is reported. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import contextvars
import gc
import importlib
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
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


def response(model: str) -> dict[str, Any]:
    """A tool-calling chat completion as an OpenAI-compatible service sends it."""
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "search_flights",
                                "arguments": '{"origin":"SFO","destination":"JFK"}',
                            },
                        }
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 82, "completion_tokens": 18, "total_tokens": 100},
        "system_fingerprint": "fp_bench",
    }


@dataclass(frozen=True)
class Target:
    """One SDK: its package, client class, chat path and type, and the model to ask for."""

    package: str
    client: str
    path: str
    chat_type: str  # "module:Class"
    model: str
    patch: Callable[[], Callable[[], None]]
    #: The service's own additions to the OpenAI-shaped response (fields its schema requires).
    reshape: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _type(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _client(target: Target, body: bytes) -> Any:
    from rewind.instrumentors._stainless import SDKKit

    hx = SDKKit(target.package).httpx

    def answer(request: Any) -> Any:
        return hx.Response(200, headers={"content-type": "application/json", "x-request-id": "req_1"}, content=body)

    http_client = hx.Client(transport=hx.MockTransport(answer))
    cls = getattr(importlib.import_module(target.package), target.client)
    return cls(api_key="bench-key", base_url="http://bench.invalid", http_client=http_client, max_retries=0)


def _wire_parse(target: Target, client: Any, body: bytes) -> Callable[[], Any]:
    """The SDK turning wire bytes into its chat completion, as it does after a real request."""
    from rewind.instrumentors._stainless import SDKKit

    kit = SDKKit(target.package)
    options = kit.request_options(target.path)
    chat_type = _type(target.chat_type)

    def parse() -> Any:
        raw = kit.httpx.Response(
            200,
            headers={"content-type": "application/json"},
            content=body,
            request=kit.httpx.Request("POST", "http://bench.invalid" + target.path),
        )
        wrapped = kit.api_response(
            raw=raw, cast_to=chat_type, client=client, stream=False, stream_cls=None, options=options
        )
        return wrapped.parse()

    return parse


def _block_us(fn: Callable[[], Any], calls: int) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        for _ in range(calls):
            fn()
        return (time.thread_time() - start) / calls * 1e6
    finally:
        gc.enable()


def paired_us(first: Callable[[], Any], second: Callable[[], Any], pairs: int) -> tuple[float, float]:
    """Per-call CPU time of ``first`` and ``second``, called alternately ``pairs`` times."""
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


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def report(name: str, rounds: int, calls: int, samples: dict[str, list[float]], unpatched: float) -> int:
    """Print the four figures and the two budgets; 0 when both are met."""
    record_overhead = median([r / p - 1 for p, r in zip(samples["plain"], samples["recorded"])])
    replay_ratio = median([r / w for w, r in zip(samples["wire"], samples["replayed"])])
    plain_us, wire_us = median(samples["plain"]), median(samples["wire"])
    recorded_us, replayed_us = median(samples["recorded"]), median(samples["replayed"])
    rows = [
        ("plain SDK call (in-process)", plain_us, f"unpatched: {unpatched:.1f} us"),
        ("SDK parse from wire bytes", wire_us, ""),
        ("recorded call", recorded_us, f"overhead {record_overhead:+.1%} (budget <= {RECORD_BUDGET:.0%})"),
        (
            "replayed call",
            replayed_us,
            f"{replay_ratio:.2f}x wire parse (budget <= {REPLAY_BUDGET:.2f}x), "
            f"{replayed_us / plain_us:.2f}x plain call",
        ),
    ]
    print(f"{name} instrumentor, CPU time per call, median of {rounds} rounds of {calls} paired calls:")
    for label, value, note in rows:
        print(f"  {label:34s} {value:9.1f} us  {note}")
    ok = record_overhead <= RECORD_BUDGET and replay_ratio <= REPLAY_BUDGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def arguments(description: str, argv: list[str] | None, *, calls: int = 200, rounds: int = 9) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--calls", type=int, default=calls, help="calls per round")
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser.parse_args(argv)


def measure(
    call: Callable[[], Any],
    wire_parse: Callable[[], Any],
    patch: Callable[[], Callable[[], None]],
    args: argparse.Namespace,
) -> tuple[dict[str, list[float]], float]:
    """Per-round samples of the plain, recorded, wire-parse and replayed sides, and the
    unpatched call's cost: what ``report`` summarizes."""
    import rewind

    for _ in range(50):  # warm imports, caches and the connection pool
        call()
    unpatched = median([_block_us(call, args.calls) for _ in range(3)])
    outside = contextvars.copy_context()  # no session in here: a hooked call is a passthrough

    def plain() -> Any:
        return outside.run(call)

    samples: dict[str, list[float]] = {"plain": [], "recorded": [], "wire": [], "replayed": []}
    with tempfile.TemporaryDirectory() as tmp:
        unpatch = patch()
        try:
            for round_ in range(args.rounds):
                path = Path(tmp) / f"bench-{round_}.rewind"
                with rewind.record(path):
                    base, recorded = paired_us(plain, call, args.calls)
                samples["plain"].append(base)
                samples["recorded"].append(recorded)
                with rewind.replay(path):
                    wire, replayed = paired_us(wire_parse, call, args.calls)
                samples["wire"].append(wire)
                samples["replayed"].append(replayed)
        finally:
            unpatch()
    return samples, unpatched


def run(target: Target, argv: list[str] | None = None, *, description: str | None = None) -> int:
    args = arguments(description or f"{target.package} instrumentor overhead", argv)
    payload = response(target.model)
    body = json.dumps(target.reshape(payload) if target.reshape else payload).encode()
    client = _client(target, body)

    def call() -> Any:
        return client.chat.completions.create(model=target.model, messages=MESSAGES, tools=TOOLS, temperature=0)

    samples, unpatched = measure(call, _wire_parse(target, client, body), target.patch, args)
    return report(target.package, args.rounds, args.calls, samples, unpatched)
