"""Trace size of a vision agent: one 1 MB image re-sent for 200 turns.

    python benchmarks/bench_blobs.py [--turns N] [--size BYTES]

A decorated ``describe(image, question)`` call receives the same 1 MB base64 image
every turn (what vision agents do with a screenshot) with a short question ("Turn 7:
what changed?") and answers in one line ("Nothing changed."). The run is recorded
with ``externalize=64_000``: the image is written once to ``<trace>.blobs/`` and
each turn's line keeps a 64-character reference to it. Per turn, the line is then
the event skeleton (~190 bytes: seq, kind, name, fingerprint, timing), the
reference (~86 bytes) and the question and answer.

Target: the trace is at most 72 KB (KiB, as ``ls -lh`` shows it: 73,728 bytes), plus
exactly one blob. Floor printed beside it:
the same run with a one-character image, i.e. the size of everything but the image.
For contrast, the same run recorded inline (format v1) and an OpenAI-shaped vision
request (``messages`` with ``image_url`` parts) externalized the same way.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import _common as c
import _workload as w

import rewind

TARGET_BYTES = 72 * 1024  # "72 KB" as ls -lh and du -h count it
THRESHOLD = 64_000


@rewind.llm
def describe(image: str, question: str) -> str:
    return "Nothing changed."


@rewind.llm
def chat(model: str, messages: list[dict[str, object]]) -> dict[str, object]:
    return w.chat_response(0)


def _record(path: Path, image: str, turns: int, externalize: int | None) -> tuple[int, int, int]:
    """Record the run; return (trace bytes, blob files, blob bytes)."""
    with rewind.record(path, externalize=externalize):
        for turn in range(turns):
            describe(image, f"Turn {turn}: what changed?")
    return _sizes(path)


def _sizes(path: Path) -> tuple[int, int, int]:
    folder = Path(f"{path}.blobs")
    blobs = list(folder.iterdir()) if folder.is_dir() else []
    return path.stat().st_size, len(blobs), sum(b.stat().st_size for b in blobs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--size", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    image = w.image_data_url(args.size)
    report = c.Reporter("blobs", f"a {c.fmt(args.size, 'B')} image re-sent for {args.turns} turns")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        folder = Path(tmp)
        size, blobs, blob_bytes = _record(folder / "vision.rewind", image, args.turns, THRESHOLD)
        floor, _, _ = _record(folder / "floor.rewind", "x", args.turns, THRESHOLD)
        inline, _, _ = _record(folder / "inline.rewind", image, args.turns, None)
        os.unlink(folder / "inline.rewind")
        with rewind.record(folder / "openai.rewind", externalize=THRESHOLD):
            for turn in range(args.turns):
                chat(**w.vision_request(turn, image))
        openai_size, openai_blobs, _ = _sizes(folder / "openai.rewind")

    report.add(
        c.Result(
            "blobs",
            f"trace size, externalize={THRESHOLD:,}",
            size,
            "B",
            floor=floor,
            floor_name="same run, 1-char image",
            target=TARGET_BYTES,
            goal="max",
            note=f"{size:,} bytes = {size / 1024:.1f} KiB, {size / args.turns:.0f} B/turn",
        )
    )
    report.add(
        c.Result(
            "blobs",
            "blob files written",
            blobs,
            "",
            target=1,
            goal="max",
            note=f"{c.fmt(blob_bytes, 'B')} in the .blobs folder",
        )
    )
    report.add(c.Result("blobs", "same run recorded inline (v1, contrast)", inline, "B"))
    report.add(
        c.Result(
            "blobs",
            "OpenAI-shaped vision request, externalized",
            openai_size,
            "B",
            note=f"{openai_size / args.turns:.0f} B/turn, {openai_blobs} blob(s), full chat response per turn",
        )
    )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
