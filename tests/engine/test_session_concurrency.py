from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import rewind
from rewind.storage.trace import Trace


@rewind.tool
async def slow_lookup(i: int) -> dict[str, int]:
    await asyncio.sleep(random.random() / 200)
    return {"i": i, "square": i * i}


@rewind.tool
def blocking_lookup(i: int) -> int:
    return i * 10


def test_many_asyncio_tasks_record_without_loss_or_duplicate_seqs(trace_path: Path) -> None:
    async def main() -> None:
        with rewind.record(trace_path):
            await asyncio.gather(*(slow_lookup(i) for i in range(200)))

    asyncio.run(main())
    trace = Trace.load(trace_path)
    assert len(trace) == 200
    assert sorted(e.seq for e in trace) == list(range(200))
    assert sorted(e.request["i"] for e in trace) == list(range(200))
    assert all(e.response == {"i": e.request["i"], "square": e.request["i"] ** 2} for e in trace)


def test_the_session_does_not_leak_into_unrelated_tasks(trace_path: Path) -> None:
    seen: dict[str, object] = {}

    async def bystander(started: asyncio.Event, release: asyncio.Event) -> None:
        started.set()
        await release.wait()
        seen["bystander"] = rewind.current_session()

    async def main() -> None:
        started, release = asyncio.Event(), asyncio.Event()
        other = asyncio.create_task(bystander(started, release))  # created before the session
        await started.wait()
        with rewind.record(trace_path) as session:
            inner = asyncio.create_task(asyncio.sleep(0, result=None))
            seen["inner"] = await asyncio.create_task(_current())
            await inner
            release.set()
            await other
        seen["session"] = session

    async def _current() -> object:
        return rewind.current_session()

    asyncio.run(main())
    assert seen["inner"] is seen["session"]
    assert seen["bystander"] is None


def test_a_call_in_a_raw_thread_warns_once_and_runs_live(trace_path: Path) -> None:
    results: list[int] = []
    with rewind.record(trace_path), pytest.warns(rewind.ThreadlessCallWarning, match="patch_thread_pool") as record:
        for _ in range(3):
            thread = threading.Thread(target=lambda: results.append(blocking_lookup(2)))
            thread.start()
            thread.join()
    assert results == [20, 20, 20]
    assert len([w for w in record if issubclass(w.category, rewind.ThreadlessCallWarning)]) == 1
    assert len(Trace.load(trace_path)) == 0


def test_patch_thread_pool_carries_the_session_into_workers(trace_path: Path) -> None:
    unpatch = rewind.patch_thread_pool()
    try:
        with rewind.record(trace_path), ThreadPoolExecutor(max_workers=1) as pool:
            assert list(pool.map(blocking_lookup, range(5))) == [0, 10, 20, 30, 40]
        with rewind.replay(trace_path) as session, ThreadPoolExecutor(max_workers=1) as pool:
            assert list(pool.map(blocking_lookup, range(5))) == [0, 10, 20, 30, 40]
        assert session.cursor == 5
    finally:
        unpatch()
    assert len(Trace.load(trace_path)) == 5


def test_patch_thread_pool_is_reference_counted_and_reversible() -> None:
    original = ThreadPoolExecutor.submit
    first, second = rewind.patch_thread_pool(), rewind.patch_thread_pool()
    assert ThreadPoolExecutor.submit is not original
    first()
    first()  # idempotent
    assert ThreadPoolExecutor.submit is not original
    second()
    assert ThreadPoolExecutor.submit is original


def test_threads_that_copy_the_context_record_concurrently(trace_path: Path) -> None:
    import contextvars

    with rewind.record(trace_path):
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(blocking_lookup, i)) for i in range(20)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    trace = Trace.load(trace_path)
    assert sorted(e.seq for e in trace) == list(range(20))
