"""Content left in external storage: the completion hook's references, resolved before mapping.

``opentelemetry-util-genai``'s upload completion hook writes a call's messages, system
instructions and tool definitions to files (fsspec: a local folder, ``gs://``, ``s3://``
…) and leaves ``gen_ai.input.messages_ref`` (and ``gen_ai.output.messages_ref``,
``gen_ai.system_instructions_ref``, ``gen_ai.tool.definitions_ref``) on the span or on the
operation-details log record instead of the content. Each file holds the JSON array
(``json`` format, one line) or one JSON object per element with an ``index`` (``jsonl``).

A reference is read from a local path or ``file://`` URL as written, or, when the user
gives ``content_root`` (a folder or an ``http(s)://`` URL where the files are now), from
there by the file's name. Nothing else is fetched: a URL written into telemetry is not a
place rewind goes on its own. What is read becomes the content attribute itself, so every
mapper reads it as if it had been on the span; what cannot be read is marked
(``<name>_ref.unresolved``: why) and the mapper reports it as missing content, never
served.
"""

from __future__ import annotations

import json
import os
import posixpath
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from rewind.data.safe_read import ARCHIVE_ENV, MAX_ARCHIVE_BYTES, limit, open_regular

from .model import CONTENT_MISSING, TOOLS_MISSING, Problem
from .spans import SpanRecord

CONTENT = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
)
REF = "_ref"
UNRESOLVED = "_ref.unresolved"
_TIMEOUT = 10.0


class _Unresolved(Exception):
    pass


def resolve(spans: list[SpanRecord], content_root: str | None = None) -> list[str]:
    """Put externally stored content back on the spans; notes saying what could not be read."""
    notes: list[str] = []
    cache: dict[str, str] = {}
    for attrs in _attribute_sets(spans):
        for key in CONTENT:
            ref = attrs.get(key + REF)
            if not isinstance(ref, str) or key in attrs:
                continue
            try:
                if ref not in cache:
                    cache[ref] = _content(ref, content_root)
                attrs[key] = cache[ref]
            except _Unresolved as exc:
                attrs[key + UNRESOLVED] = str(exc)
                notes.append(f"{key} left in external storage at {ref}: {exc}")
    return notes


def problems(attrs: dict[str, Any]) -> list[Problem]:
    """What a step lacks because a reference could not be read: messages are content missing
    (never served), tool definitions only weaken matching (as when telemetry carries none)."""
    out: list[Problem] = []
    for key in CONTENT:
        if key + UNRESOLVED not in attrs:
            continue
        detail = (
            f"{key} is in external storage at {attrs.get(key + REF)} and could not be read "
            f"({attrs[key + UNRESOLVED]}); pass --content-root DIR|URL where the completion hook uploaded it"
        )
        tools = key == "gen_ai.tool.definitions"
        out.append(Problem(TOOLS_MISSING if tools else CONTENT_MISSING, detail, blocking=not tools))
    return out


def _attribute_sets(spans: list[SpanRecord]) -> Iterator[dict[str, Any]]:
    for span in spans:
        yield span.attributes
        for event in span.events:
            yield event.attributes


def _content(ref: str, root: str | None) -> str:
    """The JSON array text the reference points at."""
    parsed = urllib.parse.urlsplit(ref)
    name = posixpath.basename(parsed.path or ref)
    if root is not None:
        if root.startswith(("http://", "https://")):
            return _elements(_fetch(root.rstrip("/") + "/" + urllib.parse.quote(name)), ref)
        return _elements(_read(os.path.join(root, name)), ref)
    if parsed.scheme == "file":
        return _elements(_read(urllib.request.url2pathname(parsed.path)), ref)
    if parsed.scheme and len(parsed.scheme) > 1:  # gs://, s3://, http(s)://: not fetched unasked
        raise _Unresolved(f"{parsed.scheme}:// storage is not read unasked: copy the files and pass --content-root")
    return _elements(_read(ref), ref)


def _read(path: str) -> bytes:
    try:
        fd, size = open_regular(path, what="content file")
    except (OSError, ValueError) as exc:
        raise _Unresolved(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        if size > limit(ARCHIVE_ENV, MAX_ARCHIVE_BYTES):
            raise _Unresolved(f"{path}: {size:,} bytes is over the {ARCHIVE_ENV} limit")
        return fh.read()


def _fetch(url: str) -> bytes:
    most = limit(ARCHIVE_ENV, MAX_ARCHIVE_BYTES)
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as answer:
            data: bytes = answer.read(most + 1)
    except urllib.error.HTTPError as exc:
        raise _Unresolved(f"{url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise _Unresolved(f"{url}: {getattr(exc, 'reason', exc)}") from None
    if len(data) > most:
        raise _Unresolved(f"{url}: over the {ARCHIVE_ENV} limit")
    return data


def _elements(data: bytes, ref: str) -> str:
    """The hook's file as one JSON array: ``json`` is the array, ``jsonl`` one element a line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Unresolved(f"{ref}: not UTF-8 text") from None
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, list):
        return json.dumps(whole, ensure_ascii=False)
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            raise _Unresolved(f"{ref}: line {number + 1} is not JSON (cut short?)") from None
        if not isinstance(item, dict):
            raise _Unresolved(f"{ref}: line {number + 1} is not a JSON object")
        index = item.pop("index", len(items))
        items.append((index if isinstance(index, int) else len(items), item))
    if not items:
        raise _Unresolved(f"{ref}: empty")
    return json.dumps([item for _, item in sorted(items, key=lambda pair: pair[0])], ensure_ascii=False)
