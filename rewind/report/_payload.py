"""What of each step's body goes into a report, within a size budget.

A step whose stored line is small is embedded exactly as the file holds it, without
parsing it (most steps of most traces: what keeps building a report close to the cost
of opening the trace). A bigger step is parsed and bounded: strings longer than
``Limits.max_string`` are cut with a note of what was left out, images become
references into one table shared by the whole report (a screenshot re-sent every turn
is embedded once), and blob references are resolved once per blob. Past
``Limits.max_bytes`` in total, steps are listed without their bodies.

The markers this module writes (``CLIP``, ``IMAGE``) are read by ``static/report.js``.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from rewind.data.canonical import BLOB, BYTES_HEX
from rewind.storage import blobs as _blobs
from rewind.storage.trace import Event, Trace

from ._page import strict_json

#: A string cut short: ``{CLIP: first characters, "omitted": characters left out}``.
CLIP = "__rewind_report_clip__"
#: An image moved to the report's image table: ``{IMAGE: index, "bytes": size}``.
IMAGE = "__rewind_report_image__"

_DATA_URL = re.compile(r"data:(image/(?:png|jpeg|jpg|gif|webp));base64,", re.IGNORECASE)
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp"})
_BASE64 = re.compile(rb"[A-Za-z0-9+/=\s]*")


@dataclass(frozen=True)
class Limits:
    """How much of a trace a report embeds. ``None`` for a limit means no limit."""

    #: Steps whose stored line is at most this many bytes are embedded as they are.
    max_line: int | None = 64 * 1024
    #: Longer strings in bigger steps are cut to this many characters.
    max_string: int | None = 10_000
    #: Images bigger than this (decoded bytes) are named, not embedded.
    max_image: int | None = 512 * 1024
    #: Step bodies and images past this many bytes in total are left out.
    max_bytes: int | None = 32 * 1024 * 1024

    @classmethod
    def unlimited(cls) -> Limits:
        """Everything embedded (``--inline``): the report may be as big as the trace."""
        return cls(max_line=None, max_string=None, max_image=None, max_bytes=None)


class Embedder:
    """Turns steps into JSON text for the report, sharing one image table and one budget."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.images: list[str | None] = []  # data URLs; None for an image too big to embed
        self._image_index: dict[str, int] = {}
        self._blob_cache: dict[tuple[str, str], Any] = {}
        self.used = 0
        self._clipped = False
        self.omitted_steps = 0
        self.clipped_steps = 0

    # -- steps ----------------------------------------------------------------------
    def step(self, trace: Trace, event: Event, store: _blobs.BlobStore | None) -> tuple[bytes, bool]:
        """One step's line for the report and whether anything in it was cut."""
        limits = self.limits
        if limits.max_bytes is not None and self.used >= limits.max_bytes:
            self.omitted_steps += 1
            return b"null", False
        raw = event.stored_line()
        if raw is not None and _as_stored(raw, limits, store):
            self.used += len(raw)
            return raw, False
        self._clipped = False
        try:
            if raw is None:
                raise ValueError("no stored line")
            # Blob markers kept: resolved once per blob, however many steps share one.
            bounded = self._bound(json.loads(raw), store, None)
        except (ValueError, RecursionError):
            # An event in memory, or a line json cannot take (damaged, or nested deeper
            # than any real payload): the trace's own reader reads it or says what is wrong.
            self._clipped = False
            bounded = self._bound(event.to_dict(), store, None)
        text = strict_json(bounded)
        self.used += len(text)
        if self._clipped:
            self.clipped_steps += 1
        return text, self._clipped

    # -- bounding values ------------------------------------------------------------
    def _bound(self, value: Any, store: _blobs.BlobStore | None, media: str | None) -> Any:
        cls = type(value)
        if cls is str:
            return self._string(value, media)
        if cls is list:
            return [self._bound(item, store, None) for item in value]
        if cls is not dict:
            return value
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == BLOB and store is not None:
                return self._blob(inner, store, media, raw=False)
            if key == BYTES_HEX and type(inner) is dict and BLOB in inner and store is not None:
                return {BYTES_HEX: self._blob(inner[BLOB], store, None, raw=True)}
        hint = _media_type(value)
        return {
            key: self._bound(item, store, hint if key in ("data", "bytes") else None) for key, item in value.items()
        }

    def _string(self, text: str, media: str | None) -> Any:
        image = self._image(text, media)
        if image is not None:
            return image
        limit = self.limits.max_string
        if limit is not None and len(text) > limit:
            self._clipped = True
            return {CLIP: text[:limit], "omitted": len(text) - limit}
        return text

    def _blob(self, sha: Any, store: _blobs.BlobStore, media: str | None, *, raw: bool) -> Any:
        key = (str(sha), f"{raw}:{media}")
        if key in self._blob_cache:
            cached = self._blob_cache[key]
            if isinstance(cached, dict) and (CLIP in cached or self._left_out(cached)):
                self._clipped = True
            return cached
        data = store.get(sha)  # verified against its sha; a bad blob is a TraceFormatError
        if raw:
            limit = self.limits.max_string
            text = data.hex()
            result: Any = (
                text if limit is None or len(text) <= limit else {CLIP: text[:limit], "omitted": len(text) - limit}
            )
        else:
            result = self._string(data.decode("utf-8", "surrogatepass"), media)
            if isinstance(result, dict) and self._left_out(result):
                # Say where the full image is: beside the trace, in its blob folder.
                result = {**result, "blob": os.path.join(os.path.basename(store.directory), str(sha))}
        self._blob_cache[key] = result
        return result

    def _left_out(self, value: dict[str, Any]) -> bool:
        """An image reference whose image is not embedded."""
        index = value.get(IMAGE)
        return isinstance(index, int) and self.images[index] is None

    # -- images -----------------------------------------------------------------------
    def _image(self, text: str, media: str | None) -> dict[str, Any] | None:
        """An image reference when ``text`` is an image (a data URL, or base64 under an image type)."""
        if len(text) < 64:
            return None
        if media is None:
            match = _DATA_URL.match(text)
            if match is None:
                return None
            media, payload = match.group(1).lower(), text[match.end() :]
        else:
            payload = text
        size = len(payload) * 3 // 4
        index = self._image_index.get(text)
        if index is None:
            index = len(self.images)
            self._image_index[text] = index
            url = _data_url(media, payload)
            limits = self.limits
            too_big = limits.max_image is not None and size > limits.max_image
            over_budget = limits.max_bytes is not None and self.used + len(payload) > limits.max_bytes
            if url is None or too_big or over_budget:
                self.images.append(None)
                self._clipped = True
            else:
                self.images.append(url)
                self.used += len(url)
        elif self.images[index] is None:
            self._clipped = True
        return {IMAGE: index, "bytes": size, "type": media}


