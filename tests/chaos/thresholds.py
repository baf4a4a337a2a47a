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
    # Zero-code sessions that cannot start (tests/_autostart/test_startup_hook.py's cases): all stop, none live.
    "startup.cases": (">=", 23),
    "startup.stopped_with_status_2": (">=", 23),
    "startup.not_stopped": ("==", 0),
    "startup.requests_to_the_model": ("==", 0),
    "startup.agent_ran": ("==", 0),
    "startup.unclear_messages": ("==", 0),
    "startup.slowest_case_s": ("<=", 30),  # a FIFO or a bad value that hangs the hook ends here
    "startup.disabled_instrumentor_replayed": ("==", 1),
}

#: ``rewind import`` of issue 36's hostile telemetry (tests/hostile/telemetry.py, servers.py):
#: case -> (exit status, seconds at most, peak RSS MiB at most). Each runs capped at 1 GiB of
#: address space. Before issue 36: the 4 KB zero-byte gzip took 3.9 GB and 13.7 s, the
#: 40,000-deep chain 233 s, the huge numbers exit 3, the endless cursor never ended.
HOSTILE_IMPORTS: dict[str, tuple[int, float, float]] = {
    "zero_bytes_gzip": (2, 15, 192),
    "empty_spans": (2, 15, 256),
    "empty_attributes": (2, 20, 512),
    "chain_40k": (1, 30, 384),  # one step: the rest are the same call nested, content capture off
    "two_runs_joined": (0, 15, 192),
    "huge_seq": (0, 15, 192),
    "huge_start_float": (0, 15, 192),
    "huge_start_digits": (0, 15, 192),
    "huge_int_float": (0, 15, 192),
    "huge_int_digits": (0, 15, 192),
    "phoenix_endless": (2, 15, 192),
    "phoenix_trickle": (2, 15, 192),  # REWIND_IMPORT_TIMEOUT=3 ends it, whatever each byte's pace
    "phoenix_crowded": (2, 15, 192),  # 5,000 spans in one page, REWIND_IMPORT_MAX_SPANS=1000
}
for _case, (_status, _seconds, _mib) in HOSTILE_IMPORTS.items():
    THRESHOLDS[f"hostile_import.{_case}.status"] = ("==", _status)
    THRESHOLDS[f"hostile_import.{_case}.seconds"] = ("<=", _seconds)
    THRESHOLDS[f"hostile_import.{_case}.peak_mib"] = ("<=", _mib)
THRESHOLDS.update(
    {
        # What an import wrote reads back numbered 0, 1, 2, ...; what it refused left no file.
        **{f"hostile_import.{c}.readable": ("==", 1) for c, (status, *_) in HOSTILE_IMPORTS.items() if status != 2},
        **{
            f"hostile_import.{c}.nothing_written": ("==", 1)
            for c in ("zero_bytes_gzip", "empty_spans", "empty_attributes")
        },
        "hostile_import.phoenix_endless.requests": ("==", 3),  # three empty pages, then stopped
        "hostile_import.phoenix_crowded.requests": ("==", 1),  # the cap holds inside the first page
        "hostile_import.phoenix_redirect.refused": ("==", 1),
        "hostile_import.phoenix_redirect.connections_off_host": ("==", 0),
        "hostile_import.phoenix_redirect.seconds": ("<=", 15),
    }
)

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
