"""Fuzzing every reader with damaged and hostile traces (docs/trace-format.md, "Opening a
trace from anywhere").

A seeded mutator damages real recordings (v1, v2 with blobs, gzip archives) the ways
files get damaged and the ways an attacker would: flipped and inserted bytes, torn and
shuffled lines, pathological JSON values (overflowing numbers, nesting past the stack,
duplicate keys, lone surrogates, escape sequences), forged blob references and blob
files, gzip bombs. Each case goes through ``Trace.open``, ``Trace.load``, strict and
parallel replay, fork, and every CLI command. The promise checked:

- only documented errors: a ``RewindError`` (``TraceFormatError``, ``DivergenceError``,
  ``ReplayedError`` …) from the Python API, exit status 0, 1 or 2 from the CLI, never an
  internal error (exit 3) or another exception;
- no hang: every case finishes within seconds (a watchdog kills a stuck run loudly);
- bounded memory: the whole run stays under a fixed peak;
- output stays inert: no control character from the trace reaches the terminal.

Each case is reproducible from its seed (printed on failure). ``REWIND_FUZZ_CASES=N``
runs N cases per format instead of the few-second default (50 cases in all); 800 per
format passed when this was written. A case that hangs ends the run with every thread's
traceback on stderr (run with ``-s`` to see it).
"""

from __future__ import annotations

import faulthandler
import gzip
import os
import random
import re
import shutil
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rewind
from rewind.cli import cli
from rewind.errors import RewindError, RewindWarning
from rewind.storage.trace import Trace

CASES = int(os.environ.get("REWIND_FUZZ_CASES", "0")) or None
SEED = 20261201
CASE_SECONDS = 10.0
PEAK_BYTES = 96 << 20
SMALL_LIMIT = 4 << 20  # archive and blob limits during the fuzz, so bombs stay cheap

_OUR_SGR = re.compile(r"\x1b\[[0-9;]*m")
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


# -- the recorded agent ------------------------------------------------------------------


@rewind.llm(name="model")
def model(prompt: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"answer to {prompt}"}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }


@rewind.tool(name="search")
def search(query: str) -> dict[str, Any]:
    return {"query": query, "hits": [{"title": f"hit {i}", "score": i / 3} for i in range(3)], "page": "P" * 700}


@rewind.tool(name="flaky")
def flaky(attempt: int) -> None:
    raise ValueError(f"attempt {attempt} failed")


@rewind.memory(name="recall")
def recall(key: str) -> str:
    return f"remembered {key}"


def agent() -> None:
    model("plan a trip")
    search("flights to Lisbon")
    try:
        flaky(1)
    except ValueError:
        pass
    recall("budget")
    model("summarize")


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, dict[str, bytes]]]:
    """The recordings every case starts from: trace bytes and blob files by name."""
    folder = tmp_path_factory.mktemp("originals")
    found: dict[str, tuple[bytes, dict[str, bytes]]] = {}
    for name, externalize in (("v1", None), ("v2", 512)):
        path = folder / f"{name}.rewind"
        with rewind.record(path, meta={"run": name}, externalize=externalize):
            agent()
        blobs_dir = Path(f"{path}.blobs")
        blobs = {p.name: p.read_bytes() for p in blobs_dir.iterdir()} if blobs_dir.is_dir() else {}
        found[name] = (path.read_bytes(), blobs)
    assert found["v2"][1], "the v2 recording keeps blobs"
    return found


# -- the mutator ---------------------------------------------------------------------------

