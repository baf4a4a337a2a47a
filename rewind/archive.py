"""Archiving finished traces: ``compact`` gzips a trace file exactly as it is.

Live recording stays uncompressed on purpose (a flushed line per call is what makes
a crashed run readable), so compression is a separate step for finished traces.
The archive holds the same bytes as the trace, so a v2 trace keeps its blob
references; every reader opens ``.gz`` archives transparently (eagerly: gzip has no
random access). Repeated-history runs typically shrink 10-50x.
"""

from __future__ import annotations

import gzip
import os
import shutil
from typing import Any, BinaryIO

from . import blobs as _blobs
from .errors import TraceFormatError
from .trace import BLOBS_FORMAT_VERSION, PathLike, _check_header

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
            _open_source(src) as fin,
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level, mtime=0) as fout,
        ):
            shutil.copyfileobj(fin, fout, _CHUNK)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if int(header["version"]) >= BLOBS_FORMAT_VERSION:
        _carry_blobs(src, dst, header)
    return dst


def _open_source(path: str) -> BinaryIO:
    """The trace's bytes, decompressed when it is already a gzip archive."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _read_header(path: str) -> dict[str, Any]:
    try:
        with _open_source(path) as fh:
            first = fh.readline()
            while first and not first.strip():
                first = fh.readline()
    except FileNotFoundError:
        raise TraceFormatError("no such trace file; record one with rewind.record(path)", path=path) from None
    except IsADirectoryError:
        raise TraceFormatError("is a directory, not a trace file", path=path) from None
    except (OSError, EOFError) as exc:
        raise TraceFormatError(f"corrupt gzip archive ({exc})", path=path) from None
    if not first:
        raise TraceFormatError("empty file: no trace header", path=path, line=1)
    return _check_header(first, path)


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
