"""Reading untrusted bytes: regular files only, bounded sizes, strict JSON objects.

A trace comes from anywhere (a bug report, a CI artifact, a golden someone committed),
so every reader of trace files and blobs goes through these guards. What they
promise is stated in docs/trace-format.md, "Opening a trace from anywhere":

- only regular files are opened (a FIFO, a device, a socket or a directory is
  refused before a byte is read, and a FIFO never blocks the open);
- a gzip archive is decompressed as a stream and stops at ``REWIND_MAX_ARCHIVE_BYTES``;
- a blob is checked by its size before it is read (``REWIND_MAX_BLOB_BYTES``);
- a JSON line nests at most ``MAX_DEPTH`` objects/arrays and names each key once.

Every refusal is a ``TraceFormatError`` naming the file (and line).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from json.decoder import JSONDecodeError, scanstring  # type: ignore[attr-defined]  # public at runtime
from typing import Any, Protocol

from rewind.errors import RewindError, TraceFormatError

#: Default bound on what a gzip archive may decompress to (override: REWIND_MAX_ARCHIVE_BYTES).
#: An archive is parsed eagerly, at a few times its decompressed size in memory; 64 MiB
#: holds thousands of ordinary steps (the 5,000-call benchmark run is 22 MB).
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
#: Default bound on the size of one blob file (override: REWIND_MAX_BLOB_BYTES).
MAX_BLOB_BYTES = 256 * 1024 * 1024
#: The deepest nesting of objects and arrays a trace line (or header) may have, the
#: line's own object included. Far beyond any real payload, and shallow enough that
#: every consumer (previews, diff, blob restore, revival) stays clear of Python's
#: recursion limit.
MAX_DEPTH = 200
ARCHIVE_ENV = "REWIND_MAX_ARCHIVE_BYTES"
BLOB_ENV = "REWIND_MAX_BLOB_BYTES"

_CHUNK = 1 << 20
_BLANK_LINES = re.compile(rb"[ \t\r\n\x0b\x0c]*\n")
_O_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def limit(env: str, default: int) -> int:
    """A byte limit: ``env`` when set (a positive integer of bytes), else ``default``."""
    raw = os.environ.get(env)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise RewindError(f"{env}={raw!r} is not a positive number of bytes; unset it or set e.g. {env}={default}")
    return value


# -- regular files ------------------------------------------------------------------


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def not_regular(kind: str, path: str, what: str) -> TraceFormatError:
    if kind == "a directory" and what == "trace file":
        return TraceFormatError("is a directory, not a trace file", path=path)
    return TraceFormatError(f"{what} is {kind}: rewind reads only regular files", path=path)


def open_regular(path: str, *, what: str = "trace file", nofollow: bool = False) -> tuple[int, int]:
    """Open a regular file for reading; return ``(fd, size)``.

    The file is checked before it is opened (a FIFO would block ``open`` waiting for
    a writer, a socket cannot be opened at all) and again on the open descriptor (it
    may have been swapped in between). ``O_NONBLOCK`` keeps a FIFO swapped in at the
    last moment from blocking. ``OSError`` (missing file, permissions) propagates.
    """
    info = os.lstat(path) if nofollow else os.stat(path)
    kind = file_kind(info.st_mode)
    if kind is not None:
        raise not_regular(kind, path, what)
    fd = os.open(path, _O_FLAGS | (_O_NOFOLLOW if nofollow else 0))
    try:
        info = os.fstat(fd)
        kind = file_kind(info.st_mode)
        if kind is not None:
            raise not_regular(kind, path, what)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


# -- gzip ------------------------------------------------------------------------------


def archive_too_big(path: str, max_bytes: int) -> TraceFormatError:
    return TraceFormatError(
        f"gzip archive decompresses to more than {max_bytes:,} bytes (the {ARCHIVE_ENV} limit); "
        f"if you trust this archive, raise the limit, e.g. {ARCHIVE_ENV}={max_bytes * 4}",
        path=path,
    )


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


def bounded_lines(stream: _Readable, path: str, max_bytes: int) -> Iterator[bytes]:
    """The ``\\n``-terminated lines of a decompressing ``stream``, never more than ``max_bytes`` in all.

    ``read(n)`` on a gzip stream decompresses at most ``n`` bytes, so a bomb is
    stopped after ``max_bytes`` whatever its ratio, and a line is never longer than
    that either. The last line keeps its missing newline (a torn write). A run of
    blank lines comes as one item (readers skip blank lines and count its newlines),
    so an archive of millions of empty lines costs a few items per chunk, not one each.
    """
    total = 0
    pending: list[bytes] = []  # the start of a line that has not ended yet, in chunks
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > max_bytes:
            raise archive_too_big(path, max_bytes)
        last = chunk.rfind(b"\n")
        if last < 0:
            pending.append(chunk)  # joined once, when the line ends: a long line costs its size
            continue
        start = chunk.index(b"\n") + 1
        if pending:
            pending.append(chunk[:start])
            yield b"".join(pending)
            pending = []
        else:
            yield chunk[:start]
        while start <= last:
            blank = _BLANK_LINES.match(chunk, start)
            stop = blank.end() if blank is not None else chunk.index(b"\n", start) + 1
            yield chunk[start:stop]
            start = stop
        if start < len(chunk):
            pending.append(chunk[start:])
    if pending:
        yield b"".join(pending)


# -- strict JSON objects -----------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def too_deep(value: Any, budget: int) -> bool:
    """Whether ``value`` nests more than ``budget`` objects/arrays (itself included)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > budget:
            return True
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return False


