"""Big traces at reduced scale: sizes, ratios and memory bounds (no timings; see benchmarks/)."""

from __future__ import annotations

import base64
import gc
import os
import random
import tracemalloc
from pathlib import Path

import rewind
from rewind.storage.archive import compact
from rewind.storage.trace import Trace

MB = 1_000_000


def image(size: int, seed: int) -> str:
    """A base64 data URL with ``size`` characters of (incompressible) image data."""
    data = base64.b64encode(random.Random(seed).randbytes(size * 3 // 4 + 3)).decode()[:size]
    return "data:image/png;base64," + data


@rewind.llm
def describe(image: str, question: str) -> str:
    return "Nothing changed on the screen."


@rewind.tool
def read_document(index: int) -> str:
    return DOCUMENTS[index]


DOCUMENTS: list[str] = []


def test_a_megabyte_image_re_sent_every_turn_costs_one_blob(trace_path: Path) -> None:
    screenshot = image(MB, seed=1)
    turns = 50
    with rewind.record(trace_path, externalize=64_000):
        for turn in range(turns):
            describe(screenshot, f"Turn {turn}: what changed?")
    blobs = list(Path(f"{trace_path}.blobs").iterdir())
    assert len(blobs) == 1 and blobs[0].stat().st_size == len(screenshot)
    size = trace_path.stat().st_size
    # A skeleton, the question, a 64-character reference and the function's name per turn.
    assert size < turns * 450
    assert size * 1_000 < turns * len(screenshot)  # inline, the same run would be 50 MB
    with rewind.replay(trace_path, require_full_consumption=True):
        for turn in range(turns):
            describe(screenshot, f"Turn {turn}: what changed?")


def test_trace_size_follows_unique_bytes(trace_path: Path) -> None:
    shots = [image(200_000, seed=s) for s in (1, 2)]
    with rewind.record(trace_path, externalize=64_000):
        for turn in range(20):
            describe(shots[turn % 2], f"Turn {turn}")
    stored = sum(p.stat().st_size for p in Path(f"{trace_path}.blobs").iterdir())
    assert stored == sum(len(s) for s in shots)
    assert trace_path.stat().st_size < 20 * 400


def test_lazy_replay_memory_follows_events_not_bytes(trace_path: Path) -> None:
    steps, size = 24, MB
    DOCUMENTS[:] = [image(size, seed=s) for s in range(steps)]
    with rewind.record(trace_path):  # v1, every megabyte inline
        for index in range(steps):
            read_document(index)
    DOCUMENTS.clear()
    assert trace_path.stat().st_size > steps * size
    gc.collect()
    tracemalloc.start()
    try:
        with rewind.replay(trace_path, require_full_consumption=True):
            for index in range(steps):
                assert len(read_document(index)) == size + len("data:image/png;base64,")
        _, lazy_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        loaded = Trace.load(trace_path)
        _, eager_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(loaded) == steps
    assert lazy_peak < 8 * size  # a handful of steps in flight, never the whole run
    assert eager_peak > steps * size  # what Trace.load holds, for contrast


def test_an_open_trace_keeps_a_few_hundred_bytes_per_step(trace_path: Path) -> None:
    steps = 2_000
    DOCUMENTS[:] = [f"document {i} " * 40 for i in range(steps)]
    with rewind.record(trace_path):
        for index in range(steps):
            read_document(index)
    gc.collect()
    tracemalloc.start()
    try:
        trace = Trace.open(trace_path)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(trace) == steps
    assert held / steps < 600
    assert os.path.getsize(trace_path) / steps > 600  # so the bodies cannot be what is held


def test_compaction_shrinks_repeated_history_tenfold(trace_path: Path) -> None:
    rng = random.Random(3)
    words = ["the", "agent", "searched", "flights", "hotels", "prices", "for", "dates", "and", "asked", "again"]
    history: list[dict[str, str]] = []

    @rewind.llm
    def chat(messages: list[dict[str, str]]) -> dict[str, str]:
        return {"role": "assistant", "content": " ".join(rng.choice(words) for _ in range(30))}

    with rewind.record(trace_path):
        for _ in range(200):
            history.append({"role": "user", "content": " ".join(rng.choice(words) for _ in range(40))})
            history.append(chat(history[-12:]))
    archive = compact(trace_path)
    ratio = trace_path.stat().st_size / Path(archive).stat().st_size
    assert ratio >= 10
    assert [e.to_dict() for e in Trace.open(archive)] == [e.to_dict() for e in Trace.load(trace_path)]
