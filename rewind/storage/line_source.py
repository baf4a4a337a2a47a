"""Random access to the lines of one trace file, for events whose bodies stay on disk.

A ``LineSource`` owns one read-only file descriptor and hands out byte ranges
(``read``) through a small read-ahead window, because replay reads events mostly in
file order. It knows nothing about what a line holds; ``rewind.storage.event_line``
parses what it reads. ``blobs`` is the trace's blob store, when the file has one.
"""

from __future__ import annotations

import os
import threading
import weakref

from . import blobs as _blobs

#: How much one read brings into memory ahead of the line asked for (see ``LineSource.read``).
_WINDOW = 256 * 1024


class LineSource:
    """Random access to the lines of one trace file, for lazily loaded events."""

    def __init__(self, path: str, fd: int | None = None) -> None:
        """Reads ``path`` through ``fd`` when given (the source then owns and closes it)."""
        self.path = path
        self.blobs: _blobs.BlobStore | None = None
        self._window: tuple[int, bytes] | None = None
        self._fd = fd if fd is not None else os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, os.close, self._fd)

    def read(self, offset: int, length: int) -> bytes:
        # Replay reads events in file order, mostly: one read-ahead window serves the
        # next few small lines from memory instead of a system call each. Lines as big
        # as the window are read on their own and never kept.
        window = self._window
        if window is not None:
            start, data = window
            if start <= offset and offset + length <= start + len(data):
                return data[offset - start : offset - start + length]
        if length >= _WINDOW:
            return self._pread(offset, length)
        data = self._pread(offset, _WINDOW)
        self._window = (offset, data)
        return data[:length]

    def _pread(self, offset: int, length: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self._fd, length, offset)
        with self._lock:  # pragma: no cover - platforms without pread
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.read(self._fd, length)

    def line_number(self, offset: int) -> int:
        """The 1-based line that starts at ``offset``."""
        count, position = 1, 0
        while position < offset:
            chunk = self.read(position, min(1 << 20, offset - position))
            if not chunk:
                break
            count += chunk.count(b"\n")
            position += len(chunk)
        return count

    def close(self) -> None:
        self._finalizer()
