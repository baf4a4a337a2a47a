"""Writing trace lines: ``TraceWriter`` appends one flushed line per event.

Also the two steps every writer (``TraceWriter`` and ``Trace.dump``) applies to an
event's fields before spelling its line: ``readable_depth`` cuts what nests deeper
than any reader accepts, and ``externalized_fields`` moves big payload leaves into
the blob store of a v2 trace.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewind.data import safe_read as _safe
from rewind.data.canonical import within_depth
from rewind.errors import TraceWriteError

from . import blobs as _blobs
from .event import Event, dumps_line
from .event_line import SKELETON_KEYS
from .line_source import LineSource
from .trace_file import LineFile
from .trace_header import check_threshold, header_for

#: A path argument: what ``open`` takes.
PathLike = str | os.PathLike[str]

#: The deepest a written line may nest: what the readers accept, less the levels a blob
#: marker (and its literal escape) may add around a leaf.
_WRITE_DEPTH = _safe.MAX_DEPTH - 2


def readable_depth(data: dict[str, Any]) -> dict[str, Any]:
    """An event's fields, with payloads nested deeper than any reader accepts cut (and warned)."""
    if not _safe.too_deep(data, _WRITE_DEPTH):
        return data
    return {key: value if key in SKELETON_KEYS else within_depth(value, where=key) for key, value in data.items()}


def externalized_fields(data: dict[str, Any], store: _blobs.BlobStore | None, threshold: int | None) -> dict[str, Any]:
    """An event's fields with payload leaves of ``threshold`` bytes or more moved into ``store``
    (as blob markers); the fields themselves when the trace keeps payloads inline."""
    if store is None or threshold is None:
        return data
    return {
        key: value if key in SKELETON_KEYS else _blobs.externalize(value, store, threshold)
        for key, value in data.items()
    }


class TraceWriter:
    """Appends events to a trace file, one flushed line each (crash-safe).

    With ``externalize`` (a byte threshold) the file is format v2 and payload leaves
    of that size or more are written once to ``<path>.blobs/`` (before the line that
    references them, so a crash never leaves a dangling reference).

    With ``release_bodies`` a written event lets go of its body and reads it back from
    the file when touched, like an event from ``Trace.open``: a long recording then
    holds a small skeleton per step in memory, not every payload it ever saw.

    The file is locked for this writer alone, and a failed write never leaves a partial
    line (``rewind._trace_file``): it raises ``TraceWriteError`` with the file ending
    after its last complete step. With ``replace_on_close`` the lines go to a temporary
    file renamed onto ``path`` by ``close(keep=True)``.
    """

    def __init__(
        self,
        path: PathLike,
        header: Mapping[str, Any],
        *,
        externalize: int | None = None,
        release_bodies: bool = False,
        replace_on_close: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.externalize = check_threshold(externalize)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.blobs: _blobs.BlobStore | None = None
        if self.externalize is not None:
            self.blobs = _blobs.BlobStore(_blobs.blob_dir_for(self.path), trace_path=self.path)
            self.blobs.ensure_dir()
        #: The header as written (v2 and its blob folder when externalizing).
        self.header = header_for(header, self.path, self.externalize)
        self._lock = threading.Lock()
        # Unbuffered: every line goes to the OS in one write, which is the per-event
        # flush crash safety needs, without copying it through a buffer first.
        self._file = LineFile(self.path, replace_on_close=replace_on_close)
        try:
            self._file.append(dumps_line(self.header) + b"\n")
        except OSError as exc:
            self._file.close(keep=False)
            raise TraceWriteError(
                f"{self.path}: could not write the trace header ({exc.strerror or exc}); nothing was recorded",
                path=self.path,
            ) from exc
        self._release = release_bodies
        self._reader: LineSource | None = None

    def write(self, event: Event) -> None:
        try:
            if self.blobs is None:
                line = event.to_line()
                if _safe.maybe_deep(line, _WRITE_DEPTH):  # a bracket count rules out nearly every line
                    line = dumps_line(readable_depth(event.to_dict()))
                line += b"\n"
            else:
                data = readable_depth(event.to_dict())
                line = dumps_line(externalized_fields(data, self.blobs, self.externalize)) + b"\n"
            with self._lock:
                offset = self._file.append(line)
                if self._release:
                    self._release_body(event, offset, len(line) - 1)
        except OSError as exc:
            raise self._write_error(event, exc) from exc

    def _write_error(self, event: Event, exc: OSError) -> TraceWriteError:
        what = f"step {event.seq} ({event.kind} call {event.name!r})"
        if self._file.broken is not None:
            state = f"{self._file.broken}."
        else:
            state = (
                "The partial line was removed: the file ends after its last complete step, and every "
                "step before stays readable; this step is not in it."
            )
        return TraceWriteError(
            f"{self.path}: could not write {what} ({exc.strerror or exc}). {state} "
            "Free disk space (or lift the file size limit) and record the run again to capture it.",
            path=self.path,
            step=event.seq,
        )

    def _release_body(self, event: Event, offset: int, length: int) -> None:
        if self._reader is None:
            self._reader = LineSource(self._file.write_path)
            self._reader.blobs = self.blobs
        event.release_body(self._reader, offset, length)

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self, *, keep: bool = True) -> None:
        """Close the file; with ``replace_on_close``, ``keep`` renames it onto ``path``
        (else it is discarded and ``path`` keeps what it held)."""
        with self._lock:
            self._file.close(keep=keep)
        # Released events keep reading through their own reader; it closes with them.
