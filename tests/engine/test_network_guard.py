"""``replay(..., network="block")``: offline as a guarantee, for sync, async and threaded code."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from what_if_agent import LIVE, client, record, run_agent

import rewind
from rewind.engine import network_guard
from rewind.engine.network_guard import NetworkBlockedError
from rewind.stub_server import StubServer

# Never contacted: the guard refuses before any packet leaves (TEST-NET-3, RFC 5737).
FAR = "203.0.113.7"
UNUSED = "http://127.0.0.1:9/v1"
ORIGINAL_CONNECT = socket.socket.connect
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _patched() -> Any:
    LIVE.clear()
    unpatch = rewind.patch_openai()
    yield
    unpatch()


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.rewind"
    record(path)
    return path


def fetch_forecast(city: str) -> bytes:
    """An undecorated tool: rewind does not see it, so a replay would let it go out."""
    with urllib.request.urlopen(f"http://{FAR}/forecast?city={city}", timeout=5) as response:
        return bytes(response.read())


def test_an_undecorated_tool_fails_fast_naming_the_host_and_the_code(golden: Path) -> None:
    with rewind.replay(golden, network="block") as session:
        assert run_agent(client(UNUSED))["answer"] == "Umbrella for Paris only."  # served: no connection
        started = time.perf_counter()
        with pytest.raises(NetworkBlockedError) as caught:
            fetch_forecast("Paris")
        assert time.perf_counter() - started < 1.0
    message = str(caught.value)
    assert f"a connection to {FAR}:80 was attempted by fetch_forecast ({__file__}:" in message
    assert "via urllib" in message and str(golden) in message
    assert "allow_hosts=" in message and "network='allow'" in message
    assert caught.value.host == FAR and caught.value.port == 80
    assert session.network_blocked == [caught.value]
    assert socket.socket.connect is ORIGINAL_CONNECT  # removed with the session


def test_loopback_stays_open(golden: Path) -> None:
    with StubServer() as server, rewind.replay(golden, network="block"):
        run_agent(client(UNUSED))
        # An undecorated call to a local service (the stub) still connects.
        reply = httpx.get(f"{server.url}/v1/models", timeout=5)
        assert reply.status_code == 200
        with socket.create_connection(("localhost", server.port), timeout=5):
            pass


def test_threads_and_name_resolution_are_guarded(golden: Path) -> None:
    with rewind.replay(golden, network="block"):
        run_agent(client(UNUSED))
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(socket.create_connection, (FAR, 443), 5)
            with pytest.raises(NetworkBlockedError, match=f"{FAR}:443"):
                future.result()
        with pytest.raises(NetworkBlockedError, match=r"api\.weather\.example:443"):
            socket.getaddrinfo("api.weather.example", 443)
        sock = socket.socket()
        try:
            with pytest.raises(NetworkBlockedError):
                sock.connect_ex((FAR, 25))
        finally:
            sock.close()


async def test_async_connections_are_guarded(golden: Path) -> None:
    async with rewind.replay(golden, network="block"):
        run_agent(client(UNUSED))
        with pytest.raises(NetworkBlockedError, match=f"{FAR}:8080"):
            await asyncio.open_connection(FAR, 8080)
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setblocking(False)
        try:
            with pytest.raises(NetworkBlockedError, match=f"{FAR}:81"):
                await loop.sock_connect(sock, (FAR, 81))
        finally:
            sock.close()
        async with httpx.AsyncClient() as http:
            # anyio connects in a task group of its own, so the error arrives in an ExceptionGroup.
            with pytest.raises(Exception) as caught:  # the leaf is checked below
                await http.get(f"https://{FAR}/")
        leaf: BaseException = caught.value
        while hasattr(leaf, "exceptions"):
            leaf = leaf.exceptions[0]
        assert isinstance(leaf, NetworkBlockedError)
        assert "was attempted by connect_tcp (" in str(leaf) and "anyio" in str(leaf)


def test_the_allow_list(golden: Path) -> None:
    assert network_guard.allowed(FAR)  # nothing blocks outside a blocking session
    with rewind.replay(golden, network="block", allow_hosts=["api.example.com", "*.corp.test"]):
        assert network_guard.allowed("api.example.com") and network_guard.allowed("API.example.com.")
        assert network_guard.allowed("search.corp.test")
        assert not network_guard.allowed("corp.test.evil.com")
        assert network_guard.allowed("127.0.0.5") and network_guard.allowed("::1")
        assert network_guard.allowed("localhost") and network_guard.allowed("[::1]")
        assert not network_guard.allowed(FAR)
        run_agent(client(UNUSED))
    assert not network_guard.active()


def test_the_guard_leaves_with_the_session_even_on_errors(golden: Path) -> None:
    with pytest.raises(ZeroDivisionError), rewind.replay(golden, network="block"):
        assert network_guard.active()
        raise ZeroDivisionError
    assert not network_guard.active() and socket.socket.connect is ORIGINAL_CONNECT
    # Nested holds: the guard stays until the last one goes.
    outer = rewind.replay(golden, network="block")
    with pytest.warns(rewind.UnconsumedEventsWarning), outer:
        with pytest.warns(rewind.UnconsumedEventsWarning), rewind.replay(golden, network="block"):
            pass
        assert network_guard.active()
    assert not network_guard.active()


def test_bad_network_options() -> None:
    with pytest.raises(ValueError, match="network= must be 'block' or 'allow'"):
        rewind.replay("x.rewind", network="offline")
    with pytest.raises(TypeError, match="allow_hosts= must be a list"):
        rewind.replay("x.rewind", network="block", allow_hosts="api.example.com")


def test_cli_replay_network_block(golden: Path, tmp_path: Path) -> None:
    program = tmp_path / "agent.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import urllib.request, what_if_agent as a
            print(a.run_agent(a.client("{UNUSED}"))["answer"])
            urllib.request.urlopen("http://{FAR}/", timeout=5)
            """
        ),
        encoding="utf-8",
    )
    rewind_cli = Path(sys.executable).with_name("rewind")
    env = {"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(Path(__file__).parent.parent)}
    result = subprocess.run(
        [str(rewind_cli), "replay", golden, "--network", "block", "--", sys.executable, program],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stdout.strip() == "Umbrella for Paris only."
    assert (
        f"NetworkBlockedError: rewind: network blocked: a connection to {FAR}:80 was attempted by <module>"
        in result.stderr
    )
    usage = subprocess.run(
        [str(rewind_cli), "replay", golden, "--allow-host", "x", "--", sys.executable, program],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert usage.returncode == 2 and "--allow-host applies to --network block" in usage.stderr


PLUGIN_TESTS = f"""
import os, socket, urllib.request
import pytest, rewind

RECORDING = os.environ.get("RECORDING") == "1"


@rewind.tool
def lookup(query):
    return query.upper()


def reach_out():
    if not RECORDING:  # the recording never leaves the machine either
        urllib.request.urlopen("http://{FAR}/", timeout=5)


@pytest.mark.rewind_trace("blocked.rewind")
def test_blocked(rewind_session):
    assert lookup("a") == "A"
    reach_out()


@pytest.mark.rewind_trace("swallowed.rewind")
def test_swallowed(rewind_session):
    assert lookup("a") == "A"
    try:
        reach_out()
    except Exception:
        pass


@pytest.mark.rewind_trace("loopback.rewind")
def test_loopback(rewind_session):
    assert lookup("a") == "A"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        socket.create_connection(server.getsockname(), timeout=5).close()
"""


def test_the_pytest_plugin_blocks_the_network_by_default(pytester: pytest.Pytester, monkeypatch: Any) -> None:
    pytester.makepyfile(test_agent=PLUGIN_TESTS)
    monkeypatch.setenv("RECORDING", "1")
    pytester.runpytest("--rewind-record", "-p", "no:cacheprovider").assert_outcomes(passed=3)
    monkeypatch.setenv("RECORDING", "0")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1, errors=1)  # the swallowed one fails at teardown
    text = result.stdout.str()
    assert f"NetworkBlockedError: rewind: network blocked: a connection to {FAR}:80 was attempted by reach_out" in text
    assert "The code caught this error and the test went on to pass" in text
    assert not network_guard.active()


def test_cli_replay_fails_when_the_program_swallowed_a_blocked_connection(golden: Path, tmp_path: Path) -> None:
    program = tmp_path / "agent.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import urllib.request, what_if_agent as a
            print(a.run_agent(a.client("{UNUSED}"))["answer"])
            try:
                urllib.request.urlopen("http://{FAR}/", timeout=5)
            except Exception:
                pass
            """
        ),
        encoding="utf-8",
    )
    rewind_cli = Path(sys.executable).with_name("rewind")
    env = {"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(Path(__file__).parent.parent)}
    result = subprocess.run(
        [str(rewind_cli), "replay", golden, "--network", "block", "--", sys.executable, program],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"a connection to {FAR}:80 was attempted by <module>" in result.stderr
    assert "The program caught the error and went on (1 connection(s) refused)" in result.stderr
