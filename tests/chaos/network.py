"""Replay under ``network="block"``, attacked from every side a program reaches the network.

Each attack runs inside a replay that blocks the network, against TEST-NET addresses
(RFC 5737, never routed) and a reserved name, so nothing leaves the machine even when
the guard lets it through. An attack is "blocked" when the guard refused it
(``NetworkBlockedError``) and "open" when it reached the operating system (whatever the
OS then said). ``thresholds.NETWORK_EXPECTED`` lists what each attack does today.

Then every probe of ``tests/hostile/guard.py`` (the holes issue 36 closed: the C socket
type, a bytearray host, ``sendmsg``, ``loop.sock_sendto``, ``MSG_FASTOPEN``, the
resolver's other entry points, Python children, ``os.system`` and ``curl``), plus one
hole the guard documents it cannot close (``ctypes`` calling libc's ``connect``), each
in a network namespace holding only loopback, so a miss never reaches the wire.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hostile import guard  # tests/hostile/guard.py: the probes the normal suite runs

import rewind
from rewind.engine.network_guard import NetworkBlockedError

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


#: Probes beyond ``guard.PROBES``: what the guard says it cannot stop (docs/what-if.md), so
#: the table shows it as a known hole rather than leaving it unmeasured.
KNOWN_HOLES: dict[str, str] = {
    "ctypes_connect": f"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
s = socket.socket()
# struct sockaddr_in: family in host byte order, then port and address in network order.
port = (80).to_bytes(2, "big")
address = socket.AF_INET.to_bytes(2, "little") + port + socket.inet_aton("{guard.OFF_HOST}") + bytes(8)
def attempt():
    if libc.connect(s.fileno(), ctypes.create_string_buffer(address, len(address)), len(address)) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
verdict(attempt)
""",
}


def _probe(name: str, work: Path) -> str:
    folder = work / name
    folder.mkdir()
    done = guard.run_probe(name, folder, body=KNOWN_HOLES.get(name), timeout=60)
    last = done.stdout.strip().splitlines()[-1:]
    if last == ["BLOCKED"]:
        return "blocked"
    print(f"   network: probe {name}: {(done.stdout + done.stderr).strip()[-300:]}", file=sys.stderr)
    return "open"


def run_probes(work: Path) -> dict[str, str]:
    """``probe NAME`` -> blocked/open for every namespace probe, two at a time (2 cores)."""
    names = [*guard.PROBES, *KNOWN_HOLES]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        outcomes = pool.map(lambda name: _probe(name, work), names)
        return {f"probe {name}": outcome for name, outcome in zip(names, outcomes)}


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
    figures.update(run_probes(work))
    figures["attacks_blocked"] = sum(1 for v in figures.values() if v == "blocked")
    figures["attacks_open"] = sum(1 for v in figures.values() if v == "open")
    return figures
