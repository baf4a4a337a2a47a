"""Content-addressed blobs: big payload leaves stored once, beside the trace.

A trace recorded with ``externalize=N`` (format v2) replaces every payload leaf of
N bytes or more with a marker naming the sha256 of its content, and stores the
content once in ``<trace>.blobs/<sha256>``. A vision agent that re-sends the same
screenshot every turn therefore writes the image once, however many turns it runs.

A leaf is a string, counted by its UTF-8 size. Bytes values are leaves too: a
``{"__bytes_utf8__": text}`` value externalizes its text like any string, and a
``{"__bytes_hex__": hex}`` value (counted by its hex size) stores the raw bytes,
half the size, as ``{"__bytes_hex__": {"__rewind_blob__": sha}}``. The marker is
``{"__rewind_blob__": "<sha256 hex>"}``, small on purpose: it is what every
re-sending turn costs. Markers are resolved back to the original JSON when an event
body is read, so nothing above the trace layer ever sees one.

A trace is untrusted data: a marker's sha must be 64 hex digits (so the file name
cannot climb out of the blob folder), the file must be a regular file inside the
folder, and its content must hash to the sha it is filed under. Anything else is a
``TraceFormatError`` naming the sha and the path where the blob was expected.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import threading
from collections.abc import Mapping
from typing import Any, TypeGuard

from rewind.data import safe_read as _safe
from rewind.data.canonical import BLOB, BYTES_HEX, LITERAL
from rewind.errors import TraceFormatError

BLOB_MARKER = b'"__rewind_blob__"'
SUFFIX = ".blobs"

_SHA = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


def blob_dir_for(trace_path: str) -> str:
    """Where a trace written to ``trace_path`` keeps its blobs: ``<trace>.blobs``."""
    return os.fspath(trace_path) + SUFFIX


def valid_dir_name(name: Any) -> TypeGuard[str]:
    """A header may only name a sibling folder: no separators, no ``..``."""
    if not isinstance(name, str) or not name.endswith(SUFFIX) or name in (".", ".."):
        return False
    separators = {"/", "\\", "\0", os.sep} | ({os.altsep} if os.altsep else set())
    return not any(sep in name for sep in separators) and not name.startswith("..")


def candidate_dirs(trace_path: str, header: Mapping[str, Any]) -> list[str]:
    """Folders that may hold a trace's blobs, most specific first.

    ``<trace>.blobs`` first; for a ``.gz`` archive also the folder of the trace it was
    compacted from; finally the folder named in the header, beside the trace (which
    keeps a renamed trace or a ``-o`` archive in the same folder working).
    """
    path = os.fspath(trace_path)
    found = [blob_dir_for(path)]
    if path.endswith(".gz"):
        found.append(blob_dir_for(path[:-3]))
    name = header.get("blobs")
    if valid_dir_name(name):
        found.append(os.path.join(os.path.dirname(path), name))
    unique: list[str] = []
    for entry in found:
        if entry not in unique:
            unique.append(entry)
    return unique


def resolve_dir(trace_path: str, header: Mapping[str, Any]) -> str:
    """The first existing candidate folder, else the primary one (reads will then fail loudly)."""
    candidates = candidate_dirs(trace_path, header)
    for entry in candidates:
        if os.path.isdir(entry):
            return entry
    return candidates[0]


class BlobStore:
    """One trace's blob folder: put content in, get verified content out."""

    def __init__(self, directory: str, *, trace_path: str | None = None) -> None:
        self.directory = os.fspath(directory)
        self.trace_path = trace_path
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"BlobStore({self.directory!r})"

    def path_for(self, sha: str) -> str:
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise self._error(f"invalid blob reference {sha!r} (expected a sha256 hex digest)")
        return os.path.join(self.directory, sha)

    # -- writing ------------------------------------------------------------------
    def put(self, data: bytes) -> str:
        """Store ``data`` under its sha256 (once) and return the sha."""
        sha = hashlib.sha256(data).hexdigest()
        if sha in self._known:
            return sha
        target = self.path_for(sha)
        with self._lock:
            if sha in self._known:
                return sha
            os.makedirs(self.directory, exist_ok=True)
            if not _is_regular_file(target):
                # Write-then-rename: a crash never leaves a half blob under a valid name.
                tmp = f"{target}.tmp-{os.getpid()}-{threading.get_ident()}"
                try:
                    with open(tmp, "wb") as fh:
                        fh.write(data)
                    os.replace(tmp, target)
                except BaseException:
                    _remove_quietly(tmp)  # a failed write (disk full) leaves no orphan behind
                    raise
            self._known.add(sha)
        return sha

    def ensure_dir(self) -> None:
        os.makedirs(self.directory, exist_ok=True)

    # -- reading ------------------------------------------------------------------
    def get(self, sha: str) -> bytes:
        """The content filed under ``sha``, verified; a ``TraceFormatError`` otherwise.

        Only a regular file directly inside the folder is read (a FIFO, a device or a
        symlink is refused before reading), its size is checked against the blob limit
        before a byte is read, and it is hashed as it streams in.
        """
        target = self.path_for(sha)
        try:
            fd, size = _safe.open_regular(target, what=f"blob {sha} at {target}", nofollow=True)
        except FileNotFoundError:
            raise self._error(
                f"missing blob {sha}: expected at {target}. A trace recorded with externalize= keeps "
                "big payloads in its .blobs folder; copy that folder along with the trace file"
            ) from None
        except TraceFormatError as exc:
            raise self._error(f"{exc}; expected a regular file inside the blob folder") from None
        except OSError as exc:
            raise self._error(f"cannot read blob {sha} at {target} ({exc.strerror or exc})") from None
        try:
            if not self._inside(target):
                raise self._error(f"blob {sha} at {target} is not a regular file inside the blob folder")
            limit = _safe.limit(_safe.BLOB_ENV, _safe.MAX_BLOB_BYTES)
            if size > limit:
                raise self._error(self._too_big(sha, target, f"is {size:,} bytes", limit))
            data = self._read_hashed(fd, sha, target, limit)
        finally:
            os.close(fd)
        return data

    def _read_hashed(self, fd: int, sha: str, target: str, limit: int) -> bytes:
        digest = hashlib.sha256()
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # the file grew after its size was checked
                raise self._error(self._too_big(sha, target, "grew while read", limit))
            digest.update(chunk)
            chunks.append(chunk)
        if digest.hexdigest() != sha:
            raise self._error(f"blob {sha} at {target} does not match its sha256: it was modified after recording")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @staticmethod
    def _too_big(sha: str, target: str, what: str, limit: int) -> str:
        return (
            f"blob {sha} at {target} {what}, over the {limit:,}-byte limit ({_safe.BLOB_ENV}); "
            f"if you trust this trace, raise the limit, e.g. {_safe.BLOB_ENV}={limit * 4}"
        )

    def _inside(self, target: str) -> bool:
        root = os.path.realpath(self.directory)
        return os.path.dirname(os.path.realpath(target)) == root

    def _error(self, message: str) -> TraceFormatError:
        return TraceFormatError(message, path=self.trace_path)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


