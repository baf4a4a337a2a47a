"""Running a command in a subprocess bounded in time and in address space (RLIMIT_AS).

A hostile input that makes rewind allocate without bound fails here as a ``MemoryError``
or a kill inside the child, never as a machine that swaps; one that loops fails on the
timeout.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Enough for the interpreter, protobuf and a normal import; far below what the bombs took.
DEFAULT_MEMORY = 1024 * 1024 * 1024


def run_bounded(
    args: Sequence[str],
    *,
    memory: int = DEFAULT_MEMORY,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``args`` run with at most ``memory`` bytes of address space, killed after ``timeout`` seconds."""
    return subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=address_space_limit(memory),
        env=dict(os.environ if env is None else env),
        cwd=cwd,
        check=False,
    )


def address_space_limit(memory: int) -> Callable[[], None]:
    """A ``preexec_fn`` that caps the child's address space at ``memory`` bytes."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return limit


def rewind_command(*args: str) -> list[str]:
    """The command line of ``rewind ARGS`` run by this interpreter."""
    code = 'import sys; from rewind.cli import main; sys.argv[0] = "rewind"; main()'
    return [sys.executable, "-c", code, *args]


def rewind_cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``rewind ARGS`` (this interpreter's), bounded as ``run_bounded`` bounds it."""
    return run_bounded(rewind_command(*args), **kwargs)  # type: ignore[arg-type]
