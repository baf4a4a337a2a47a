"""Two sessions at once, one driven by 64 asyncio tasks and one by 8 threads, recording
thousands of calls: none lost, none duplicated, none crossed into the other session's
trace; then each trace replays (by identity) to exactly what was recorded.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import rewind

TASKS = 64
THREADS = 8
PER_TASK = 24  # 64 x 24 = 1536 calls
PER_THREAD = 160  # 8 x 160 = 1280 calls


@rewind.tool(name="lookup")
async def lookup(session: str, worker: int, i: int) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"session": session, "worker": worker, "i": i}


@rewind.memory(name="recall")
def recall(session: str, worker: int, i: int) -> dict[str, Any]:
    return {"session": session, "worker": worker, "i": i}


async def _tasks(session: str, rng: random.Random) -> list[dict[str, Any]]:
    async def worker(w: int) -> list[dict[str, Any]]:
        out = []
        for i in range(PER_TASK):
            if rng.random() < 0.2:
                await asyncio.sleep(0.0005)
            out.append(await lookup(session, w, i))
        return out

    done = await asyncio.gather(*(worker(w) for w in range(TASKS)))
    return [item for items in done for item in items]


def _threads(session: str) -> list[dict[str, Any]]:
    def worker(w: int) -> list[dict[str, Any]]:
        return [recall(session, w, i) for i in range(PER_THREAD)]

    with ThreadPoolExecutor(THREADS) as pool:
        # Each thread runs in a copy of this context: the session follows it.
        futures = [pool.submit(contextvars.copy_context().run, worker, w) for w in range(THREADS)]
        return [item for f in futures for item in f.result()]


def _record_async(path: Path, rng: random.Random, out: dict[str, Any]) -> None:
    async def main() -> list[dict[str, Any]]:
        async with rewind.record(path):
            return await _tasks("A", rng)

    out["A"] = asyncio.run(main())


def _record_threads(path: Path, out: dict[str, Any]) -> None:
    with rewind.record(path):
        out["B"] = _threads("B")


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    paths = {"A": work / "tasks.rewind", "B": work / "threads.rewind"}
    results: dict[str, Any] = {}
    drivers = [
        threading.Thread(target=_record_async, args=(paths["A"], rng, results)),
        threading.Thread(target=_record_threads, args=(paths["B"], results)),
    ]
    for thread in drivers:
        thread.start()
    for thread in drivers:
        thread.join()
    expected = {
        "A": {("A", w, i) for w in range(TASKS) for i in range(PER_TASK)},
        "B": {("B", w, i) for w in range(THREADS) for i in range(PER_THREAD)},
    }
    lost = duplicated = crossed = calls = 0
    for name, path in paths.items():
        events = rewind.Trace.load(path).events
        calls += len(events)
        seen = Counter((e.request["session"], e.request["worker"], e.request["i"]) for e in events)
        crossed += sum(n for key, n in seen.items() if key[0] != name)
        duplicated += sum(n - 1 for n in seen.values() if n > 1)
        lost += len(expected[name] - set(seen))
        duplicated += len({e.seq for e in events}) != len(events)
    # Replaying each by identity gives every caller exactly its own recorded answer.
    mismatches = 0

    async def replay_tasks() -> list[dict[str, Any]]:
        async with rewind.replay(paths["A"], match="parallel", require_full_consumption=True):
            return await _tasks("A", rng)

    mismatches += sorted(map(repr, asyncio.run(replay_tasks()))) != sorted(map(repr, results["A"]))
    with rewind.replay(paths["B"], match="parallel", require_full_consumption=True):
        mismatches += sorted(map(repr, _threads("B"))) != sorted(map(repr, results["B"]))
    return {
        "calls": calls,
        "lost": lost,
        "duplicated": duplicated,
        "crossed_sessions": crossed,
        "replay_mismatches": mismatches,
    }