# -- markers ---------------------------------------------------------------------


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _big(text: str, threshold: int) -> bool:
    # len() bounds the UTF-8 size from both sides, so most strings skip encoding.
    n = len(text)
    if n >= threshold:
        return True
    if n * 4 < threshold:
        return False
    return len(_encoded(text)) >= threshold


def _raw_hex(text: str) -> bytes | None:
    """The bytes a tagged hex value spells, when they spell it back exactly."""
    try:
        data = bytes.fromhex(text)
    except ValueError:
        return None
    # fromhex also accepts upper case and spaces; only canonical hex round-trips.
    return data if data.hex() == text else None


def externalize(value: Any, store: BlobStore, threshold: int) -> Any:
    """``value`` with every leaf of ``threshold`` bytes or more moved into ``store``."""
    cls = type(value)
    if cls is str:
        if _big(value, threshold):
            return {BLOB: store.put(_encoded(value))}
        return value
    if cls is list:
        return [externalize(item, store, threshold) for item in value]
    if cls is dict:
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == BYTES_HEX and type(inner) is str and _big(inner, threshold):
                # Bytes are stored raw (half the size of their hex), under their tag.
                data = _raw_hex(inner)
                if data is not None:
                    return {BYTES_HEX: {BLOB: store.put(data)}}
            if key == LITERAL and type(inner) is dict:
                # A user dict shaped like a marker: keep it literal, externalize inside it.
                return {LITERAL: {k: externalize(v, store, threshold) for k, v in inner.items()}}
        return {k: externalize(v, store, threshold) for k, v in value.items()}
    return value


def restore(value: Any, store: BlobStore, cache: dict[str, str] | None = None) -> Any:
    """Undo ``externalize``: every marker becomes the JSON it replaced.

    ``cache`` lets a whole-trace load read each blob once and share the string.
    """
    cls = type(value)
    if cls is list:
        return [restore(item, store, cache) for item in value]
    if cls is not dict:
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == BLOB:
            return _resolve(inner, store, cache, raw=False)
        if key == BYTES_HEX and type(inner) is dict and len(inner) == 1 and BLOB in inner:
            return {BYTES_HEX: _resolve(inner[BLOB], store, cache, raw=True)}
        if key == LITERAL and type(inner) is dict:
            return {LITERAL: {k: restore(v, store, cache) for k, v in inner.items()}}
    return {k: restore(v, store, cache) for k, v in value.items()}


def _resolve(sha: Any, store: BlobStore, cache: dict[str, str] | None, *, raw: bool) -> str:
    key = f"hex:{sha}" if raw else sha
    text = cache.get(key) if cache is not None and isinstance(sha, str) else None
    if text is None:
        data = store.get(sha)
        if raw:
            text = data.hex()
        else:
            try:
                text = data.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError as exc:
                raise store._error(f"blob {sha} is not valid UTF-8 text ({exc})") from None
        if cache is not None:
            cache[key] = text
    return text


def referenced(value: Any, found: set[str] | None = None) -> set[str]:
    """Every blob sha referenced anywhere in ``value``."""
    found = set() if found is None else found
    cls = type(value)
    if cls is list:
        for item in value:
            referenced(item, found)
    elif cls is dict:
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == BLOB and isinstance(inner, str):
                found.add(inner)
                return found
        for item in value.values():
            referenced(item, found)
    return found


def copy_blobs(source_dir: str, target_dir: str) -> None:
    """Copy a blob folder's blob files (valid names, regular files) into ``target_dir``."""
    os.makedirs(target_dir, exist_ok=True)
    for entry in os.scandir(source_dir):
        if _SHA.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            target = os.path.join(target_dir, entry.name)
            if not os.path.exists(target):
                shutil.copyfile(entry.path, target)
