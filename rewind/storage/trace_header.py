"""The trace header: the first line of a trace file, naming the format and its version.

``new_header`` makes one for a recording, ``header_for`` adapts it to what a writer
writes (v1 inline, or v2 with a blob folder), and ``check_header`` is what every reader
accepts: an agent-rewind header of a version this rewind reads, or a
``TraceFormatError`` saying what to do.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from rewind.data import safe_read as _safe
from rewind.data.canonical import ensure_jsonable
from rewind.errors import TraceFormatError

from . import blobs as _blobs
from .event_line import decode_line, describe, scan_value

FORMAT_NAME = "agent-rewind"
#: The version of a trace whose payloads are all inline (what ``record`` writes by default).
FORMAT_VERSION = 1
#: The version of a trace that may keep payload leaves in ``<trace>.blobs/``.
BLOBS_FORMAT_VERSION = 2
SUPPORTED_VERSIONS = frozenset({1, 2})


def new_header(meta: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    from rewind._version import __version__

    now = time.time()
    header: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "rewind_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "created_ts": now,
        # meta= is the user's: anything with no JSON form degrades with a warning.
        "meta": ensure_jsonable(dict(meta or {}), where="meta"),
    }
    header.update(fields)
    return header


def check_threshold(externalize: Any) -> int | None:
    """Validate an ``externalize=`` byte threshold (``None`` keeps payloads inline)."""
    if externalize is None:
        return None
    if isinstance(externalize, bool) or not isinstance(externalize, int) or externalize < 1:
        raise ValueError(f"externalize= must be a byte threshold >= 1 (or None), not {externalize!r}")
    return externalize


def header_for(header: Mapping[str, Any], path: str, externalize: int | None) -> dict[str, Any]:
    """``header`` as written to ``path``: v2 with its blob folder when externalizing, else v1."""
    out = dict(header)
    out.pop("externalize", None)
    out.pop("blobs", None)
    if externalize is None:
        out["version"] = FORMAT_VERSION
    else:
        out["version"] = BLOBS_FORMAT_VERSION
        out["externalize"] = externalize
        out["blobs"] = os.path.basename(_blobs.blob_dir_for(path))
    return out


def check_header(raw: bytes, path: str) -> dict[str, Any]:
    header: Any
    try:
        header = _safe.strict_object(decode_line(raw), scan_value, what="the header")
    except ValueError as exc:
        if b'"format"' in raw and FORMAT_NAME.encode() in raw:
            raise TraceFormatError(f"the header is damaged ({exc})", path=path, line=1) from None
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise TraceFormatError("not a rewind trace (the first line is not an agent-rewind header)", path=path, line=1)
    version = header.get("version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(f"header has an invalid format version {describe(version)}", path=path, line=1)
    if version not in SUPPORTED_VERSIONS:
        newest = max(SUPPORTED_VERSIONS)
        if version > newest:
            raise TraceFormatError(
                f"written in trace format v{version}, newer than this rewind reads (v{newest}); "
                "upgrade agent-rewind-otel to read it",
                path=path,
                line=1,
            )
        raise TraceFormatError(f"trace format v{version} is not supported", path=path, line=1)
    threshold = header.get("externalize")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1):
        raise TraceFormatError(f"header has an invalid externalize threshold {describe(threshold)}", path=path, line=1)
    return header