NASTY_VALUES = [
    b"Infinity",
    b"-Infinity",
    b"NaN",
    b"1e400",
    b"-1",
    b"1.5",
    b"9" * 30,
    b"9" * 5000,
    b"true",
    b"null",
    b'""',
    b"{}",
    b"[]",
    b'"\\u001b]52;c;cm0gLXJm\\u0007\\u001b[2J"',
    b'"\\ud800"',
    b'"\xc2\x9b31m\xe2\x80\xae"',
    b'{"__rewind_blob__":"../../../etc/passwd"}',
    b'{"__rewind_blob__":"' + b"a" * 64 + b'"}',
    b'{"__bytes_hex__":"zz"}',
    b'{"__bytes_hex__":{"__rewind_blob__":"' + b"b" * 64 + b'"}}',
    b'"' + b"A" * 20000 + b'"',
]
NASTY_BYTES = [
    b"\x1b]52;c;AA\x07",
    b"\x1b[2J",
    b"\x9b",
    b"\xff",
    b"\x00",
    b"\n",
    b"\r",
    b"{",
    b"}",
    b'"',
    b"\\",
    b",",
    "\u202e".encode(),
]
KEYS = [b"seq", b"kind", b"name", b"fingerprint", b"ts", b"duration_ms", b"ok", b"live", b"response", b"error"]
KEYS += [b"request", b"stream", b"format", b"version", b"blobs", b"externalize", b"meta"]
_VALUE = re.compile(rb'(?<=:)(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|"(?:[^"\\]|\\.)*")')
_SHA = re.compile(rb"[0-9a-f]{64}")


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def replace_value(rng: random.Random, data: bytes) -> bytes:
    found = list(_VALUE.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    return data[: match.start()] + rng.choice(NASTY_VALUES) + data[match.end() :]


def deep_value(rng: random.Random, data: bytes) -> bytes:
    found = list(_VALUE.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    depth = rng.choice([150, 197, 198, 199, 200, 201, 5000, 100_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"k":', b"}")])
    return data[: match.start()] + opener * depth + b"1" + closer * depth + data[match.end() :]


def extra_key(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = rng.randrange(len(lines))
    line = lines[index]
    if not line.endswith(b"}"):
        return data
    pair = b'"' + rng.choice(KEYS) + b'":' + rng.choice(NASTY_VALUES)
    if rng.random() < 0.5:
        lines[index] = line[:-1] + b"," + pair + b"}"
    else:
        lines[index] = b"{" + pair + b"," + line[1:]
    return b"\n".join(lines)


def line_surgery(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    op = rng.randrange(6)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if op == 0:
        lines.insert(j, lines[i])  # a step (or the header) twice
    elif op == 1 and len(lines) > 1:
        del lines[i]
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        lines.insert(i, b"   ")
    elif op == 4:
        return b"\r\n".join(lines)
    else:
        return data[: rng.randrange(len(data) + 1)]  # torn anywhere
    return b"\n".join(lines)


def byte_noise(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(buf) + 1)
        if rng.random() < 0.5 and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        else:
            buf[at:at] = rng.choice(NASTY_BYTES)
    return bytes(buf)


def forge_blob_reference(rng: random.Random, data: bytes) -> bytes:
    found = list(_SHA.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    forged = rng.choice([b"../" * 5 + b"etc/passwd", b"A" * 64, b"0" * 64, b"c" * 63, match.group().upper()])
    return data[: match.start()] + forged + data[match.end() :]


def edit_header(rng: random.Random, data: bytes) -> bytes:
    head, _, rest = data.partition(b"\n")
    edits = [
        (b'"version":1', rng.choice([b'"version":2', b'"version":99', b'"version":true', b'"version":1e400'])),
        (b'"version":2', rng.choice([b'"version":1', b'"version":0'])),
        (b'"blobs":"', b'"blobs":"../../elsewhere.blobs","x":"'),
        (b'"externalize":512', rng.choice([b'"externalize":-1', b'"externalize":1e400', b'"externalize":null'])),
        (b'"meta":{', b'"meta":{"\\u001b]0;title\\u0007":"\\u001b[2J",'),
    ]
    old, new = rng.choice(edits)
    return head.replace(old, new, 1) + b"\n" + rest


TRACE_MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    replace_value,
    replace_value,
    deep_value,
    extra_key,
    extra_key,
    line_surgery,
    line_surgery,
    byte_noise,
    forge_blob_reference,
    edit_header,
]


def mutate(rng: random.Random, data: bytes) -> bytes:
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(TRACE_MUTATIONS)(rng, data)
    return data


def damage_blobs(rng: random.Random, folder: Path) -> None:
    files = sorted(folder.iterdir())
    if not files:
        return
    victim = rng.choice(files)
    op = rng.randrange(6)
    if op == 0:
        victim.unlink()
    elif op == 1:
        victim.write_bytes(victim.read_bytes()[: rng.randrange(victim.stat().st_size + 1)])
    elif op == 2:
        victim.write_bytes(byte_noise(rng, victim.read_bytes()))
    elif op == 3 and hasattr(os, "mkfifo"):
        victim.unlink()
        os.mkfifo(victim)
    elif op == 4:
        victim.unlink()
        victim.symlink_to("/dev/zero")
    else:
        with open(victim, "r+b") as fh:
            fh.truncate(SMALL_LIMIT + 1)  # sparse, over the blob limit


def gzip_bomb(rng: random.Random, data: bytes) -> bytes:
    """The trace, then more decompressed bytes than the archive limit allows."""
    filler = rng.choice(
        [bytes(SMALL_LIMIT + 4096), b"\n" * (SMALL_LIMIT + 4096), data * (SMALL_LIMIT // len(data) + 2)]
    )
    return gzip.compress(data + filler, compresslevel=1, mtime=0)


# -- running one case ------------------------------------------------------------------------


def documented(fn: Callable[[], object]) -> None:
    """Run ``fn``; a ``RewindError`` is a documented outcome, anything else fails the test."""
    try:
        fn()
    except RewindError:
        pass


def touch_everything(trace: Trace) -> None:
    for event in trace:
        event.response, event.error, event.get("stream"), event.request, event.to_dict()
        event.hydrated().response  # noqa: B018


def assert_inert(text: str) -> None:
    bad = _UNSAFE.search(_OUR_SGR.sub("", text))
    assert bad is None, f"raw {bad.group()!r} in CLI output: {text[max(0, bad.start() - 80) : bad.end() + 40]!r}"


def run_cli(*args: object, input: str | None = None) -> None:
    result = CliRunner().invoke(cli, ["--no-pager", "--color", "always", *map(str, args)], input=input)
    where = f"rewind {' '.join(map(str, args))}"
    assert result.exit_code in (0, 1, 2), f"{where}: exit {result.exit_code}\n{result.output}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{where} raised {result.exception!r}") from result.exception
    assert "internal error" not in result.output and "Traceback" not in result.output, result.output
    if result.exit_code == 2:
        assert "rewind: error:" in result.output, result.output
    assert_inert(result.output)


def exercise(path: Path, original: Path, work: Path) -> None:
    """Every reader and every command, on one damaged trace."""
    documented(lambda: touch_everything(Trace.load(path)))
    documented(lambda: touch_everything(Trace.open(path)))
    for match in ("strict", "parallel"):

        def replay(match: str = match) -> None:
            with rewind.replay(path, match=match):
                agent()

        documented(replay)
    fork_path = work / "fork.rewind"

    def fork() -> None:
        try:
            session = rewind.fork(path, at=2, save_as=fork_path)
            with session:
                agent()
        except ValueError as exc:
            if "past the end" not in str(exc):  # a damaged trace may hold fewer steps than at=
                raise
            return
        # What a fork wrote, every reader reads.
        touch_everything(Trace.load(fork_path))

    documented(fork)
    run_cli("show", path)
    run_cli("show", "-v", path)
    run_cli("stats", path)
    run_cli("diff", original, path)
    run_cli("diff", "-v", path, original)
    run_cli("show", "-i", "--no-tui", path, input="f\nn\nf\nn\nf\nj 3\nq\n")
    run_cli("compact", path, "-o", work / "archive.rewind.gz", "--force")


@pytest.fixture
def fuzz_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REWIND_MAX_ARCHIVE_BYTES", str(SMALL_LIMIT))
    monkeypatch.setenv("REWIND_MAX_BLOB_BYTES", str(SMALL_LIMIT))
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RewindWarning)
        try:
            yield
            _, peak = tracemalloc.get_traced_memory()
            assert peak < PEAK_BYTES, f"peak traced memory {peak:,} bytes"
        finally:
            tracemalloc.stop()


def write_case(
    rng: random.Random, originals: dict[str, tuple[bytes, dict[str, bytes]]], fmt: str, work: Path
) -> tuple[Path, Path]:
    """One damaged trace in ``work`` (``fmt``: v1, v2 or gzip), beside its original: ``(path, original)``.

    The chaos suite (tests/chaos/fuzz.py) draws its thousand cases with this too."""
    which = fmt if fmt != "gzip" else rng.choice(["v1", "v2"])
    source, blobs = originals[which]
    original = work / "original.rewind"
    original.write_bytes(source)
    name = "run.rewind.gz" if fmt == "gzip" else "run.rewind"
    path = work / name
    data = mutate(rng, source)
    if fmt == "gzip":
        roll = rng.random()
        if roll < 0.15:
            data = gzip_bomb(rng, data)
        else:
            data = gzip.compress(data, mtime=0)
            if roll < 0.4:
                data = byte_noise(rng, data) if rng.random() < 0.5 else data[: rng.randrange(len(data))]
    path.write_bytes(data)
    for folder in {Path(f"{original}.blobs"), Path(f"{path}.blobs")} if blobs else ():
        folder.mkdir(exist_ok=True)
        for blob, content in blobs.items():
            (folder / blob).write_bytes(content)
    if blobs and rng.random() < 0.4:
        damage_blobs(rng, Path(f"{path}.blobs"))
    return path, original


def fuzz(originals: dict[str, tuple[bytes, dict[str, bytes]]], tmp_path: Path, fmt: str, cases: int) -> None:
    for case in range(CASES or cases):
        seed = SEED + case
        rng = random.Random(f"{fmt}-{seed}")
        work = tmp_path / f"case{case}"
        work.mkdir()
        path, original = write_case(rng, originals, fmt, work)
        started = time.monotonic()
        # A hang kills the run loudly (with every thread's traceback), not silently.
        faulthandler.dump_traceback_later(CASE_SECONDS * 6, exit=True, file=sys.__stderr__)
        try:
            exercise(path, original, work)
        except BaseException as exc:
            raise AssertionError(f"fuzz case {fmt} #{case} (rng seed {fmt}-{seed}) failed: {exc!r}") from exc
        finally:
            faulthandler.cancel_dump_traceback_later()
        took = time.monotonic() - started
        assert took < CASE_SECONDS, f"fuzz case {fmt} #{case} (seed {fmt}-{seed}) took {took:.1f} s"
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.usefixtures("fuzz_env")
def test_fuzz_v1_traces(originals, tmp_path: Path) -> None:
    fuzz(originals, tmp_path, "v1", 20)


@pytest.mark.usefixtures("fuzz_env")
def test_fuzz_v2_traces_with_blobs(originals, tmp_path: Path) -> None:
    fuzz(originals, tmp_path, "v2", 15)


@pytest.mark.usefixtures("fuzz_env")
def test_fuzz_gzip_archives(originals, tmp_path: Path) -> None:
    fuzz(originals, tmp_path, "gzip", 15)
