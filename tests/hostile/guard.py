"""Ways a program tries to reach the network under ``network="block"``, run where no packet
can leave: each probe runs in a fresh network namespace (``unshare -rn``) holding only
loopback, so a probe the guard misses fails on an unreachable network, never on the wire.

``run_probe(name, folder)`` writes the probe's script and runs it there; it prints
``BLOCKED`` when the guard refused the connection before it was made, ``ESCAPED ...``
otherwise. Probes named ``child_*`` start another process and report what it met.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

#: TEST-NET-3 (RFC 5737): documentation only. Inside the namespace it is unreachable anyway.
OFF_HOST = "203.0.113.7"

_HOLD = """
import sys
from rewind import network_guard
# Only in the probe itself: a multiprocessing spawn child re-runs this file as __mp_main__.
hold = network_guard.block("the probe") if __name__ == "__main__" else None
"""

_VERDICT = """
def verdict(attempt):
    try:
        attempt()
    except network_guard.NetworkBlockedError:
        print("BLOCKED")
    except BaseException as exc:
        print("ESCAPED", type(exc).__name__, exc)
    else:
        print("ESCAPED (no error)")
"""

#: What a child process runs: a plain Python connecting out (no rewind session of its own).
CHILD = f"""
import socket
try:
    from rewind.network_guard import NetworkBlockedError
except ImportError:
    NetworkBlockedError = ()
try:
    socket.create_connection(("{OFF_HOST}", 80), timeout=3)
except NetworkBlockedError:
    print("BLOCKED")
except OSError as exc:
    print("ESCAPED", exc)
"""

IN_PROCESS: dict[str, str] = {
    "udp_sendto": f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
verdict(lambda: s.sendto(b"x", ("{OFF_HOST}", 9)))
""",
    "udp_sendmsg": f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
verdict(lambda: s.sendmsg([b"x"], [], 0, ("{OFF_HOST}", 9)))
""",
    "loop_sock_sendto": f"""
import asyncio, socket
async def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    await asyncio.get_running_loop().sock_sendto(s, b"x", ("{OFF_HOST}", 9))
verdict(lambda: asyncio.run(main()))
""",
    "c_socket_type": f"""
import _socket
s = _socket.socket()
s.settimeout(3)
verdict(lambda: s.connect(("{OFF_HOST}", 80)))
""",
    "bytearray_host": f"""
import socket
s = socket.socket()
s.settimeout(3)
verdict(lambda: s.connect((bytearray(b"{OFF_HOST}"), 80)))
""",
    "msg_fastopen": f"""
import socket
s = socket.socket()
verdict(lambda: s.sendto(b"GET / HTTP/1.0\\r\\n\\r\\n", socket.MSG_FASTOPEN, ("{OFF_HOST}", 80)))
""",
    "gethostbyname": 'import socket\nverdict(lambda: socket.gethostbyname("example.com"))\n',
    "gethostbyname_ex": 'import socket\nverdict(lambda: socket.gethostbyname_ex("example.com"))\n',
    "gethostbyaddr": f'import socket\nverdict(lambda: socket.gethostbyaddr("{OFF_HOST}"))\n',
    "getnameinfo": f'import socket\nverdict(lambda: socket.getnameinfo(("{OFF_HOST}", 80), 0))\n',
    "getaddrinfo_localhost_subdomain": 'import socket\nverdict(lambda: socket.getaddrinfo("x.localhost", 80))\n',
}

CHILDREN: dict[str, str] = {
    "child_subprocess": "import subprocess\nprint(subprocess.run([sys.executable, CHILD], capture_output=True, "
    "text=True).stdout)\n",
    "child_subprocess_env": "import os, subprocess\nprint(subprocess.run([sys.executable, CHILD], "
    "env=dict(os.environ), capture_output=True, text=True).stdout)\n",
    "child_os_system": "import os\nos.system(f'{sys.executable} {CHILD}')\n",
    "child_multiprocessing_spawn": """
import multiprocessing, runpy
def child():
    runpy.run_path(CHILD)
if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(target=child)
    process.start()
    process.join(30)
""",
    "child_curl": f"""
import subprocess
done = subprocess.run(["curl", "-sS", "-m", "5", "http://{OFF_HOST}/"], capture_output=True, text=True)
# Through the dead proxy the guard's variables name, curl is refused on loopback port 9.
print("BLOCKED" if "127.0.0.1 port 9" in done.stderr else "ESCAPED " + done.stderr.strip())
""",
}

PROBES = {**IN_PROCESS, **CHILDREN}


def netns(args: list[str]) -> list[str]:
    """``args`` run in a new user and network namespace, with loopback up and nothing else."""
    if shutil.which("unshare") is None:
        raise RuntimeError("unshare (util-linux) is needed to run network probes where no packet can leave")
    return ["unshare", "-rn", "sh", "-c", 'ip link set lo up 2>/dev/null || true; exec "$@"', "sh", *args]


def write_probe(name: str, folder: Path, body: str | None = None) -> Path:
    """The probe's script in ``folder``: ``PROBES[name]``, or ``body`` (a probe of another suite)."""
    child = folder / "child.py"
    child.write_text(CHILD)
    script = folder / f"probe_{name}.py"
    body = textwrap.dedent(PROBES[name] if body is None else body)
    script.write_text(f"{_HOLD}{_VERDICT}CHILD = {str(child)!r}\n{body}")
    return script


def run_probe(
    name: str, folder: Path, *, body: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWIND_")}
    return subprocess.run(
        netns([sys.executable, str(write_probe(name, folder, body))]),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=folder,
        check=False,
    )
