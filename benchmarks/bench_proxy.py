"""``rewind proxy``'s added latency per call: recorded and replayed, against a direct call.

    python benchmarks/bench_proxy.py [--calls N] [--rounds R] [--clients 1,4,16]

Each measured twice: a whole chat completion, and the same call streamed (``stream``: the
server-sent events read to their end). The agent is a plain HTTP client on one keep-alive
connection per side (``http.client``: the proxy serves agents in any language, so no SDK's
own cost hides the proxy's), posting an OpenAI chat completion; the provider is the stub
server on loopback. Three sides, taking turns in blocks of ``BLOCK`` calls, so that all
three meet the same load on a shared machine:

* direct: the client calls the stub itself (what the agent pays without rewind);
* recorded: the client calls the proxy, which forwards to the stub (over its own pooled
  keep-alive connection) and records the step;
* replayed: the client calls the proxy, which answers from the trace (no upstream): a
  trace of the same call recorded before the rounds.

Wall-clock time per call (the proxy is another server in the path, so CPU time of the
agent's thread would not see it), in microseconds: per round the median call of each
side (a call the machine's other jobs stalled does not move it), then ratios and
differences per round, and the median round is reported. The stub is a Python HTTP
server answering in well under a millisecond, so these ratios are the proxy's cost
against the cheapest provider there is (a real one answers in hundreds of
milliseconds). Budgets: a recorded call adds at most ``RECORD_BUDGET`` times a direct
call (one more loopback hop through a Python server, plus the step written and flushed);
a replayed call is at most ``REPLAY_BUDGET`` times a direct call (the proxy answers
instead of the provider); and issue 34's absolute target, at most ``ADDED_US_TARGET``
microseconds added per call, recorded or replayed. Exit status 1 when a budget is missed.

Then, informational, the same three sides with 1, 4 and 16 clients calling at once
(``--clients``), each on a connection of its own: the median call per side and what
the proxy adds at each level.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _stainless_bench import median

RECORD_BUDGET = 2.0
REPLAY_BUDGET = 1.25
_REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "find me a flight to Lisbon"}]}
#: The two shapes of call: a whole response, and a server-sent event stream read to its end.
BODIES = {"": json.dumps(_REQUEST), "stream ": json.dumps({**_REQUEST, "stream": True})}
#: Issue 34: the proxy adds at most this much per call on loopback (record and replay).
ADDED_US_TARGET = 1000.0
SIDES = ("direct", "recorded", "replayed")
#: Calls each side makes in a row before the next side's turn.
BLOCK = 20
#: Calls each proxy makes before a round's timing starts (its connections, its pool).
WARM = 10


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


def _round_us(callers: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    """Each side's median call, the sides taking turns in blocks of ``BLOCK`` calls.

    Short blocks meet the same load on a shared machine; whole blocks keep the work a
    server does after answering (the recording proxy writes its step, the stub closes a
    stream's connection) with the side that caused it, paid by that side's next call, as
    an agent calling back to back pays it: interleaving call by call would bill it to
    another side."""
    times: dict[str, list[float]] = {side: [] for side in callers}
    clock = time.perf_counter
    for _ in range(-(-calls // BLOCK)):
        for side, call in callers.items():
            for _ in range(BLOCK):
                start = clock()
                call()
                times[side].append(clock() - start)
    return {side: median(values) * 1e6 for side, values in times.items()}


def _measure(args: Any) -> dict[str, list[float]]:
    from rewind.proxy import Proxy
    from rewind.stub_server import StubServer

    samples: dict[str, list[float]] = {f"{shape}{side}": [] for shape in BODIES for side in SIDES}
    with StubServer() as stub, tempfile.TemporaryDirectory() as tmp:
        for shape, body in BODIES.items():
            name = shape.strip() or "whole"
            direct = _caller(stub.openai_base_url, body)
            for _ in range(50):  # warm imports, pools and caches
                direct()
            reference = str(Path(tmp) / f"bench-{name}-reference.rewind")
            with Proxy(reference, upstreams={"openai": stub.openai_base_url}) as proxy:
                recorder = _caller(proxy.base_url("openai"), body)
                for _ in range(WARM + -(-args.calls // BLOCK) * BLOCK):  # what a round's replaying proxy serves
                    recorder()
            for round_ in range(args.rounds):
                path = str(Path(tmp) / f"bench-{name}-{round_}.rewind")
                with (
                    Proxy(path, upstreams={"openai": stub.openai_base_url}) as recording,
                    Proxy(reference, mode="replay") as replaying,
                ):
                    callers = {
                        "direct": direct,
                        "recorded": _caller(recording.base_url("openai"), body),
                        "replayed": _caller(replaying.base_url("openai"), body),
                    }
                    for _ in range(WARM):
                        for call in callers.values():
                            call()
                    for side, value in _round_us(callers, args.calls).items():
                        samples[f"{shape}{side}"].append(value)
    return samples


def _concurrent_us(base_url: str, body: str, clients: int, calls_each: int) -> float:
    """The median call of ``clients`` threads calling at once, each on a connection of its own
    (one warm call each before they start together)."""
    callers = [_caller(base_url, body) for _ in range(clients)]
    times: list[float] = []
    lock = threading.Lock()
    start_together = threading.Barrier(clients)

    def work(call: Callable[[], Any]) -> None:
        call()
        start_together.wait()
        mine = []
        for _ in range(calls_each):
            start = time.perf_counter()
            call()
            mine.append(time.perf_counter() - start)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=work, args=(call,)) for call in callers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return median(times) * 1e6


def concurrency(clients: list[int], calls_each: int) -> None:
    """Informational: each side's median call with several agents calling at once (issue 34's
    "how cost grows with concurrency"). Client, stub and proxy share this process and its
    interpreter lock, so every side slows as clients are added; the added figures say what
    the proxy costs on top at each level."""
    from rewind.proxy import Proxy
    from rewind.stub_server import StubServer

    print(f"\nwith concurrent clients (each its own connection, {calls_each} calls each; median call, wall clock):")
    print(f"  {'clients':>7} {'shape':>7} {'direct':>10} {'recorded':>10} {'added':>9} {'replayed':>10} {'added':>9}")
    with StubServer() as stub, tempfile.TemporaryDirectory() as tmp:
        for count in clients:
            for shape, body in BODIES.items():
                direct = _concurrent_us(stub.openai_base_url, body, count, calls_each)
                path = str(Path(tmp) / f"clients-{count}-{shape.strip() or 'whole'}.rewind")
                with Proxy(path, upstreams={"openai": stub.openai_base_url}) as proxy:
                    recorded = _concurrent_us(proxy.base_url("openai"), body, count, calls_each)
                with Proxy(path, mode="replay") as proxy:
                    replayed = _concurrent_us(proxy.base_url("openai"), body, count, calls_each)
                print(
                    f"  {count:>7} {shape.strip() or 'whole':>7} {direct:8.0f}us {recorded:8.0f}us "
                    f"{recorded - direct:+7.0f}us {replayed:8.0f}us {replayed - direct:+7.0f}us"
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="rewind proxy added latency")
    parser.add_argument("--calls", type=int, default=200, help="calls per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--clients", default="1,4,16", help="concurrent clients of the concurrency table ('' skips it)")
    args = parser.parse_args(argv)
    samples = _measure(args)
    print(
        f"rewind proxy, wall-clock time per call (each round's median call), median of {args.rounds} rounds "
        f"of {args.calls} calls per side, in turns of {BLOCK}:"
    )
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
    clients = [int(n) for n in args.clients.split(",") if n]
    if clients:
        concurrency(clients, max(5, args.calls // 8))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
