"""``rewind import`` from a Phoenix that misbehaves (servers on loopback from
``tests/hostile/servers.py``): each ends promptly with a one-line error, in bounded memory,
and never contacts a host the user did not name."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rewind.engine import network_guard
from rewind.importing import TelemetryError
from rewind.importing.phoenix import read_phoenix
from tests.hostile.bounded import rewind_cli
from tests.hostile.servers import HostileServer


def _import(url: str, tmp_path: Path, **env: str) -> tuple[int, str, float]:
    started = time.monotonic()
    done = rewind_cli("import", url, "-o", str(tmp_path / "x.rewind"), timeout=60, env={**_env(), **env})
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_an_endless_cursor_of_empty_pages_is_stopped(tmp_path: Path) -> None:
    with HostileServer("endless") as server:
        status, output, _ = _import(server.url, tmp_path)
    assert status == 2, output
    assert "pages in a row with no span but another cursor" in output
    assert server.requests == 3


def test_a_trickling_answer_ends_at_the_total_deadline(tmp_path: Path) -> None:
    with HostileServer("trickle") as server:
        status, output, took = _import(server.url, tmp_path, REWIND_IMPORT_TIMEOUT="3")
    assert status == 2, output
    assert "did not answer within the import's time limit (REWIND_IMPORT_TIMEOUT" in output
    assert took < 30  # each byte came within the per-read timeout: only the total deadline ends it


def test_a_redirect_off_the_named_host_is_refused_before_any_packet(tmp_path: Path) -> None:
    hold = network_guard.block("the redirect test")  # a wrong client is stopped before it connects
    try:
        with (
            HostileServer("redirect") as server,
            pytest.raises(TelemetryError, match=r"redirected to http://203\.0\.113\.7"),
        ):
            read_phoenix(server.url, timeout=20)
    finally:
        hold.release()
    assert hold.blocked == []


def test_the_span_cap_holds_inside_one_page(tmp_path: Path) -> None:
    with HostileServer("crowded", spans=5000) as server:
        status, output, _ = _import(server.url, tmp_path, REWIND_IMPORT_MAX_SPANS="1000")
    assert status == 2, output
    assert "more than 1,000 spans" in output
    assert server.requests == 1
