"""What ``rewind record`` and ``rewind replay`` share: run a command inside a session.

The command runs as a child process with rewind's start-up folder first on
``PYTHONPATH`` (its ``sitecustomize`` instruments the provider SDKs and opens the session
the ``REWIND_*`` variables describe) and a status file it fills in at exit. The child's
exit status is ours; a divergence the program swallowed, or a replay that left steps
unserved under ``--require-full-consumption``, still fails the command.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any

import click

from rewind import _autostart
from rewind.data.escape import inert
from rewind.engine.providers import PROVIDERS
from rewind.setup.environment import SESSION_VARIABLES

from ._common import CliError

#: The command ran, but the session reported a failure (a divergence, steps left unserved).
EXIT_SESSION_FAILED = 1

COMMAND_HELP = "give the command to run after --, e.g. rewind record run.rewind -- python agent.py"

#: ``context_settings`` for a command taking ``-- CMD ARGS...`` (everything after ``--`` is the command).
CHILD_CONTEXT: dict[str, Any] = {"ignore_unknown_options": True}


@dataclass(frozen=True)
class Outcome:
    """How the child ended: its exit status and the session's status file (if it wrote one)."""

    returncode: int
    status: dict[str, Any] | None


def check_command(command: Sequence[str]) -> list[str]:
    """The command line, or a one-line error when it is missing or cannot be found."""
    if not command:
        raise CliError(f"no command to run; {COMMAND_HELP}")
    argv = list(command)
    if shutil.which(argv[0]) is None:
        raise CliError(f"{argv[0]}: command not found; check its spelling and PATH")
    return argv


def check_callable_spec(option: str, spec: str | None) -> None:
    """``module:function`` or nothing (the child imports it, so only the shape is checked here)."""
    if spec is None:
        return
    module, _, attribute = spec.partition(":")
    if not module or not attribute or " " in spec:
        raise CliError(f"{option} takes module:function (e.g. myagent.scrub), not {spec!r}")


def child_environment(session: Mapping[str, str], status_file: str) -> dict[str, str]:
    """The child's environment: ours, minus stale session variables, plus the session's."""
    env = {key: value for key, value in os.environ.items() if key not in SESSION_VARIABLES}
    env.update(session)
    env["REWIND_STATUS_FILE"] = status_file
    startup = os.path.dirname(os.path.abspath(_autostart.__file__))
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != startup]
    env["PYTHONPATH"] = os.pathsep.join([startup, *rest])
    # The start-up hook must not import rewind to learn which SDKs are instrumented: it reads them here.
    env[_autostart.SDK_MODULES_VARIABLE] = ",".join(sorted({provider.sdk for provider in PROVIDERS.values()}))
    return env


@contextmanager
def _parent_stands_aside(child: subprocess.Popen[bytes]) -> Iterator[None]:
    """Ctrl-C reaches the child through the terminal; a SIGTERM to us is passed on."""

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)

    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, forward)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)


def run_child(
    argv: Sequence[str], session: Mapping[str, str], *, stdout: IO[bytes] | None = None, stderr: IO[bytes] | None = None
) -> Outcome:
    """Run ``argv`` with the session's variables; wait for it and read its status file.

    ``stdout``/``stderr`` (open files) capture the child's output instead of sharing ours.
    """
    folder = tempfile.mkdtemp(prefix="rewind-cli-")
    status_file = os.path.join(folder, "status.json")
    try:
        try:
            child = subprocess.Popen(
                list(argv), env=child_environment(session, status_file), stdout=stdout, stderr=stderr
            )
        except OSError as exc:
            raise CliError(f"{argv[0]}: cannot run it ({exc.strerror or exc})") from None
        if threading.current_thread() is threading.main_thread():
            with _parent_stands_aside(child):
                returncode = child.wait()
        else:
            # Signal handlers belong to the main thread; one of several parallel runs just waits.
            returncode = child.wait()
        return Outcome(_shell_status(returncode), _read_status(status_file))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _shell_status(returncode: int) -> int:
    # Killed by a signal: report it the way shells do (128 + signal number).
    return 128 - returncode if returncode < 0 else returncode


def _read_status(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            status = json.load(fh)
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def finish(ctx: click.Context, outcome: Outcome, *, summary: Callable[[dict[str, Any]], str], quiet: bool) -> None:
    """Exit the way the child did, unless the session failed or never opened."""
    status = outcome.status
    if status is None:
        if outcome.returncode == 0:
            say(
                "rewind: error: the command finished without opening a rewind session; run a Python "
                "program (python agent.py) whose interpreter has agent-rewind-otel installed"
            )
            ctx.exit(EXIT_SESSION_FAILED)
        ctx.exit(outcome.returncode)
    error = status.get("error")
    if isinstance(error, str) and error:
        divergence = status.get("divergence")
        if status.get("reported") and isinstance(divergence, dict):
            # The program died of it: its traceback showed the whole report already.
            say(f"rewind: replay diverged at step {divergence.get('step')} ({divergence.get('reason')}); see above")
        else:
            say(error if error.startswith("rewind:") else f"rewind: {error}")
        ctx.exit(outcome.returncode or EXIT_SESSION_FAILED)
    if not quiet:
        say(summary(status))
    ctx.exit(outcome.returncode)


def say(text: str) -> None:
    # A session error can quote recorded text (a divergence shows the recorded request).
    click.echo(inert(text, keep_newlines=True), err=True)
    sys.stderr.flush()
