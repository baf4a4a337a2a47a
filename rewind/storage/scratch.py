"""Recording beside a trace that must survive a failed run: scratch files and promotion.

A new recording is written to a scratch file beside the trace it may replace (same
folder, so the final ``os.replace`` is an atomic rename on one filesystem) and takes the
trace's place only once its run succeeded. The pytest plugin and ``rewind record`` share
this.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .trace import Trace


def scratch_path(path: Path) -> Path:
    """Where a recording that may replace ``path`` is written first."""
    return path.with_name(f"{path.name}.recording-{os.getpid()}")


def failed_path(path: Path) -> Path:
    """Where the recording of a failed run is kept: ``run.rewind`` -> ``run.failed.rewind``."""
    name = path.name
    for suffix in (".rewind.gz", ".rewind"):
        if name.endswith(suffix):
            return path.with_name(f"{name[: -len(suffix)]}.failed{suffix}")
    return path.with_name(f"{name}.failed")


def promote(scratch: Path, target: Path) -> None:
    """Replace ``target`` (and its blob folder) by a finished recording, atomically."""
    # The old blob folder belongs to the old recording; the new one is self-contained.
    shutil.rmtree(f"{target}.blobs", ignore_errors=True)
    if target.name.endswith(".gz"):
        # The writer streams plain lines; a .gz trace is the same trace, compressed.
        Trace.load(scratch).dump(target)
        discard(scratch)
        return
    blobs = Path(f"{scratch}.blobs")
    if blobs.exists():
        os.replace(blobs, f"{target}.blobs")
    os.replace(scratch, target)


def discard(scratch: Path) -> None:
    """Remove a scratch recording and its blob folder, if any."""
    scratch.unlink(missing_ok=True)
    shutil.rmtree(f"{scratch}.blobs", ignore_errors=True)


__all__ = ["discard", "failed_path", "promote", "scratch_path"]