def maybe_deep(raw: bytes | str, budget: int) -> bool:
    """A cheap upper bound: a text with at most ``budget`` opening brackets cannot nest deeper."""
    if isinstance(raw, bytes):
        return raw.count(b"{") + raw.count(b"[") > budget
    return raw.count("{") + raw.count("[") > budget


def json_error(exc: JSONDecodeError, column: int = 0) -> ValueError:
    """A JSON syntax error located by its column in the whole line."""
    return ValueError(f"{exc.msg} at column {column + exc.pos + 1}")


def depth_error() -> ValueError:
    return ValueError(f"nested deeper than {MAX_DEPTH} levels of objects and arrays")


def scan_fields(
    text: str,
    pos: int,
    scan_value: Callable[[str, int], tuple[Any, int]],
    *,
    into: dict[str, Any],
    reserved: frozenset[str] | tuple[str, ...] = (),
    stop_key: str | None = None,
    column: int = 0,
) -> tuple[dict[str, Any], int]:
    """Parse ``"key": value`` pairs of one JSON object from just after its ``{`` (or a ``,``).

    Returns the fields and the position after the closing ``}``, or, with ``stop_key``,
    the position of that key's opening quote as soon as it is reached (the rest is
    not read). A key seen twice, or one of ``reserved``, is a ``ValueError``: two
    readers must never disagree about which of two values a line means.
    ``RecursionError`` from a value nested beyond the stack becomes a ``ValueError``.
    """

    def ws(at: int) -> int:
        if at < len(text) and text[at] in " \t\n\r":
            return _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
        return at

    pos = ws(pos)
    if text.startswith("}", pos) and not into:
        return into, pos + 1
    try:
        while True:
            if stop_key is not None and text.startswith(stop_key, pos):
                return into, pos
            if text[pos] != '"':
                raise ValueError(f"expected a field name at column {column + pos + 1}")
            key, pos = scanstring(text, pos + 1)
            if key in into or key in reserved:
                raise ValueError(f"the key {key!r} appears twice in one line")
            pos = ws(pos)
            if text[pos] != ":":
                raise ValueError(f"expected ':' at column {column + pos + 1}")
            value, pos = scan_value(text, ws(pos + 1))
            into[key] = value
            pos = ws(pos)
            sep = text[pos]
            if sep == "}":
                return into, pos + 1
            if sep != ",":
                raise ValueError(f"expected ',' or '}}' at column {column + pos + 1}")
            pos = ws(pos + 1)
    except RecursionError:
        raise depth_error() from None


def strict_object(
    text: str, scan_value: Callable[[str, int], tuple[Any, int]], *, what: str = "an event line"
) -> dict[str, Any]:
    """A whole line that must be one JSON object: no duplicate keys, nothing after it."""
    pos = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", pos):
        raise ValueError(f"{what} must be a JSON object")
    try:
        data, pos = scan_fields(text, pos + 1, scan_value, into={})
    except (IndexError, StopIteration):
        raise ValueError("the line ends early") from None
    except JSONDecodeError as exc:
        raise json_error(exc) from None
    end = _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]
    if end != len(text):
        raise ValueError(f"extra data after the JSON object at column {end + 1}")
    if maybe_deep(text, MAX_DEPTH) and too_deep(data, MAX_DEPTH):
        raise depth_error()
    return data
