"""The file under a ``TraceWriter``: locked, whole lines or nothing, optionally renamed into place.

* **One recorder per file.** The file is locked (``flock``, exclusive, non-blocking) before
  it is truncated: a second recorder, in another process or in this one, gets a
  ``TraceLockedError`` and the file is left as it was. Readers never lock.
* **Whole lines or nothing.** A write the OS cuts short or fails (disk full, a file size
  limit, an I/O error) is rolled back: the file is truncated to where the line started,
  so it still ends after its last complete line and the next line never glues onto a
  partial one. If even the truncation fails, the file refuses further writes.
* **Write, then rename.** With ``replace_on_close`` the lines go to a temporary file beside
  the target, renamed over it when the writer closes successfully (a fork saved onto
  the trace it replays must not truncate it while it is being read).
* **Regular files only.** A FIFO, a device, a socket or a directory at the path is refused
  with a ``RewindError`` before anything blocks: opening a FIFO for writing waits for a
  reader forever (``open_for_writing`` is the check, shared with rewind's other writers).
"""

from __future__ import annotations

import os
import threading

from rewind.data.safe_read import file_kind
from rewind.errors import RewindError, TraceLockedError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, no second-recorder check
    fcntl = None  # type: ignore[assignment]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
# A FIFO swapped in after the check fails the open (ENXIO) instead of waiting for a reader.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_for_writing(path: str, flags: int, *, what: str = "trace file") -> int:
    """``os.open(path, flags)`` for a regular file (or a new one); never blocks.

    What is at ``path`` is checked before the open and again on the descriptor; anything
    but a regular file is a ``RewindError`` naming it, and nothing at ``path`` changes.
    """
    _refuse_special(path, what)
    fd = os.open(path, flags | _NONBLOCK, 0o666)
    try:
        kind = file_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise _not_a_file(path, what, kind)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse_special(path: str, what: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there yet (or unreachable: the open says why)
    kind = file_kind(mode)
    if kind is not None:
        raise _not_a_file(path, what, kind)


def _not_a_file(path: str, what: str, kind: str) -> RewindError:
    return RewindError(f"{path}: cannot write the {what} there: it is {kind}; rewind writes only regular files")


class LineFile:
    """An append-only file of lines that a failed write never leaves half-written."""

    def __init__(self, path: str, *, replace_on_close: bool = False) -> None:
        self.path = path
        #: Where the lines are written: ``path``, or a temporary file renamed onto it.
        self.write_path = _temporary(path) if replace_on_close else path
        self._replace = replace_on_close
        self.size = 0
        self.closed = False
        #: Why the file refuses writes (a partial line could not be removed), or None.
        self.broken: str | None = None
        self._lock = threading.Lock()
        if replace_on_close:
            _refuse_special(path, "trace file")  # renamed over at the end: refuse it now, not then
        fd = open_for_writing(self.write_path, _FLAGS)
        try:
            _lock_exclusively(fd, path)
            os.ftruncate(fd, 0)  # only once the file is ours
        except BaseException:
            os.close(fd)
            if replace_on_close:
                _unlink_quietly(self.write_path)
            raise
        self._fd = fd

    def append(self, data: bytes) -> int:
        """Write ``data`` whole and return the offset it starts at; on failure, nothing stays."""
        with self._lock:
            if self.closed:
                raise ValueError(f"trace writer for {self.path} is closed")
            if self.broken is not None:
                raise OSError(self.broken)
            offset = self.size
            try:
                _write_all(self._fd, data)
            except BaseException:
                self._roll_back(offset)
                raise
            self.size = offset + len(data)
            return offset

    def _roll_back(self, offset: int) -> None:
        try:
            os.ftruncate(self._fd, offset)
        except OSError as exc:
            self.broken = (
                f"a partial line at byte {offset} of {self.write_path} could not be removed "
                f"({exc.strerror or exc}); this writer accepts no more lines"
            )

    def close(self, *, keep: bool = True) -> None:
        """Close (releasing the lock); a ``replace_on_close`` file is renamed into place
        when ``keep``, else discarded."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                if self._replace:
                    if keep and self.broken is None:
                        os.replace(self.write_path, self.path)
                    else:
                        _unlink_quietly(self.write_path)
            finally:
                os.close(self._fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _lock_exclusively(fd: int, path: str) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TraceLockedError(
            "already being recorded by another process (or another session of this one); two "
            "recorders would interleave their lines into an unreadable file. Record to another "
            "path, or wait until the other recorder has finished",
            path=path,
        ) from None
    except OSError:
        pass  # a filesystem without locks (some network mounts): record unlocked


def _temporary(path: str) -> str:
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.writing-{os.getpid()}-{threading.get_ident()}")


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
