"""``rewind proxy``'s added latency per call: recorded and replayed, against a direct call.

    python benchmarks/bench_proxy.py [--calls N] [--rounds R]

Each measured twice: a whole chat completion, and the same call streamed (``stream``: the
server-sent events read to their end). The agent is a plain HTTP client on one keep-alive
connection (``http.client``: the proxy serves agents in any language, so no SDK's own cost
hides the proxy's), posting an OpenAI chat completion; the provider is the stub server on
loopback. Three sides, one block of each per round, back to back:

* direct: the client calls the stub itself (what the agent pays without rewind);
* recorded: the client calls the proxy, which forwards to the stub (over its own pooled
  keep-alive connection) and records the step;
* replayed: the client calls the proxy, which answers from the trace (no upstream).

Wall-clock time per call (the proxy is another server in the path, so CPU time of the
agent's thread would not see it), in microseconds; ratios are taken per round and the
median round is reported. The stub is a Python HTTP server answering in well under a
millisecond, so these ratios are the proxy's cost against the cheapest provider there is
(a real one answers in hundreds of milliseconds). Budgets: a recorded call adds at most
``RECORD_BUDGET`` times a direct call (one more loopback hop through a Python server,
plus the step written and flushed); a replayed call is at most ``REPLAY_BUDGET`` times a
direct call (the proxy answers instead of the provider); and issue 34's absolute target,
at most ``ADDED_US_TARGET`` microseconds added per call, recorded or replayed. Exit status
1 when a budget is missed.
"""

from __future__ import annotations

import http.client
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _stainless_bench import arguments, median

RECORD_BUDGET = 2.0
REPLAY_BUDGET = 1.25
_REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "find me a flight to Lisbon"}]}
#: The two shapes of call: a whole response, and a server-sent event stream read to its end.
BODIES = {"": json.dumps(_REQUEST), "stream ": json.dumps({**_REQUEST, "stream": True})}
#: Issue 34: the proxy adds at most this much per call on loopback (record and replay).
ADDED_US_TARGET = 1000.0


def _block_us(call: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def _caller(base_url: str, body: str) -> Callable[[], Any]:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port)
    path = parts.path.rstrip("/") + "/chat/completions"
    headers = {"content-type": "application/json", "authorization": "Bearer bench"}

    def call() -> Any:
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        data = response.read()
        assert response.status == 200, data
        return data

    return call


def _measure(args: Any) -> dict[str, list[float]]:
    from rewind.proxy import Proxy
    from rewind.stub_server import StubServer

    samples: dict[str, list[float]] = {f"{shape}{side}": [] for shape in BODIES for side in SIDES}
    with StubServer() as stub, tempfile.TemporaryDirectory() as tmp:
        for shape, body in BODIES.items():
            direct = _caller(stub.openai_base_url, body)
            for _ in range(50):  # warm imports, pools and caches
                direct()
            for round_ in range(args.rounds):
                path = str(Path(tmp) / f"bench-{shape.strip() or 'whole'}-{round_}.rewind")
                samples[f"{shape}direct"].append(_block_us(direct, args.calls))
                with Proxy(path, upstreams={"openai": stub.openai_base_url}) as proxy:
                    samples[f"{shape}recorded"].append(_block_us(_caller(proxy.base_url("openai"), body), args.calls))
                with Proxy(path, mode="replay") as proxy:
                    samples[f"{shape}replayed"].append(_block_us(_caller(proxy.base_url("openai"), body), args.calls))
    return samples


SIDES = ("direct", "recorded", "replayed")


def main(argv: list[str] | None = None) -> int:
    args = arguments("rewind proxy added latency", argv, calls=200, rounds=9)
    samples = _measure(args)
    print(f"rewind proxy, wall-clock time per call, median of {args.rounds} rounds of {args.calls} calls:")
    ok = True
    for shape in BODIES:
        direct, recorded, replayed = (samples[f"{shape}{side}"] for side in SIDES)
        added = median([r / d - 1 for d, r in zip(direct, recorded)])
        replay_ratio = median([r / d for d, r in zip(direct, replayed)])
        added_record_us = median([r - d for d, r in zip(direct, recorded)])
        added_replay_us = median([r - d for d, r in zip(direct, replayed)])
        direct_us = median(direct)
        rows = [
            (f"{shape}direct call (client -> stub server)", direct_us, ""),
            (
                f"{shape}recorded through the proxy",
                median(recorded),
                f"adds {added_record_us:.0f} us (target <= {ADDED_US_TARGET:.0f}), {added:.2f}x a direct call "
                f"(budget <= {RECORD_BUDGET:.2f}x)",
            ),
            (
                f"{shape}replayed by the proxy",
                median(replayed),
                f"adds {added_replay_us:.0f} us, {replay_ratio:.2f}x a direct call (budget <= {REPLAY_BUDGET:.2f}x)",
            ),
        ]
        for label, value, note in rows:
            print(f"  {label:43s} {value:9.1f} us  {note}")
        ok = ok and added <= RECORD_BUDGET and replay_ratio <= REPLAY_BUDGET
        ok = ok and max(added_record_us, added_replay_us) <= ADDED_US_TARGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
