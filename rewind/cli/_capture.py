"""A child's output, read as it comes and kept in bounded memory.

``rewind mutate`` compares each run's standard output with the reference run's: it needs
all of it to compare, but not all of it at once. ``Captured.head()`` keeps the first
``KEEP`` bytes (what the report shows) and a sha256 of everything; ``Captured.tail()``
keeps the last ``KEEP`` bytes (where a Python traceback is). Both pipes are drained by
threads so a child filling one never blocks on it.
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
from typing import IO

#: Bytes of a stream kept for the report: far more than a table row or a traceback needs.
KEEP = 1 << 20
_CHUNK = 1 << 16


class Captured:
    def __init__(self, *, keep_end: bool) -> None:
        self.keep_end = keep_end
        self.kept = bytearray()
        self.size = 0
        self._hash = hashlib.sha256()
        self._readers: list[threading.Thread] = []

    @classmethod
    def head(cls) -> Captured:
        return cls(keep_end=False)

    @classmethod
    def tail(cls) -> Captured:
        return cls(keep_end=True)

    def add(self, chunk: bytes) -> None:
        self._hash.update(chunk)
        self.size += len(chunk)
        if self.keep_end:
            self.kept += chunk
            if len(self.kept) > 2 * KEEP:
                del self.kept[:-KEEP]
        elif len(self.kept) < KEEP:
            self.kept += chunk[: KEEP - len(self.kept)]

    def read_from(self, pipe: IO[bytes] | None) -> None:
        """Start draining ``pipe`` (once; later calls, and no pipe, do nothing)."""
        if pipe is None or self._readers:
            return

        def drain() -> None:
            with pipe:
                while chunk := pipe.read1(_CHUNK) if hasattr(pipe, "read1") else pipe.read(_CHUNK):
                    self.add(chunk)

        reader = threading.Thread(target=drain, name="rewind-capture", daemon=True)
        reader.start()
        self._readers.append(reader)

    def join(self, timeout: float | None) -> bool:
        for reader in self._readers:
            reader.join(timeout)
        return not any(reader.is_alive() for reader in self._readers)

    def text(self) -> str:
        kept = bytes(self.kept[-KEEP:] if self.keep_end else self.kept)
        text = kept.decode("utf-8", "replace")
        if self.size > len(kept):
            cut = f"[... {self.size - len(kept):,} more bytes ...]"
            return f"{cut}\n{text}" if self.keep_end else f"{text}\n{cut}"
        return text

    def digest(self) -> str:
        return f"{self.size}:{self._hash.hexdigest()}"


def capture(child: subprocess.Popen[bytes], out: Captured, err: Captured, timeout: float | None) -> bool:
    """Drain the child's pipes until it exits (``True``) or ``timeout`` passes (``False``)."""
    out.read_from(child.stdout)
    err.read_from(child.stderr)
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    out.join(None)
    err.join(None)
    return True
