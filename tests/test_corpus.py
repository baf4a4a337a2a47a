"""Traces recorded by earlier rewinds keep their bytes, fingerprints and replays.

``tests/fixtures/corpus/`` holds small traces recorded once (decorated calls with
awkward values, errors, blobs, a gzip archive, OpenAI and Anthropic SDK steps with
streams and errors). Every test here re-does today what those recordings did and
compares byte for byte, so a change to the encoder, the writer or the readers that
would alter a recorded line or a fingerprint fails here:

- re-recording each agent gives the same lines (only the clock fields differ);
- each recorded request re-fingerprints to the fingerprint on its line, through the
  canonical encoder and through the path a live call takes;
- ``Trace.load`` and ``Trace.open`` read each line to the same data, and writing it
  again gives the same bytes;
- each trace replays strictly and completely, to the same values the live run got.

Regenerate (only to ADD a case; existing fixtures must never change):
``python tests/test_corpus.py --write``.
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import hashlib
import json
import re
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.data.canonical import canonical_json, canonical_text, text_fingerprint, to_jsonable
from rewind.storage.archive import compact
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"
API_KEY = "sk-corpus-never-in-a-trace"
MODEL = "gpt-4o-mini"
CLAUDE = "claude-3-5-haiku-latest"


# -- the agents the corpus was recorded from -------------------------------------------


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Booking:
    ref: str
    seats: tuple[int, ...]
    price: float


#: Values that exercise every spelling of the encoder: floats at the edges of repr's
#: notations, integers beyond 64 bits, non-ASCII, escapes, a lone surrogate, NaN and
#: infinities, marker-shaped dicts, integer keys, and types only ``to_jsonable`` knows.
AWKWARD: dict[str, Any] = {
    "floats": [0.0, -0.0, 1.5, 0.1, 1e16, 1e15, 123456789012345.6, 1e-4, 1e-5, 5e-324, 1.7976931348623157e308, -2.5e-8],
    "ints": [0, -1, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 2**70, -(2**100)],
    "text": [
        "café ☕ 日本語",
        "quote \" backslash \\ slash /",
        "\n\r\t\b\f",
        "\x00\x01\x1f\x7f",
        "\u2028\u2029",
        "\U0001f600",
    ],
    "lone_surrogate": "a\ud800b",
    "nan": [float("nan"), float("inf"), float("-inf")],
    "marker": {"__bytes_utf8__": "not bytes"},
    "empty": [{}, [], ""],
    "nested": {"z": 1, "a": {"y": [1, {"b": None, "a": True}], "x": False}},
}
ODD_TYPES: dict[str, Any] = {
    "bytes": b"hello",
    "binary": b"\xff\x00\xfe",
    "set": {"b", "a", "c"},
    "tuple": (1, 2),
    "dataclass": Booking("ABC123", (1, 2), 99.5),
    "enum": Colour.RED,
    "int_keys": {2: "two", 10: "ten"},
    "marker_in_odd": [{"__rewind_literal__": {"x": 1}}, {1, 2}],
}


def _decorated() -> dict[str, Callable[..., Any]]:
    @rewind.llm(name="chat")
    def chat(messages: list[dict[str, Any]], model: str, temperature: float = 0.0, **extra: Any) -> dict[str, Any]:
        last = messages[-1]["content"]
        return {"id": f"r-{len(messages)}", "choices": [{"message": {"role": "assistant", "content": f"echo {last}"}}]}

    @rewind.tool(name="lookup")
    def lookup(query: Any) -> Any:
        return query

    @rewind.memory(name="recall")
    def recall(key: str) -> Any:
        return {"key": key, "values": [1, 2.5, None, "x"]}

    @rewind.tool(name="explode")
    def explode(reason: str) -> Any:
        raise ValueError(f"cannot do that: {reason}")

    @rewind.tool(name="tool.odd")
    def odd(kind: str) -> Any:
        return ODD_TYPES[kind]

    return {"chat": chat, "lookup": lookup, "recall": recall, "explode": explode, "odd": odd}


def agent_decorators() -> list[Any]:
    fns = _decorated()
    out: list[Any] = []
    history = [{"role": "system", "content": "You are terse."}]
    for turn in range(3):
        history.append({"role": "user", "content": f"turn {turn} — ünïcödé"})
        out.append(fns["chat"](history, MODEL, temperature=0.2, seed=turn))
    for key, value in AWKWARD.items():
        out.append(fns["lookup"]({key: value}))
    out.append(fns["recall"]("prefs"))
    try:
        fns["explode"]("no reason")
    except ValueError as exc:
        out.append(repr(exc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in ODD_TYPES:
            out.append(fns["lookup"](ODD_TYPES[kind]))
            out.append(fns["odd"](kind))
    return out


def agent_blobs() -> list[Any]:
    fns = _decorated()
    page = "lorem ipsum dolor " * 40
    return [fns["lookup"]({"page": page, "turn": turn}) for turn in range(3)]


def agent_openai(stub: StubServer) -> list[Any]:
    import openai

    stub.add_script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}]},
        "It is sunny.",
        "Streaming: one, two, three.",
        {"error": {"status": 429, "type": "rate_limit_error", "message": "slow down"}},
        {"text": "cut short here", "stream_error_after": 2},
    )
    out: list[Any] = []
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    with openai.OpenAI(base_url=stub.openai_base_url, api_key=API_KEY, max_retries=0) as client:
        first = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "weather?"}], tools=tools
        )
        out.append(first.model_dump())
        second = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "and so?"}])
        out.append(second.model_dump())
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "count"}], stream=True
        )
        out.append([chunk.model_dump() for chunk in stream])
        try:
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "again"}])
        except openai.APIStatusError as exc:
            out.append((type(exc).__name__, exc.status_code))
        chunks: list[Any] = []
        try:
            for chunk in client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "cut"}], stream=True
            ):
                chunks.append(chunk.model_dump())
        except Exception as exc:  # the SDK's own class for a broken stream varies by version
            chunks.append(type(exc).__name__)
        out.append(chunks)
        out.append(client.embeddings.create(model="text-embedding-3-small", input=["a", "b"]).model_dump())
    return out


def agent_anthropic(stub: StubServer) -> list[Any]:
    import anthropic

    stub.add_script("Bonjour.", "Streamed answer here.", {"error": {"status": 529, "type": "overloaded_error"}})
    out: list[Any] = []
    with anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key=API_KEY, max_retries=0) as client:
        message = client.messages.create(model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": "hi"}])
        out.append(message.model_dump())
        with client.messages.stream(
            model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": "stream"}]
        ) as stream:
            out.append(list(stream.text_stream))
            out.append(stream.get_final_message().model_dump())
        try:
            client.messages.create(model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": "again"}])
        except anthropic.APIStatusError as exc:
            out.append((type(exc).__name__, exc.status_code))
    return out


# -- recording and replaying one case --------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    agent: str
    externalize: int | None = None
    #: Which SDK patch the agent needs ("" for decorators only).
    sdk: str = ""

    @property
    def file(self) -> Path:
        return CORPUS / f"{self.name}.rewind"


CASES = [
    Case("decorators", "agent_decorators"),
    Case("blobs", "agent_blobs", externalize=200),
    Case("openai", "agent_openai", sdk="openai"),
    Case("anthropic", "agent_anthropic", sdk="anthropic"),
]
GZIP_OF = "decorators"
#: Steps whose request has integer dict keys: recorded in the one-pass encoder's
#: numeric key order, so only the line's own bytes re-hash to their fingerprint.
INT_KEY_STEPS = {"decorators": {25}}  # the archive in the corpus: decorators.rewind compacted


def _patched(sdk: str) -> Callable[[], None]:
    if not sdk:
        return lambda: None
    from rewind import integrations

    patch: Callable[[], Callable[[], None]] = getattr(integrations, f"patch_{sdk}")
    return patch()


def run_agent(case: Case) -> list[Any]:
    agent = globals()[case.agent]
    if not case.sdk:
        return agent()  # type: ignore[no-any-return]
    with StubServer() as server:
        return agent(server)  # type: ignore[no-any-return]


def record_case(case: Case, path: Path) -> list[Any]:
    unpatch = _patched(case.sdk)
    try:
        with rewind.record(path, meta={"corpus": case.name}, externalize=case.externalize):
            return run_agent(case)
    finally:
        unpatch()


def replay_case(case: Case, path: Path) -> list[Any]:
    unpatch = _patched(case.sdk)
    try:
        with rewind.replay(path, match="strict", require_full_consumption=True):
            return run_agent(case)
    finally:
        unpatch()


# Clock fields change with every recording; everything else on a line must not.
_CLOCK = re.compile(rb'"ts":[-+.0-9eE]+,"duration_ms":[-+.0-9eE]+,')
_HEADER_CLOCK = ("created", "created_ts", "rewind_version")
# The stub server's HTTP date header, recorded on SDK errors.
_DATE = re.compile(rb'"date":"[^"]*"')
# The decorated function that recorded a step, written since issue 35 (the corpus lines
# predate it); it is never part of a call's identity, so old traces replay the same.
_FUNCTION = re.compile(rb',"function":"[^"]*"')


def comparable_lines(path: Path) -> list[bytes]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    lines = raw.split(b"\n")
    header = json.loads(lines[0])
    for key in _HEADER_CLOCK:
        header.pop(key, None)
    events = [
        _FUNCTION.sub(b"", _DATE.sub(b'"date":"-"', _CLOCK.sub(b'"ts":0,"duration_ms":0,', line))) for line in lines[1:]
    ]
    return [json.dumps(header, sort_keys=True).encode(), *events]


def blob_files(path: Path) -> dict[str, bytes]:
    folder = path.parent / (path.name + ".blobs")
    if not folder.is_dir():
        return {}
    return {item.name: item.read_bytes() for item in sorted(folder.iterdir())}


def comparable_results(values: Any) -> str:
    """What the agent saw, as text (reprs of odd types included; NaN compares equal)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return canonical_json(to_jsonable(values))


