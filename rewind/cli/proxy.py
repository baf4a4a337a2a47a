"""``rewind proxy --record/--replay TRACE``: record and replay agents in any language over HTTP.

Also what ``rewind record --proxy`` and ``rewind replay --proxy`` run: the proxy on a free
port, the command with every SDK's base-URL variable pointed at it, then the proxy stops.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

import click

from rewind.data.escape import inert
from rewind.inspection import summary
from rewind.proxy import Proxy, UpstreamConfigError
from rewind.setup import environment

from ._common import CliError, trace_destination
from ._options import match_option, payload_function_options
from ._run import _parent_stands_aside

STRATEGIES = ("strict", "ordered", "fuzzy", "parallel")
DEFAULT_PORT = 8787


def _say(text: str) -> None:
    click.echo(inert(text, keep_newlines=True), err=True)


def open_proxy(
    trace_path: str,
    *,
    mode: str,
    upstreams: Sequence[str] = (),
    host: str = "127.0.0.1",
    port: int = 0,
    match: str = "strict",
    quiet: bool = False,
    redact: str | None = None,
    normalize: str | None = None,
    meta: dict[str, Any] | None = None,
    externalize: int | None = None,
) -> Proxy:
    """A started proxy, or a one-line CLI error (bad ``--upstream``, port in use, unreadable trace)."""
    if mode == "replay" and not os.path.isfile(trace_path):
        raise CliError(f"{trace_path}: no such trace file; record one first (rewind proxy --record {trace_path})")
    try:
        proxy = Proxy(
            trace_path,
            mode=mode,
            upstreams=upstreams,
            host=host,
            port=port,
            match=match,
            redact=_callable("--redact", redact),
            normalize=_callable("--normalize", normalize),
            meta=meta,
            externalize=externalize,
        )
    except UpstreamConfigError as exc:
        raise CliError(str(exc)) from None
    proxy.log = None if quiet else _say
    try:
        return proxy.start()
    except OSError as exc:
        if exc.filename is None:
            raise CliError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port") from None
        raise


def _callable(option: str, spec: str | None) -> Any:
    """``module:function`` imported (the working folder is searched too), as ``rewind record`` does."""
    return environment.import_callable(spec, option) if spec else None


def proxy_status(proxy: Proxy) -> dict[str, Any]:
    """What the proxy's session did, in the shape of the status file a Python child writes."""
    if proxy.mode == "record":
        failed = [
            {"step": e.seq, "kind": e.kind, "name": e.name, "error": (e.error or {}).get("type")}
            for e in proxy.steps
            if not e.ok
        ]
        return {"recorded": len(proxy.steps), "failed": failed}
    status: dict[str, Any] = {"served": proxy.session.cursor}
    if proxy.divergences:
        first = proxy.divergences[0]
        status["error"] = f"rewind: replay through the proxy diverged\n{first}"
        status["divergence"] = {"step": first.step, "reason": first.reason}
    return status


def outcome_line(proxy: Proxy) -> str:
    """What the proxy did, one line, as ``rewind record`` / ``rewind replay`` say it."""
    status = proxy_status(proxy)
    if proxy.mode == "record":
        return summary.recorded(status, proxy.trace_path)
    text = summary.replayed(status, proxy.trace_path, len(proxy.session.trace.events))
    if proxy.divergences:
        first = proxy.divergences[0]
        text += f"; {summary.plural(len(proxy.divergences), 'divergence')} (first at step {first.step}: {first.reason})"
    return text


@click.command("proxy")
@click.option("--record", "record_path", metavar="TRACE", help="Forward each call to the provider and record it here.")
@click.option("--replay", "replay_path", metavar="TRACE", help="Answer every call from this trace, with no upstream.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="0: a free port.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback exposes your provider keys' proxy to the network.",
)
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    metavar="PROVIDER=URL",
    help="Where a provider's API is (default: its public API), e.g. openai=http://127.0.0.1:8765/v1. Repeatable.",
)
@match_option(STRATEGIES, "How incoming calls are matched to recorded steps (parallel: concurrent agents).")
@payload_function_options(live_steps_only=False)
@click.option("-q", "--quiet", is_flag=True, help="Print no line per call.")
def command(
    record_path: str | None,
    replay_path: str | None,
    port: int,
    host: str,
    upstreams: tuple[str, ...],
    match: str,
    redact: str | None,
    normalize: str | None,
    quiet: bool,
) -> None:
    """Run a local proxy an agent in any language uses as its provider base URL.

    With --record, each call is forwarded to the provider and recorded in
    TRACE; with --replay, each call is answered from TRACE, offline, with no
    key. Point the agent at it with the variables it prints (OPENAI_BASE_URL,
    ANTHROPIC_BASE_URL, ...). Stop it with Ctrl+C. See docs/proxy.md.

    \b
    Exit status: 0; 1 when a replay diverged; 2 bad usage or input.
    """
    if (record_path is None) == (replay_path is None):
        raise CliError("pass exactly one of --record TRACE or --replay TRACE")
    mode = "record" if record_path is not None else "replay"
    trace_path = record_path or replay_path
    assert trace_path is not None
    if mode == "record":
        trace_destination(trace_path)
    proxy = open_proxy(
        trace_path,
        mode=mode,
        upstreams=upstreams,
        host=host,
        port=port,
        match=match,
        quiet=quiet,
        redact=redact,
        normalize=normalize,
    )
    what = "recording to" if mode == "record" else "replaying"
    _say(f"rewind proxy {what} {trace_path}, listening on {proxy.url}")
    if host not in ("127.0.0.1", "localhost", "::1"):
        _say(
            f"rewind proxy: warning: --host {host} is reachable from other machines, which can then use it (and, "
            "recording, the keys its clients send); use 127.0.0.1 unless you mean to share it"
        )
    _say("Point an agent at it:")
    for variable, value in proxy.environment().items():
        _say(f"  export {variable}={value}")
    _say("Press Ctrl+C to stop.")
    _wait_for_signal()
    proxy.stop()
    _say(outcome_line(proxy))
    if proxy.divergences:
        sys.exit(1)


def _wait_for_signal() -> None:
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_through_proxy(
    trace_path: str,
    argv: Sequence[str],
    *,
    mode: str,
    upstreams: Sequence[str] = (),
    match: str = "strict",
    redact: str | None = None,
    normalize: str | None = None,
    meta: dict[str, Any] | None = None,
    externalize: int | None = None,
) -> tuple[int, Proxy]:
    """Run ``argv`` with every SDK's base URL pointed at a proxy on a free port; its exit status."""
    proxy = open_proxy(
        trace_path,
        mode=mode,
        upstreams=upstreams,
        match=match,
        quiet=True,
        redact=redact,
        normalize=normalize,
        meta=meta,
        externalize=externalize,
    )
    env = {**os.environ, **proxy.environment(keys_from=os.environ)}
    try:
        try:
            child = subprocess.Popen(list(argv), env=env)
        except OSError as exc:
            raise CliError(f"{argv[0]}: cannot run it ({exc.strerror or exc})") from None
        with _parent_stands_aside(child):
            returncode = child.wait()
    finally:
        proxy.stop()
    return (128 - returncode if returncode < 0 else returncode), proxy
