"""``python -m rewind.stub_server``: run the stub in the foreground until Ctrl+C or SIGTERM.

Mistakes a user can make (a port in use, a missing or malformed script) end
with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from ._script import parse_turn
from ._server import StubServer

DEFAULT_PORT = 8765


class _UsageError(Exception):
    """A mistake in how the server was started; its message is the whole story."""


def _load_script(path: str) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise _UsageError(f"script file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _UsageError(f"cannot read script file {path}: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _UsageError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, list):
        kind = {dict: "object", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(data), "null")
        raise _UsageError(f"{path} must hold a JSON list of turns, not a JSON {kind}")
    for number, turn in enumerate(data, start=1):
        try:
            parse_turn(turn)
        except (ValueError, TypeError) as exc:
            raise _UsageError(f"{path}: turn {number}: {exc}") from None
    return data


def _start(server: StubServer, host: str, port: int) -> None:
    try:
        server.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise _UsageError(
                f"port {port} on {host} is already in use (another stub server?); "
                "choose another with --port N, or --port 0 for a free one"
            ) from None
        raise _UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _banner(server: StubServer, script_path: str | None) -> list[str]:
    lines = [
        f"rewind stub server listening on {server.url}",
        "Point an agent at it (each SDK reads these variables):",
        f"  export OPENAI_BASE_URL={server.openai_base_url}",
        "  export OPENAI_API_KEY=stub",
        f"  export ANTHROPIC_BASE_URL={server.anthropic_base_url}",
        "  export ANTHROPIC_API_KEY=stub",
        f"  export CO_API_URL={server.cohere_base_url} CO_API_KEY=stub",
        f"  export GOOGLE_GEMINI_BASE_URL={server.gemini_base_url} GEMINI_API_KEY=stub",
        f"  export AWS_ENDPOINT_URL_BEDROCK_RUNTIME={server.bedrock_endpoint_url}"
        " AWS_ACCESS_KEY_ID=stub AWS_SECRET_ACCESS_KEY=stub AWS_REGION=us-east-1",
        f'Mistral reads no base URL variable: Mistral(api_key="stub", server_url="{server.mistral_base_url}")',
    ]
    if script_path:
        turns = server.script_remaining
        if server.script_mode == "conversation":
            lines.append(
                f"Script: {turns} turns from {script_path}, replayed for every conversation "
                "(the Nth model answer of each conversation is turn N)."
            )
        else:
            lines.append(
                f"Script: {turns} turns from {script_path}, used up in order; "
                f"run it again with: curl -X POST {server.url}/_stub/restart"
            )
    lines.append("Press Ctrl+C to stop.")
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rewind.stub_server",
        description="Run rewind's deterministic loopback model server "
        "(OpenAI, Anthropic, Mistral, Cohere, Gemini and Bedrock wire formats).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port (default %(default)s)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="extra random wait of up to this many seconds")
    parser.add_argument("--seed", type=int, default=0, help="seed for the jitter and for one_of turns")
    parser.add_argument("--stream-delay", type=float, default=0.0, help="seconds between streamed events")
    parser.add_argument("--script", help="JSON file holding a list of scripted turns")
    parser.add_argument(
        "--script-mode",
        choices=("conversation", "queue"),
        default="conversation",
        help="conversation (default): every conversation replays the script from its first turn; "
        "queue: turns are used up in order, POST /_stub/restart queues them again",
    )
    parser.add_argument("--verbose", action="store_true", help="log each request line to stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        server = StubServer(
            args.host,
            args.port,
            script=_load_script(args.script) if args.script else None,
            script_mode=args.script_mode,
            latency=args.latency,
            latency_jitter=args.jitter,
            seed=args.seed,
            stream_delay=args.stream_delay,
            verbose=args.verbose,
        )
        _start(server, args.host, args.port)
    except _UsageError as exc:
        print(f"rewind stub server: error: {exc}", file=sys.stderr)
        return 2

    # The server's own notes (a queued script running out) go to stderr, one line each.
    log = logging.getLogger("rewind.stub_server")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[rewind-stub] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

    print("\n".join(_banner(server, args.script)), flush=True)
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
        log.removeHandler(handler)
    return 0