# -- the tests --------------------------------------------------------------------------


@pytest.fixture(params=CASES, ids=lambda case: case.name)
def case(request: pytest.FixtureRequest) -> Case:
    case: Case = request.param
    if case.sdk:
        pytest.importorskip(case.sdk)
    return case


def test_corpus_is_checked_in() -> None:
    for case in CASES:
        assert case.file.is_file(), f"missing corpus trace {case.file}"
    assert (CORPUS / f"{GZIP_OF}.rewind.gz").is_file()
    assert blob_files(CORPUS / "blobs.rewind"), "the blobs case keeps its blob folder"


def test_rerecording_gives_the_same_bytes(case: Case, tmp_path: Path) -> None:
    path = tmp_path / case.file.name
    record_case(case, path)
    assert comparable_lines(path) == comparable_lines(case.file)
    assert blob_files(path) == blob_files(case.file)


def test_fingerprints_are_unchanged(case: Case) -> None:
    trace = Trace.load(case.file)
    assert len(trace) > 0
    lines = case.file.read_bytes().split(b"\n")[1:-1]
    for event, line in zip(trace, lines, strict=True):
        # The writer splices the request's canonical text in last: its bytes are what was hashed.
        stored = line[line.rindex(b',"request":') + len(b',"request":') : -1]
        if case.externalize is None:
            assert hashlib.sha256(stored).hexdigest() == event.fingerprint, f"step {event.seq}"
        text = canonical_json(event.request)
        if text.encode("utf-8", "surrogatepass") == stored or case.externalize is not None:
            # Re-encoding the request as read spells it alike (integer keys, which the
            # one-pass encoder sorts as numbers, are the documented exception).
            assert text_fingerprint(text) == event.fingerprint, f"step {event.seq}"
            assert canonical_text(event.request) == text, f"step {event.seq}"
        else:
            assert event.seq in INT_KEY_STEPS[case.name], f"step {event.seq}: {stored[:200]!r}"


