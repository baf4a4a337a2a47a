"""Archiving finished traces: ``compact`` gzips a trace file exactly as it is.

Live recording stays uncompressed on purpose (a flushed line per call is what makes
a crashed run readable), so compression is a separate step for finished traces.
The archive holds the same bytes as the trace, so a v2 trace keeps its blob
references; every reader opens ``.gz`` archives transparently (eagerly: gzip has no
random access). Repeated-history runs typically shrink 10-50x.

A torn final line (the write a killed recorder left behind) is dropped: every reader
skips it anyway, and an archive is a finished trace. The source is read like any
trace: a regular file only, and a gzip source never decompressed past the archive
limit (see ``rewind._safe_read``).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from rewind.data import safe_read as _safe
from rewind.errors import TraceFormatError

from . import blobs as _blobs
from .trace_header import BLOBS_FORMAT_VERSION, check_header
from .trace_reader import is_torn
from .trace_writer import PathLike

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def compact(source: PathLike, destination: PathLike | None = None, *, level: int = 6) -> str:
    """Gzip the trace at ``source`` to ``destination`` (default ``<source>.gz``); return its path.

    The write is atomic (a temporary file renamed into place) and reproducible (no
    timestamp or file name in the gzip header). When ``source`` keeps blobs and the
    archive would not find them where it lands, the blob folder is copied to
    ``<destination>.blobs``.
    """
    src = os.fspath(source)
    dst = os.fspath(destination) if destination is not None else src + ".gz"
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError(f"{dst}: the archive would overwrite its own source; choose another destination")
    header = _read_header(src)
    directory = os.path.dirname(os.path.abspath(dst))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(dst)}.tmp-{os.getpid()}")
    try:
        with (
            _open_source(src) as (fin, limit),
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level, mtime=0) as fout,
        ):
            _copy_complete_lines(fin, fout, src, limit)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if int(header["version"]) >= BLOBS_FORMAT_VERSION:
        _carry_blobs(src, dst, header)
    return dst


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...

    def readline(self, size: int | None = ..., /) -> bytes: ...


class _Writable(Protocol):
    def write(self, data: bytes | bytearray | memoryview, /) -> int: ...


def _copy_complete_lines(fin: _Readable, fout: _Writable, path: str, limit: int | None) -> None:
    """Copy ``fin`` to ``fout`` as it is, except a torn final line, which is dropped.

    Bytes after the last newline are held back (in one growing buffer, so a long
    line costs its size, not its size squared) and written only if they are a
    complete event that merely lacks its newline.
    """
    pending = bytearray()
    total = 0
    header_seen = False  # a final line with no line before it is the header, never an event
    while True:
        chunk = fin.read(_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if limit is not None and total > limit:
            raise _safe.archive_too_big(path, limit)
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending += chunk
            continue
        if not header_seen:
            header_seen = bool(pending.strip() or chunk[:cut].strip())
        if pending:
            fout.write(pending)
            pending.clear()
        view = memoryview(chunk)
        fout.write(view[:cut])
        pending += view[cut:]
    if pending and (not header_seen or not is_torn(bytes(pending))):
        fout.write(pending)


@contextmanager
def _open_source(path: str) -> Iterator[tuple[_Readable, int | None]]:
    """The trace's bytes (decompressed when it is already a gzip archive) and the
    decompressed-size limit that applies to them (``None`` for a plain file)."""
    fd, _size = _safe.open_regular(path)
    with open(fd, "rb") as raw:
        if raw.read(2) != _GZIP_MAGIC:
            raw.seek(0)
            yield raw, None
            return
        raw.seek(0)
        with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            yield stream, _safe.limit(_safe.ARCHIVE_ENV, _safe.MAX_ARCHIVE_BYTES)


def _read_header(path: str) -> dict[str, Any]:
    try:
        with _open_source(path) as (fh, limit):
            bound = limit if limit is not None else -1
            first = fh.readline(bound)
            while first and not first.strip():
                first = fh.readline(bound)
            if limit is not None and len(first) >= limit:
                raise _safe.archive_too_big(path, limit)
    except FileNotFoundError:
        raise TraceFormatError("no such trace file; record one with rewind.record(path)", path=path) from None
    except IsADirectoryError:
        raise TraceFormatError("is a directory, not a trace file", path=path) from None
    except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
        raise TraceFormatError(f"corrupt gzip archive ({exc})", path=path) from None
    if not first:
        raise TraceFormatError("empty file: no trace header", path=path, line=1)
    return check_header(first, path)


def _carry_blobs(src: str, dst: str, header: dict[str, Any]) -> None:
    """Make sure the archive resolves the blobs its source resolved."""
    source_dir = _blobs.resolve_dir(src, header)
    if not os.path.isdir(source_dir):
        return  # nothing to carry; reading a reference will name the missing blob
    for candidate in _blobs.candidate_dirs(dst, header):
        if os.path.isdir(candidate):
            if _same(candidate, source_dir):
                return
            break  # the archive would read this folder first: fill it
    _blobs.copy_blobs(source_dir, _blobs.blob_dir_for(dst))


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