def _as_stored(raw: bytes, limits: Limits, store: _blobs.BlobStore | None) -> bool:
    """Whether a stored line can go into the page as it is (small, no blob markers).
    Lone surrogates are dealt with by ``_page.lines_block``, NaN and Infinity by the
    page's reader."""
    if limits.max_line is not None and len(raw) > limits.max_line:
        return False
    return store is None or _blobs.BLOB_MARKER not in raw


def _media_type(value: dict[str, Any]) -> str | None:
    """The image type a dict declares for its ``data`` (Anthropic ``source``, Gemini ``inline_data``)."""
    for key in ("media_type", "mime_type", "mimeType"):
        media = value.get(key)
        if isinstance(media, str) and media.lower() in _IMAGE_TYPES:
            return media.lower()
    return None


def _data_url(media: str, payload: str) -> str | None:
    """A ``data:`` URL the page may show, or ``None`` when the payload is not clean base64."""
    raw = payload.encode("ascii", "replace")
    if not _BASE64.fullmatch(raw):
        return None
    try:
        base64.b64decode(raw[:4096] + b"=" * (-len(raw[:4096]) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None
    compact = payload.replace("\n", "").replace("\r", "").replace(" ", "")
    return f"data:{'image/jpeg' if media == 'image/jpg' else media};base64,{compact}"


__all__ = ["CLIP", "IMAGE", "Embedder", "Limits"]
