"""``python -m rewind.stub_server``: run the stub in the foreground until Ctrl+C or SIGTERM."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Sequence
from typing import Any

from ._server import StubServer

DEFAULT_PORT = 8765


def _load_script(path: str) -> list[Any]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise SystemExit(f"{path}: a script file must hold a JSON list of turns")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewind.stub_server",
        description="Run rewind's deterministic OpenAI/Anthropic-compatible stub model server.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port (default %(default)s)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="extra random wait of up to this many seconds")
    parser.add_argument("--seed", type=int, default=0, help="seed for the jitter")
    parser.add_argument("--stream-delay", type=float, default=0.0, help="seconds between streamed events")
    parser.add_argument("--script", help="JSON file holding a list of scripted turns")
    parser.add_argument("--verbose", action="store_true", help="log each request line to stderr")
    args = parser.parse_args(argv)

    server = StubServer(
        args.host,
        args.port,
        script=_load_script(args.script) if args.script else None,
        latency=args.latency,
        latency_jitter=args.jitter,
        seed=args.seed,
        stream_delay=args.stream_delay,
        verbose=args.verbose,
    )
    server.start()
    print(f"rewind stub server listening on {server.url}")
    print(f"  OpenAI base URL:    {server.openai_base_url}")
    print(f"  Anthropic base URL: {server.anthropic_base_url}")
    print()
    print("Point an agent at it:")
    print(f"  export OPENAI_BASE_URL={server.openai_base_url}")
    print("  export OPENAI_API_KEY=stub")
    print(f"  export ANTHROPIC_BASE_URL={server.anthropic_base_url}")
    print("  export ANTHROPIC_API_KEY=stub")
    print()
    print("Press Ctrl+C to stop.", flush=True)
    stop_requested = threading.Event()
    # `make demo` and process managers stop it with SIGTERM; shut down as cleanly as on Ctrl+C.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop_requested.set())
    try:
        while not stop_requested.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
