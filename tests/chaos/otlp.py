"""Hostile OTLP files through ``rewind import``: real spans of a recorded OpenAI run,
encoded by OpenTelemetry's own OTLP encoder in the Collector file exporter's JSON lines,
then damaged structurally (values of the wrong type, overflowing numbers, deep nesting,
forged ids, huge strings, attributes repeated) and as bytes (noise, truncation, gzip bombs,
protobuf garbage). Every file ends in a documented exit (0, 1 or 2) without a traceback,
within seconds; what an import writes, every reader reads.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.cli import cli
from rewind.engine.telemetry import TRACERS
from rewind.errors import RewindError
from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "importing"))
from otlp_files import json_line

FILES = 240
FILE_SECONDS = 10.0
NASTY: list[Any] = [
    None,
    True,
    -1,
    2**70,
    1e308,
    "1e400",
    "",
    "x" * 200_000,
    [],
    {},
    [[[[[]]]]],
    {"stringValue": None},
    {"intValue": "99999999999999999999999999"},
    {"doubleValue": "NaN"},
    {"arrayValue": {"values": [{}] * 50}},
    {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "\u202e\x1b]52;c;AA\x07"}}]}},
    "zz" * 8,
    "0" * 32,
    "\ud800",
    "<script>alert(1)</script>",
]


def _nest(depth: int) -> str:
    """A kvlist nested ``depth`` deep, as JSON text (too deep for json.dumps to write)."""
    head = '{"kvlistValue":{"values":[{"key":"k","value":' * depth
    return head + '{"stringValue":"deep"}' + "}]}}" * depth


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _set(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    target = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return document


def _mutate(rng: random.Random, document: dict[str, Any]) -> bytes:
    doc = copy.deepcopy(document)
    deep: dict[str, str] = {}
    for _ in range(rng.randint(1, 4)):
        path = rng.choice(_paths(doc))
        roll = rng.random()
        if roll < 0.55:
            doc = _set(doc, path, copy.deepcopy(rng.choice(NASTY)))
        elif roll < 0.7:
            marker = f"@deep{len(deep)}@"
            deep[marker] = _nest(rng.choice([50, 250, 5000]))
            doc = _set(doc, path, marker)
        elif roll < 0.85 and path and isinstance(path[-1], int):
            parent = doc
            for part in path[:-1]:
                parent = parent[part]
            parent.extend(copy.deepcopy(parent) * rng.randint(1, 3))  # repeated attributes and spans
        else:
            doc = _set(doc, path, "ff" * rng.choice([1, 8, 16, 40]))  # a forged id or a value as hex
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
    for marker, nested in deep.items():
        text = text.replace(f'"{marker}"', nested)
    data = text.encode("utf-8", "surrogatepass")
    roll = rng.random()
    if roll < 0.1:
        data = data[: rng.randrange(len(data))]
    elif roll < 0.2:
        at = rng.randrange(len(data))
        data = data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[at:]
    return data


def _spans(work: Path) -> list[Any]:
    import openai

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    memory = InMemorySpanExporter()
    TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
    unpatch = rewind.patch_openai()
    try:
        with StubServer() as server, rewind.record(work / "local.rewind"):
            client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-chaos", max_retries=0)
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
            for _ in client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "stream"}], stream=True
            ):
                pass
    finally:
        unpatch()
    return list(memory.get_finished_spans())


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    document = json.loads(json_line(_spans(work)))
    tracebacks = hangs = written = 0
    slowest = 0.0
    exits: dict[str, int] = {}
    for number in range(FILES):
        source = work / f"spans{number}.jsonl"
        data = _mutate(rng, document)
        kind = rng.random()
        if kind < 0.08:
            source = source.with_suffix(".jsonl.gz")
            data = gzip.compress(b"\n" * (64 << 20), compresslevel=1) if kind < 0.02 else gzip.compress(data)
        elif kind < 0.12:
            source = source.with_suffix(".otlp")
            data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
        source.write_bytes(data)
        output = work / f"imported{number}.rewind"
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["--no-pager", "import", str(source), "-o", str(output)])
        took = time.monotonic() - started
        slowest = max(slowest, took)
        hangs += took > FILE_SECONDS
        exits[str(result.exit_code)] = exits.get(str(result.exit_code), 0) + 1
        crashed = result.exit_code not in (0, 1, 2) or "Traceback" in result.output
        crashed |= result.exception is not None and not isinstance(result.exception, SystemExit)
        if crashed:
            tracebacks += 1
            print(f"   otlp: file {number}: exit {result.exit_code} {result.output[-300:]!r}", file=sys.stderr)
        if output.exists():
            written += 1
            try:
                for event in rewind.Trace.load(output).events:
                    event.response, event.error, event.request  # noqa: B018
            except RewindError:
                pass
            except Exception as exc:
                tracebacks += 1
                print(f"   otlp: reading import {number}: {exc!r}", file=sys.stderr)
            output.unlink()
        source.unlink()
    return {
        "files": FILES,
        "imports_written": written,
        "exit_statuses": " ".join(f"{k}:{v}" for k, v in sorted(exits.items())),
        "tracebacks": tracebacks,
        "hangs": hangs,
        "slowest_file_s": round(slowest, 2),
    }
