"""An OTLP JSON lines file read one line at a time, for one pass or two.

What ``rewind export`` and the Collector's ``file`` exporter write: one
``ExportTraceServiceRequest`` (or logs request) per line, gzip-compressed or not. Only
the line being decoded is held, so memory follows the longest line, not the file.

Bounds (``REWIND_MAX_ARCHIVE_BYTES``, 64 MiB by default): each line, and for a gzip file
what it decompresses to in all, as for every archive rewind reads (a gzip file's real
size is not what its user sees, and time follows the real size). Past a bound the read
stops with one line naming it. The second pass of a file reads no further than the
first did, so a file still being appended to gives both passes the same lines.

Lines are numbered as ``bytes.splitlines`` numbers them (``\\r`` ends a line too), the
way the whole-file reader names a line in its notes.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from types import TracebackType
from typing import BinaryIO

from rewind.data.safe_read import ARCHIVE_ENV, MAX_ARCHIVE_BYTES, archive_too_big, limit, open_regular

from .errors import TelemetryError

_GZIP_MAGIC = b"\x1f\x8b"
_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.strip() strips: a blank line is made of these
_PEEK = 1 << 16


class LinesFile:
    """A regular file holding OTLP JSON (its first non-blank byte opens an object or array)."""

    def __init__(self, path: str, fh: BinaryIO, compressed: bool, max_bytes: int) -> None:
        self.path = path
        self.compressed = compressed
        self.max_bytes = max_bytes
        #: How many (decompressed) bytes the last full pass read: where a second pass stops.
        self.bytes_read = 0
        self._fh = fh

    @classmethod
    def open(cls, path: str) -> LinesFile | None:
        """The file, ready to read by lines; ``None`` when it does not start like JSON
        (protobuf, empty, or only whitespace: the whole-file readers say what it is)."""
        fd, _ = open_regular(path, what="telemetry file")
        fh = os.fdopen(fd, "rb")
        try:
            lines = cls(path, fh, fh.read(2) == _GZIP_MAGIC, limit(ARCHIVE_ENV, MAX_ARCHIVE_BYTES))
            if lines._first_byte() in (b"{", b"["):
                return lines
        except BaseException:
            fh.close()
            raise
        fh.close()
        return None

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> LinesFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def numbered(self, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        """Each line without its end, with its number (from 1), blank ones included; ``stop``:
        how many bytes to read at most."""
        stream = self._stream()
        number = total = 0
        while True:
            want = self.max_bytes + 1 if stop is None else min(self.max_bytes + 1, stop - total)
            if want <= 0:
                break
            line = self._readline(stream, want)
            if not line:
                break
            total += len(line)
            if self.compressed and total > self.max_bytes:
                raise archive_too_big(self.path, self.max_bytes)
            if len(line) > self.max_bytes and not line.endswith(b"\n"):
                raise TelemetryError(
                    f"{self.path}:{number + 1}: a line of more than {self.max_bytes:,} bytes (the {ARCHIVE_ENV} "
                    f"limit on what one line may hold); if this is real telemetry, raise it, e.g. "
                    f"{ARCHIVE_ENV}={self.max_bytes * 4}"
                )
            if b"\r" in line:  # rare: \r\n, or a lone \r, which ends a line for splitlines too
                for part in line.splitlines():
                    number += 1
                    yield number, part
            else:
                number += 1
                yield number, line[:-1] if line.endswith(b"\n") else line
        self.bytes_read = total

    def _stream(self) -> BinaryIO:
        self._fh.seek(0)
        if self.compressed:
            return gzip.GzipFile(fileobj=self._fh)  # type: ignore[return-value]  # a binary stream
        return self._fh

    def _readline(self, stream: BinaryIO, size: int) -> bytes:
        if not self.compressed:
            return stream.readline(size)
        try:
            return stream.readline(size)
        except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
            raise TelemetryError(f"{self.path}: corrupt gzip ({exc})") from None

    def _first_byte(self) -> bytes:
        """The first byte that is not whitespace (``b""`` when there is none within the bound)."""
        stream = self._stream()
        seen = 0
        while seen <= self.max_bytes:
            try:
                chunk = stream.read(_PEEK)
            except (OSError, EOFError, zlib.error):
                return b""  # the whole-file reader reports the damage as it always has
            if not chunk:
                return b""
            seen += len(chunk)
            rest = chunk.lstrip(_WHITESPACE)
            if rest:
                return rest[:1]
        return b""
