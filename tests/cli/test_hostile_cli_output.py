"""What the command line prints about hostile text and failed writes: ``--json`` escapes the
characters a terminal would obey, and a folder that cannot be written is named as such
(never "cannot read")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from rewind.cli import cli
from rewind.storage.trace import Event, Trace, new_header
from tests.hostile import telemetry

HOSTILE = "look\x9b2J\u202eright"
REWIND = Path(sys.executable).with_name("rewind")


def _trace(path: Path) -> Path:
    Trace([Event(0, "tool", HOSTILE, "f" * 16, {"args": []}, "ok", None)], header=new_header(None)).dump(path)
    return path


def test_check_json_escapes_c1_controls_and_bidi_overrides(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["check", str(_trace(tmp_path / "t.rewind")), "--json"])
    assert "\x9b" not in out.output and "\u202e" not in out.output
    assert "\\u009b2J\\u202eright" in out.output
    assert json.loads(out.output)["results"][0]["name"] == HOSTILE  # the same value to a JSON reader


def test_import_json_escapes_them_too(tmp_path: Path) -> None:
    source = telemetry.write_json(tmp_path, "s.json", [telemetry.span(telemetry.span_id(0), name=HOSTILE)])
    out = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "x.rewind"), "--json"])
    assert "\x9b" not in out.output and "\u202e" not in out.output
    assert json.loads(out.output)["unknown_layouts"][0]["names"] == [HOSTILE]


def _in_read_only_folder(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "ro"
    folder.mkdir()
    # A read-only mount (root ignores directory permissions), in a mount namespace of its own.
    script = f'mount -t tmpfs -o ro tmpfs {folder} && exec "$@"'
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWIND_")}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", str(REWIND), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_report_into_a_read_only_folder_says_it_cannot_write(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.rewind")
    done = _in_read_only_folder(tmp_path, "report", str(trace), "-o", str(tmp_path / "ro" / "t.html"))
    assert done.returncode == 2, done.stderr
    assert "t.html: cannot write (Read-only file system)" in done.stderr
    assert "cannot read" not in done.stderr


def test_import_into_a_read_only_folder_says_it_cannot_write(tmp_path: Path) -> None:
    source = telemetry.two_recorded_runs(tmp_path)
    done = _in_read_only_folder(
        tmp_path, "import", str(source), "--trace-id", "all", "-o", str(tmp_path / "ro" / "x.rewind")
    )
    assert done.returncode == 2, done.stderr
    assert "x.rewind: cannot write (Read-only file system)" in done.stderr
    assert "cannot read" not in done.stderr
