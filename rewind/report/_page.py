"""Assemble the single HTML file: the template, our CSS and JS, and the data as JSON.

Everything a trace holds is untrusted. It enters the page only as JSON inside
``<script type="application/json">`` (and JSON lines inside a non-executable script
block), with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, so nothing in a payload
can end the block or open markup. The page's script inserts text with
``textContent``, never as markup, and a Content-Security-Policy allows only our own
inline script and style (by hash), ``data:`` images, and no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from functools import cache
from importlib import resources
from typing import Any

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; json writes the same values
    _orjson = None

_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")
_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


@cache
def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static").joinpath(name).read_text(encoding="utf-8")


def script_safe(data: bytes) -> bytes:
    """JSON text made safe to sit inside a ``<script>`` element.

    The escaped characters can only occur inside JSON strings, where ``\\u003c`` and
    friends mean the same character, so the JSON parses to the same value.
    """
    # ASCII text (what the trace writer produces) cannot hold U+2028/U+2029, and the check
    # is cheaper than looking for them in megabytes of step lines.
    for raw, escaped in _ESCAPES[:3] if data.isascii() else _ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def strict_json(value: Any) -> bytes:
    """Compact JSON as UTF-8 that ``JSON.parse`` accepts: lone surrogates become ``\\uXXXX``
    escapes and NaN/Infinity (which Python writes but JSON lacks) become strings."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return text.encode("utf-8", "backslashreplace")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def json_bytes(value: Any) -> bytes:
    """``strict_json`` made script-safe."""
    return script_safe(strict_json(value))


def data_bytes(value: Any) -> bytes:
    """The page's own data (rows, totals, the header), script-safe.

    Its numbers are finite (``_trace_data`` makes the header's so), which is when orjson
    writes JSON with the same values as ``strict_json``, several times faster; what orjson
    refuses (an integer past 64 bits, a lone surrogate) goes the ``strict_json`` way."""
    if _orjson is not None:
        try:
            return script_safe(_orjson.dumps(value, default=str))
        except TypeError:
            pass
    return json_bytes(value)


def lines_block(lines: list[bytes]) -> list[bytes]:
    """Step bodies as JSON lines, script-safe, as the pieces of the page to join (the
    lines are megabytes: joined once, with the rest of the page, not twice).

    Lines stored as they were recorded may hold lone surrogates (written as
    surrogate-escaped bytes), which a UTF-8 page refuses; those lines are re-encoded.
    (NaN and Infinity, which Python's json writes and ``JSON.parse`` refuses, are left to
    the page's reader: looking for them here would cost more than embedding the lines.)
    A carriage return would be turned into a line feed by the HTML parser and shift every
    later step; outside a JSON string it is whitespace, inside one it was never valid
    JSON, so a space replaces it.
    """
    parts: list[bytes] = []
    for line in lines:
        if not line.isascii():
            line = script_safe(_strict_line(line))
        elif b"<" in line or b">" in line or b"&" in line:
            line = script_safe(line)
        if b"\r" in line:
            line = line.replace(b"\r", b" ")
        parts.append(line)
        parts.append(b"\n")
    return parts[:-1]


def _strict_line(line: bytes) -> bytes:
    if _is_utf8(line):
        return line
    try:
        text = line.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
    try:
        return strict_json(json.loads(text))
    except ValueError:
        # A damaged line stays readable as text; the page says it is not JSON when opened.
        return text.encode("utf-8", "backslashreplace")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def page(data: Any, bodies_a: list[bytes], bodies_b: list[bytes], images: list[str | None]) -> bytes:
    """The whole HTML file as bytes."""
    # summaries.js defines what report.js calls to summarize the steps: one inline script.
    style, script = _static("report.css"), _static("summaries.js") + _static("report.js")
    csp = (
        "default-src 'none'; img-src data:; "
        f"style-src {_hash(style)}; script-src {_hash(script)}; "
        "base-uri 'none'; form-action 'none'"
    )
    values: dict[str, bytes | list[bytes]] = {
        "CSP": csp.encode("ascii"),
        "STYLE": style.encode("utf-8"),
        "SCRIPT": script.encode("utf-8"),
        "DATA": data_bytes(data),
        "BODIES_A": lines_block(bodies_a),
        "BODIES_B": lines_block(bodies_b),
        "IMAGES": json_bytes(images),
    }
    # Split once and fill each placeholder: data that happens to contain "{{DATA}}" is
    # never scanned again.
    parts = _PLACEHOLDER.split(_static("report.html"))
    out: list[bytes] = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            out.append(part.encode("utf-8"))
            continue
        value = values[part]
        if isinstance(value, bytes):
            out.append(value)
        else:
            out.extend(value)
    return b"".join(out)


__all__ = ["json_bytes", "lines_block", "page", "script_safe", "strict_json"]
