"""Format v2: payload leaves externalized into a content-addressed ``<trace>.blobs/`` folder."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

import rewind
from rewind.data.canonical import fingerprint, to_jsonable
from rewind.storage import trace_header
from rewind.storage.archive import compact
from rewind.storage.trace import Trace, TraceFormatError

THRESHOLD = 1_000
BIG = "screenshot:" + "A" * 5_000  # one "image", re-sent every turn
RAW = bytes(range(256)) * 8  # not UTF-8: recorded as tagged hex, stored raw


@rewind.llm
def look(image: str, question: str) -> str:
    return f"{question} -> nothing changed"


@rewind.tool
def fetch(name: str) -> bytes:
    return RAW


@rewind.tool
def echo(payload: object) -> object:
    return payload


def record_turns(path: Path, turns: int = 5, *, externalize: int | None = THRESHOLD) -> None:
    with rewind.record(path, externalize=externalize):
        for turn in range(turns):
            look(BIG, f"turn {turn}")
        fetch("dump.bin")


def blob_files(path: Path) -> list[Path]:
    return sorted(Path(f"{path}.blobs").iterdir())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_big_leaves_are_stored_once_by_sha256_and_the_trace_keeps_markers(trace_path: Path) -> None:
    record_turns(trace_path, turns=5)
    header, *lines = trace_path.read_text().splitlines()
    assert json.loads(header)["version"] == 2
    assert json.loads(header)["externalize"] == THRESHOLD and json.loads(header)["blobs"] == "run.rewind.blobs"
    assert "AAAA" not in trace_path.read_text()
    names = {p.name for p in blob_files(trace_path)}
    assert names == {sha(BIG.encode()), sha(RAW)}  # five turns, one image blob
    first = json.loads(lines[0])
    assert first["request"]["image"] == {"__rewind_blob__": sha(BIG.encode())}
    assert json.loads(lines[-1])["response"] == {"__bytes_hex__": {"__rewind_blob__": sha(RAW)}}
    assert (Path(f"{trace_path}.blobs") / sha(RAW)).read_bytes() == RAW  # raw bytes, not hex text


def test_fingerprints_cover_the_full_content(trace_path: Path, tmp_path: Path) -> None:
    inline = tmp_path / "inline.rewind"
    record_turns(trace_path)
    record_turns(inline, externalize=None)
    externalized = [json.loads(line)["fingerprint"] for line in trace_path.read_text().splitlines()[1:]]
    assert externalized == [json.loads(line)["fingerprint"] for line in inline.read_text().splitlines()[1:]]
    assert externalized[0] == fingerprint(to_jsonable({"image": BIG, "question": "turn 0"}))


@pytest.mark.parametrize("opener", [Trace.load, Trace.open])
def test_readers_hand_back_the_original_values(trace_path: Path, opener) -> None:
    record_turns(trace_path)
    trace = opener(trace_path)
    assert trace.version == 2 and len(trace) == 6
    assert [e.request["image"] for e in trace.events[:5]] == [BIG] * 5
    assert trace.events[-1].response == to_jsonable(RAW)
    assert "__rewind_blob__" not in json.dumps([e.to_dict() for e in trace])


def test_replay_serves_the_original_values(trace_path: Path) -> None:
    record_turns(trace_path)
    with rewind.replay(trace_path, require_full_consumption=True) as session:
        answers = [look(BIG, f"turn {turn}") for turn in range(5)]
        assert fetch("dump.bin") == RAW
    assert answers[3] == "turn 3 -> nothing changed" and session.cursor == 6


def test_threshold_is_inclusive_and_small_leaves_stay_inline(trace_path: Path) -> None:
    at, below = "x" * THRESHOLD, "y" * (THRESHOLD - 1)
    multibyte = "é" * (THRESHOLD // 2)  # THRESHOLD bytes of UTF-8 in half as many characters
    with rewind.record(trace_path, externalize=THRESHOLD):
        echo({"at": at, "below": below, "multibyte": multibyte})
    request = json.loads(trace_path.read_text().splitlines()[1])["request"]["payload"]
    assert request["below"] == below
    assert request["at"] == {"__rewind_blob__": sha(at.encode())}
    assert request["multibyte"] == {"__rewind_blob__": sha(multibyte.encode())}
    assert Trace.open(trace_path).events[0].request["payload"] == {"at": at, "below": below, "multibyte": multibyte}


def test_user_data_shaped_like_a_marker_stays_literal(trace_path: Path) -> None:
    lookalike = {"__rewind_blob__": "0" * 64}
    with rewind.record(trace_path, externalize=THRESHOLD):
        echo(lookalike)
    with rewind.replay(trace_path):
        assert echo(lookalike) == lookalike


def test_redaction_happens_before_anything_reaches_a_blob(trace_path: Path) -> None:
    secret = "sk-secret " + "z" * 2_000

    def scrub(payload: object) -> object:
        return json.loads(json.dumps(payload).replace("sk-secret", "[redacted]"))

    with rewind.record(trace_path, externalize=THRESHOLD, redact=scrub):
        echo(secret)
    stored = b"".join(p.read_bytes() for p in blob_files(trace_path)) + trace_path.read_bytes()
    assert b"sk-secret" not in stored and b"[redacted]" in stored


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "64k"])
def test_bad_thresholds_are_refused_up_front(trace_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="externalize="):
        rewind.record(trace_path, externalize=bad)  # type: ignore[arg-type]


def test_a_missing_blob_fails_loudly_with_its_sha_and_expected_path(trace_path: Path) -> None:
    record_turns(trace_path)
    missing = Path(f"{trace_path}.blobs") / sha(BIG.encode())
    missing.unlink()
    with pytest.raises(TraceFormatError) as info:
        Trace.load(trace_path)
    assert sha(BIG.encode()) in str(info.value) and str(missing) in str(info.value)
    lazy = Trace.open(trace_path)  # skeletons need no blobs ...
    assert lazy.events[0].response == "turn 0 -> nothing changed"  # ... nor does a response without one
    with pytest.raises(TraceFormatError, match=sha(BIG.encode())):
        lazy.events[0].request  # noqa: B018 - reading it is the point


def test_replay_fails_loudly_when_a_response_blob_is_missing(trace_path: Path) -> None:
    record_turns(trace_path)
    (Path(f"{trace_path}.blobs") / sha(RAW)).unlink()
    with rewind.replay(trace_path):
        for turn in range(5):  # strict matching compares fingerprints: request blobs are not read
            look(BIG, f"turn {turn}")
        with pytest.raises(TraceFormatError, match=f"missing blob {sha(RAW)}.*copy that folder"):
            fetch("dump.bin")


def test_a_whole_missing_blob_folder_names_where_it_was_expected(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path)
    moved = tmp_path / "elsewhere" / "run.rewind"
    moved.parent.mkdir()
    trace_path.rename(moved)
    with pytest.raises(TraceFormatError) as info:
        Trace.load(moved)
    assert f"{moved}.blobs" in str(info.value)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda p: p.write_bytes(p.read_bytes()[:-1]),
        lambda p: p.write_bytes(p.read_bytes().replace(b"AAAA", b"AAAB", 1)),
    ],
    ids=["truncated", "edited"],
)
def test_a_tampered_blob_fails_loudly(trace_path: Path, tamper) -> None:
    record_turns(trace_path)
    blob = Path(f"{trace_path}.blobs") / sha(BIG.encode())
    tamper(blob)
    with pytest.raises(TraceFormatError, match="does not match its sha256") as info:
        Trace.open(trace_path).events[2].request  # noqa: B018
    assert str(blob) in str(info.value) and str(trace_path) in str(info.value)


def test_a_marker_cannot_reach_outside_the_blob_folder(trace_path: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    record_turns(trace_path, turns=1)
    text = trace_path.read_text()
    for reference in ["../../outside.txt", str(outside), "A" * 64, sha(b"x") + "/.."]:
        trace_path.write_text(text.replace(sha(BIG.encode()), reference))
        with pytest.raises(TraceFormatError, match="invalid blob reference"):
            Trace.load(trace_path)


def test_a_symlinked_blob_is_refused(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path, turns=1)
    blob = Path(f"{trace_path}.blobs") / sha(BIG.encode())
    elsewhere = tmp_path / "copy"
    elsewhere.write_bytes(blob.read_bytes())  # even with the right content
    blob.unlink()
    blob.symlink_to(elsewhere)
    with pytest.raises(TraceFormatError, match=sha(BIG.encode())):
        Trace.load(trace_path)


def test_a_header_cannot_point_the_blob_folder_elsewhere(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path, turns=1)
    os.rename(f"{trace_path}.blobs", tmp_path / "stolen.blobs")
    header, rest = trace_path.read_text().split("\n", 1)
    for name in ["../stolen.blobs", str(tmp_path / "stolen.blobs"), ".."]:
        doctored = json.loads(header) | {"blobs": name}
        trace_path.write_text(json.dumps(doctored) + "\n" + rest)
        with pytest.raises(TraceFormatError, match="missing blob"):
            Trace.load(trace_path)


def test_a_renamed_trace_still_finds_the_folder_its_header_names(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path, turns=2)
    renamed = tmp_path / "renamed.rewind"
    trace_path.rename(renamed)
    assert Trace.load(renamed).events[1].request["image"] == BIG


def test_an_older_reader_refuses_v2_cleanly(trace_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_turns(trace_path, turns=1)
    # What a v1-only rewind knows: patched where readers check headers (rewind.storage.trace re-exports it).
    monkeypatch.setattr(trace_header, "SUPPORTED_VERSIONS", frozenset({1}))
    with pytest.raises(TraceFormatError, match=r"format v2, newer than this rewind reads \(v1\); upgrade"):
        Trace.open(trace_path)


def test_an_invalid_threshold_in_a_header_is_a_format_error(trace_path: Path) -> None:
    record_turns(trace_path, turns=1)
    header, rest = trace_path.read_text().split("\n", 1)
    trace_path.write_text(json.dumps(json.loads(header) | {"externalize": "lots"}) + "\n" + rest)
    with pytest.raises(TraceFormatError, match="invalid externalize threshold"):
        Trace.open(trace_path)


def test_a_fork_of_a_v2_trace_keeps_externalizing(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path, turns=3)
    saved = tmp_path / "fork.rewind"
    with rewind.fork(trace_path, at=2, save_as=saved):
        look(BIG, "turn 0")
        look(BIG, "turn 1")
        look(BIG, "a new question")
    assert Trace.load(saved).version == 2 and "AAAA" not in saved.read_text()
    assert [p.name for p in blob_files(saved)] == [sha(BIG.encode())]
    with rewind.replay(saved, require_full_consumption=True):
        assert look(BIG, "turn 0") == "turn 0 -> nothing changed"
        assert look(BIG, "turn 1") == "turn 1 -> nothing changed"
        assert look(BIG, "a new question") == "a new question -> nothing changed"


def test_dump_writes_inline_unless_asked_to_externalize(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path, turns=2)
    trace = Trace.load(trace_path)
    inline, again = tmp_path / "inline.rewind", tmp_path / "again.rewind"
    trace.dump(inline)
    trace.dump(again, externalize=THRESHOLD)
    assert Trace.load(inline).version == 1 and BIG in inline.read_text()
    assert not Path(f"{inline}.blobs").exists()
    assert Trace.load(again).version == 2 and BIG not in again.read_text()
    assert [e.to_dict() for e in Trace.load(again)] == [e.to_dict() for e in trace]


def test_compacted_v2_archives_load_and_replay_beside_or_away_from_the_blobs(trace_path: Path, tmp_path: Path) -> None:
    record_turns(trace_path, turns=3)
    beside = compact(trace_path)
    assert beside == f"{trace_path}.gz" and not Path(f"{beside}.blobs").exists()  # reuses run.rewind.blobs
    away = compact(trace_path, tmp_path / "archive" / "old.rewind.gz")
    assert [p.name for p in blob_files(Path(away))] == [p.name for p in blob_files(trace_path)]
    assert gzip.decompress(Path(away).read_bytes()) == trace_path.read_bytes()  # the same bytes, compressed
    for archive in (beside, away):
        assert Trace.open(archive).events[2].request["image"] == BIG
        with rewind.replay(archive, require_full_consumption=True):
            assert [look(BIG, f"turn {turn}") for turn in range(3)][2] == "turn 2 -> nothing changed"
            assert fetch("dump.bin") == RAW
