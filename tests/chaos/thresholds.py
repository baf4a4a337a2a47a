"""Every figure the chaos suite checks, and the bound it must meet: the one place to change them.

A figure is ``scenario.name``; its bound is ``(operator, value)``. A figure printed but not
listed here is information only. A figure that misses its bound fails ``make test-chaos``.
"""

from __future__ import annotations

THRESHOLDS: dict[str, tuple[str, float]] = {
    # SIGKILL during record: every call the agent saw return is on disk; no torn line served.
    "kill.kills": (">=", 30),
    "kill.acknowledged_lost": ("==", 0),
    "kill.torn_lines_served": ("==", 0),
    "kill.unreadable_traces": ("==", 0),
    # A full disk (ENOSPC at random writes): nothing unwritten served, the agent told.
    "disk.write_faults": (">=", 20),
    "disk.agent_not_told": ("==", 0),
    "disk.unwritten_steps_served": ("==", 0),
    "disk.partial_lines_left": ("==", 0),
    "disk.acknowledged_lost": ("==", 0),
    # 64 asyncio tasks + 8 threads over two sessions at once.
    "concurrency.calls": (">=", 2000),
    "concurrency.lost": ("==", 0),
    "concurrency.duplicated": ("==", 0),
    "concurrency.crossed_sessions": ("==", 0),
    "concurrency.replay_mismatches": ("==", 0),
    # Two processes on one trace.
    "two_processes.second_recorder_refused": ("==", 1),
    "two_processes.first_recording_intact": ("==", 1),
    "two_processes.reader_errors": ("==", 0),
    "two_processes.reads_never_shrank": ("==", 1),
    # Mutated traces through every reader.
    "fuzz.traces": (">=", 1000),
    "fuzz.tracebacks": ("==", 0),
    "fuzz.hangs": ("==", 0),
    "fuzz.unsafe_output": ("==", 0),
    "fuzz.slowest_trace_s": ("<=", 10),
    "fuzz.peak_rss_mib": ("<=", 600),
    # Hostile OTLP files through `rewind import`.
    "otlp.files": (">=", 200),
    "otlp.tracebacks": ("==", 0),
    "otlp.hangs": ("==", 0),
    "otlp.slowest_file_s": ("<=", 10),
    # Hostile content through `rewind report`, opened in Chromium.
    "report.pages": (">=", 3),
    "report.scripts_executed": ("==", 0),
    "report.pages_not_rendered": ("==", 0),
    "report.control_script_detected": ("==", 1),  # the detector catches a script that does run
}

#: Replay under network="block": how each attack ends today. "blocked" attacks must stay
#: blocked (a regression fails); an "open" one that becomes blocked is reported as an
#: improvement to record here. ``probe NAME`` runs tests/hostile/guard.py's probe NAME in a
#: network namespace of its own.
NETWORK_EXPECTED: dict[str, str] = {
    "raw socket connect": "blocked",
    "raw socket connect (IPv6)": "blocked",
    "socket.create_connection": "blocked",
    "httpx": "blocked",
    "urllib": "blocked",
    "asyncio open_connection": "blocked",
    "asyncio datagram endpoint": "blocked",
    "DNS getaddrinfo": "blocked",
    # Holes when this suite was written, closed by issue 36 (the audit hook, inherited guard):
    "raw socket sendto (UDP)": "blocked",
    "DNS gethostbyname": "blocked",
    "subprocess (python child)": "blocked",
    # tests/hostile/guard.py, each in a network namespace holding only loopback:
    "probe udp_sendto": "blocked",
    "probe udp_sendmsg": "blocked",
    "probe loop_sock_sendto": "blocked",
    "probe c_socket_type": "blocked",  # _socket.socket, under socket.socket's patches
    "probe bytearray_host": "blocked",
    "probe msg_fastopen": "blocked",
    "probe gethostbyname": "blocked",
    "probe gethostbyname_ex": "blocked",
    "probe gethostbyaddr": "blocked",
    "probe getnameinfo": "blocked",
    "probe getaddrinfo_localhost_subdomain": "blocked",  # x.localhost is a DNS query
    "probe child_subprocess": "blocked",
    "probe child_subprocess_env": "blocked",
    "probe child_os_system": "blocked",
    "probe child_multiprocessing_spawn": "blocked",
    "probe child_curl": "blocked",  # curl honours the dead proxy the guard's variables name
    # Known hole, documented in docs/what-if.md: no Python code stops C calling connect().
    "probe ctypes_connect": "open",
}
