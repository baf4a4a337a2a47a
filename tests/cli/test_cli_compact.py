from __future__ import annotations

import gzip
from pathlib import Path

from rewind_runs import record_long, record_trip, trip_agent

import rewind


def test_compact_writes_a_gzip_archive_that_loads_everywhere(run_cli, tmp_path: Path) -> None:
    path = record_long(tmp_path / "long.rewind", 200)
    result = run_cli("compact", path)
    assert result.returncode == 0, result.stderr
    archive = Path(f"{path}.gz")
    assert archive.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(archive.read_bytes()).startswith(b'{"format":"agent-rewind"')
    assert f"compacted {path}" in result.stdout and "x smaller), 200 steps" in result.stdout
    assert archive.stat().st_size * 3 < path.stat().st_size
    # Library readers, lazy and eager, and the stats command read it transparently.
    original, lazy, eager = rewind.Trace.load(path), rewind.Trace.open(archive), rewind.Trace.load(archive)
    assert [e.to_dict() for e in lazy] == [e.to_dict() for e in original] == [e.to_dict() for e in eager]
    assert lazy.header == original.header
    assert run_cli("stats", archive).returncode == 0


def test_archive_replays_offline(run_cli, tmp_path: Path) -> None:
    path = record_trip(tmp_path / "trip.rewind")
    archive = tmp_path / "archive" / "trip.gz"
    archive.parent.mkdir()
    assert run_cli("compact", path, "-o", archive).returncode == 0
    with rewind.replay(archive, require_full_consumption=True) as session:
        trip_agent()()
    assert session.cursor == 4


def test_output_name_without_gz_is_still_gzip(run_cli, tmp_path: Path) -> None:
    path = record_trip(tmp_path / "trip.rewind")
    out = tmp_path / "archived.rewind"
    assert run_cli("compact", path, "-o", out).returncode == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert len(rewind.Trace.open(out)) == 4
    assert not list(tmp_path.glob(".*compact*")), "no temporary file left behind"


def test_refuses_to_clobber(run_cli, tmp_path: Path, input_error) -> None:
    path = record_trip(tmp_path / "trip.rewind")
    assert run_cli("compact", path).returncode == 0
    input_error(run_cli("compact", path), f"{path}.gz", "already exists", "--force")
    assert run_cli("compact", path, "--force").returncode == 0
    input_error(run_cli("compact", path, "-o", path), str(path), "overwrite its own source")
    input_error(run_cli("compact", f"{path}.gz"), f"{path}.gz", "already a gzip archive", "-o")
    assert run_cli("compact", f"{path}.gz", "-o", tmp_path / "again.gz").returncode == 0


def test_torn_trace_keeps_its_complete_steps(run_cli, tmp_path: Path) -> None:
    path = record_trip(tmp_path / "trip.rewind")
    with open(path, "ab") as fh:
        fh.write(b'{"seq":4,"kind":"llm","na')
    result = run_cli("compact", path)
    assert result.returncode == 0, result.stderr
    assert "torn line" in result.stdout
    assert len(rewind.Trace.load(f"{path}.gz")) == 4


def test_blobs_travel_with_the_archive_and_replay(run_cli, tmp_path: Path) -> None:
    image = b"\x89PNG" + bytes(range(256)) * 400

    @rewind.tool(name="look")
    def look(turn: int) -> dict[str, object]:
        return {"turn": turn, "image": image}

    path = tmp_path / "vision.rewind"
    with rewind.record(path, externalize=4096):
        for turn in range(3):
            look(turn)
    out = tmp_path / "out" / "vision.rewind.gz"
    out.parent.mkdir()
    result = run_cli("compact", path, "-o", out)
    assert result.returncode == 0, result.stderr
    assert len(list(Path(f"{out}.blobs").iterdir())) == 1  # one image, stored once
    assert b"__rewind_blob__" in gzip.decompress(out.read_bytes())  # references kept, not inlined
    with rewind.replay(out, require_full_consumption=True):
        assert [look(turn)["image"] for turn in range(3)] == [image] * 3


def test_bad_input(run_cli, tmp_path: Path, input_error) -> None:
    input_error(run_cli("compact", tmp_path / "nope.rewind"), "nope.rewind", "no such trace file")
    path = record_trip(tmp_path / "trip.rewind")
    input_error(run_cli("compact", path, "-o", path / "x.gz"), "x.gz", "cannot write the archive")
