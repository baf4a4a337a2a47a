"""The trace file: a versioned JSON-lines header, then one event per line.

A recording appends one line per finished call and flushes it, so a process killed
at any moment leaves every completed call on disk. A torn final line (the write the
kill interrupted) is tolerated; corruption anywhere else is a ``TraceFormatError``
that names the file and line.

Two format versions exist. v1 keeps every payload inline. v2 (written by
``record(..., externalize=N)``) may replace big payload leaves with markers that
name a content-addressed file in ``<trace>.blobs/`` (see ``rewind.blobs``); readers
put the original values back, so events look the same whichever version they came
from. A reader that only knows v1 refuses a v2 file with "newer format, upgrade".

``Trace.open`` keeps a small skeleton per event (seq, kind, name, fingerprint,
timing and the line's place in the file) and reads bodies back on demand, so replay
memory follows the number of events rather than their size. ``Trace.load`` parses
everything up front. Gzip archives (``rewind compact``) have no random access, so
both load them eagerly.

This module is ``Trace`` and the names readers import from it; the work lives beside
it: ``event`` (an event and its line), ``event_line`` (the line format),
``line_source`` (random access to a file's lines), ``trace_header``, ``trace_reader``
and ``trace_writer``.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rewind.errors import TraceFormatError, TraceWriteError

from . import blobs as _blobs
from .event import Event, dumps_line
from .event_line import KINDS, MAX_SEQ, describe
from .line_source import LineSource
from .trace_header import (
    BLOBS_FORMAT_VERSION,
    FORMAT_NAME,
    FORMAT_VERSION,
    SUPPORTED_VERSIONS,
    check_header,
    check_threshold,
    header_for,
    new_header,
)
from .trace_reader import ParsedTrace, check_line_fields, is_torn, read_trace
from .trace_writer import PathLike, TraceWriter, externalized_fields

# Names importers of this module use (tests, ``rewind.trace`` users); the private ones
# are kept for code written against the single-module layout.
__all__ = [
    "BLOBS_FORMAT_VERSION",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "KINDS",
    "MAX_SEQ",
    "SUPPORTED_VERSIONS",
    "Event",
    "PathLike",
    "Trace",
    "TraceFormatError",
    "TraceWriteError",
    "TraceWriter",
    "check_line_fields",
    "check_threshold",
    "new_header",
]
_LineSource = LineSource
_check_header = check_header
_is_torn = is_torn
_describe = describe

#: How many lines ``Trace.dump`` joins into one write.
_DUMP_BATCH = 1024


class Trace:
    """A recorded run: a header and its events, sorted by ``seq``."""

    def __init__(
        self,
        events: list[Event] | None = None,
        *,
        header: Mapping[str, Any] | None = None,
        path: PathLike | None = None,
    ) -> None:
        self.header: dict[str, Any] = dict(header) if header is not None else new_header()
        self.events: list[Event] = list(events or [])
        self.path: str | None = os.fspath(path) if path is not None else None
        #: True when the file ended in a torn line (the recording process was killed mid-write).
        self.torn_tail = False

    @property
    def meta(self) -> dict[str, Any]:
        return self.header.setdefault("meta", {})

    @property
    def version(self) -> int:
        return int(self.header.get("version", FORMAT_VERSION))

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __getitem__(self, index: int) -> Event:
        return self.events[index]

    def __repr__(self) -> str:
        return f"Trace({self.path or '<memory>'}, {len(self.events)} events, v{self.version})"

    # -- reading ------------------------------------------------------------
    @classmethod
    def load(cls, path: PathLike) -> Trace:
        """Read a whole trace into memory, every body parsed and every blob read."""
        return cls._from_parsed(read_trace(os.fspath(path), lazy=False), path)

    @classmethod
    def open(cls, path: PathLike) -> Trace:
        """Open a trace lazily: skeletons in memory, bodies read from disk on access.

        Gzip archives have no random access and are loaded eagerly.
        """
        return cls._from_parsed(read_trace(os.fspath(path), lazy=True), path)

    @classmethod
    def _from_parsed(cls, parsed: ParsedTrace, path: PathLike) -> Trace:
        trace = cls(parsed.events, header=parsed.header, path=path)
        trace.torn_tail = parsed.torn_tail
        return trace

    # -- writing ------------------------------------------------------------
    def dump(self, path: PathLike, *, externalize: int | None = None) -> None:
        """Write this trace to ``path`` (gzip-compressed when it ends in ``.gz``).

        Payloads are written inline (format v1), whatever file the trace came from;
        ``externalize`` (a byte threshold) writes v2 instead, with every payload leaf
        of that size or more stored once under ``<path>.blobs/``. To archive a trace
        file as it is, blobs and all, use ``rewind.archive.compact``.
        """
        target = os.fspath(path)
        threshold = check_threshold(externalize)
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        store = _blobs.BlobStore(_blobs.blob_dir_for(target), trace_path=target) if threshold else None
        if store is not None:
            store.ensure_dir()
        header = header_for(self.header, target, threshold)
        tmp = f"{target}.tmp-{os.getpid()}"
        opener = gzip.open if target.endswith(".gz") else open
        try:
            with opener(tmp, "wb") as fh:
                fh.write(dumps_line(header) + b"\n")
                # Written a batch of lines at a time: a line from orjson sits in a buffer of
                # at least 4 KiB, so holding every line of a long trace until the end cost
                # ten times the file (400 MB for 100,000 small steps).
                batch: list[bytes] = []
                for event in self.events:
                    batch.append(dumps_line(externalized_fields(event.to_dict(), store, threshold)))
                    if len(batch) == _DUMP_BATCH:
                        fh.write(b"\n".join(batch) + b"\n")
                        batch = []
                if batch:
                    fh.write(b"\n".join(batch) + b"\n")
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)  # a failed write (disk full) leaves the target as it was, and no orphan
            raise