def test_readers_agree_and_rewrite_the_same_bytes(case: Case, tmp_path: Path) -> None:
    eager, lazy = Trace.load(case.file), Trace.open(case.file)
    assert [e.to_dict() for e in eager] == [e.to_dict() for e in lazy] or _nan_equal(eager, lazy)
    lines = case.file.read_bytes().split(b"\n")[1:-1]
    if case.externalize is None:
        # Inline traces: each event writes back to exactly its recorded line.
        assert [event.to_line() for event in lazy] == lines
        assert [event.to_line() for event in eager] == lines
    copy = tmp_path / "copy.rewind"
    eager.dump(copy)
    assert [e.fingerprint for e in Trace.load(copy)] == [e.fingerprint for e in eager]


def _nan_equal(a: Trace, b: Trace) -> bool:
    # NaN != NaN, so compare the decorators corpus by its canonical text instead.
    return [canonical_json(e.to_dict()) for e in a] == [canonical_json(e.to_dict()) for e in b]


def test_replays_strictly_to_what_the_live_run_saw(case: Case, tmp_path: Path) -> None:
    live = run_live(case, tmp_path)
    replayed = replay_case(case, case.file)
    assert comparable_results(replayed) == comparable_results(live)


def run_live(case: Case, tmp_path: Path) -> list[Any]:
    return record_case(case, tmp_path / "live.rewind")


def test_gzip_archive_reads_and_replays_like_its_source(tmp_path: Path) -> None:
    archive = CORPUS / f"{GZIP_OF}.rewind.gz"
    source = CORPUS / f"{GZIP_OF}.rewind"
    assert comparable_lines(archive) == comparable_lines(source)
    assert [e.fingerprint for e in Trace.open(archive)] == [e.fingerprint for e in Trace.open(source)]
    case = next(c for c in CASES if c.name == GZIP_OF)
    assert comparable_results(replay_case(case, archive)) == comparable_results(replay_case(case, source))
    again = tmp_path / "again.rewind.gz"
    compact(source, again)
    assert comparable_lines(again) == comparable_lines(archive)


def write_corpus() -> Iterator[Path]:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        shutil.rmtree(case.file.parent / (case.file.name + ".blobs"), ignore_errors=True)
        record_case(case, case.file)
        yield case.file
    archive = CORPUS / f"{GZIP_OF}.rewind.gz"
    compact(CORPUS / f"{GZIP_OF}.rewind", archive)
    yield archive


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_corpus.py --write   (adds cases; never rewrite old ones)")
    for written in write_corpus():
        print(written)
