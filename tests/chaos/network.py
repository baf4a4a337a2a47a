"""Replay under ``network="block"``, attacked from every side a program reaches the network.

Each attack runs inside a replay that blocks the network, against TEST-NET addresses
(RFC 5737, never routed) and a reserved name, so nothing leaves the machine even when
the guard lets it through. An attack is "blocked" when the guard refused it
(``NetworkBlockedError``) and "open" when it reached the operating system (whatever the
OS then said). ``thresholds.NETWORK_EXPECTED`` lists what each attack does today; issue
36 closes the known holes.
"""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rewind
from rewind.network_guard import NetworkBlockedError

HOST = "203.0.113.7"  # TEST-NET-3
HOST6 = "2001:db8::7"  # IPv6 documentation prefix
NAME = "rewind-chaos.invalid"


def _raw_connect() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect((HOST, 9))


def _raw_connect6() -> None:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect((HOST6, 9))


def _udp_sendto() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"rewind chaos", (HOST, 9))


def _create_connection() -> None:
    socket.create_connection((HOST, 9), timeout=1).close()


def _httpx() -> None:
    import httpx

    httpx.get(f"http://{HOST}:9/", timeout=1)


def _urllib() -> None:
    urllib.request.urlopen(f"http://{HOST}:9/", timeout=1)


def _asyncio_stream() -> None:
    async def attack() -> None:
        await asyncio.wait_for(asyncio.open_connection(HOST, 9), 1)

    asyncio.run(attack())


def _asyncio_udp() -> None:
    async def attack() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=(HOST, 9))
        transport.sendto(b"rewind chaos")
        transport.close()

    asyncio.run(attack())


def _dns() -> None:
    socket.getaddrinfo(NAME, 80)


def _dns_gethostbyname() -> None:
    socket.gethostbyname(NAME)


_CHILD = (
    "import socket, sys\n"
    "try:\n"
    f"    socket.create_connection(({HOST!r}, 9), timeout=1)\n"
    "except Exception as exc:\n"
    "    print(type(exc).__name__)\n"
)


def _subprocess_python() -> None:
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=60)
    if "NetworkBlockedError" in done.stdout:
        raise NetworkBlockedError("blocked in the child", host=HOST, port=9, where="child")


ATTACKS: dict[str, Callable[[], None]] = {
    "raw socket connect": _raw_connect,
    "raw socket connect (IPv6)": _raw_connect6,
    "raw socket sendto (UDP)": _udp_sendto,
    "socket.create_connection": _create_connection,
    "httpx": _httpx,
    "urllib": _urllib,
    "asyncio open_connection": _asyncio_stream,
    "asyncio datagram endpoint": _asyncio_udp,
    "DNS getaddrinfo": _dns,
    "DNS gethostbyname": _dns_gethostbyname,
    "subprocess (python child)": _subprocess_python,
}


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    trace = work / "empty.rewind"
    with rewind.record(trace):
        pass
    figures: dict[str, Any] = {}
    for name, attack in ATTACKS.items():
        with rewind.replay(trace, network="block") as session:
            try:
                attack()
                outcome = "open"
            except NetworkBlockedError:
                outcome = "blocked"
            except BaseException as exc:  # the OS answered (unreachable, refused, timed out)
                # A guard refusal wrapped by a library (httpx, asyncio) still counts as refused.
                outcome = "blocked" if session.network_blocked else "open"
                if outcome == "open":
                    print(f"   network: {name}: reached the OS ({type(exc).__name__})", file=sys.stderr)
            session.network_blocked.clear()  # the attack was ours: the session must end cleanly
        figures[name] = outcome
    figures["attacks_blocked"] = sum(1 for v in figures.values() if v == "blocked")
    figures["attacks_open"] = sum(1 for v in figures.values() if v == "open")
    return figures
