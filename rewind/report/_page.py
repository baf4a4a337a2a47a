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
    for raw, escaped in _ESCAPES:
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


def lines_block(lines: list[bytes]) -> bytes:
    """Step bodies as JSON lines, script-safe.

    Lines stored as they were recorded may hold what ``JSON.parse`` or a UTF-8 page
    refuses: NaN and Infinity (Python's json writes them) and lone surrogates (written
    as surrogate-escaped bytes). One scan over all lines finds none in almost every
    trace; the lines that do are re-encoded. A carriage return would be turned into a
    line feed by the HTML parser and shift every later step; outside a JSON string it is
    whitespace, inside one it was never valid JSON, so a space replaces it.
    """
    joined = b"\n".join(lines)
    valid = _is_utf8(joined)
    if not valid or b"NaN" in joined or b"Infinity" in joined:
        fixed = [_strict_line(line) if not valid or b"NaN" in line or b"Infinity" in line else line for line in lines]
        joined = b"\n".join(fixed)
    return script_safe(joined.replace(b"\r", b" "))


def _strict_line(line: bytes) -> bytes:
    if b"NaN" not in line and b"Infinity" not in line and _is_utf8(line):
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
    style, script = _static("report.css"), _static("report.js")
    csp = (
        "default-src 'none'; img-src data:; "
        f"style-src {_hash(style)}; script-src {_hash(script)}; "
        "base-uri 'none'; form-action 'none'"
    )
    values: dict[str, bytes] = {
        "CSP": csp.encode("ascii"),
        "STYLE": style.encode("utf-8"),
        "SCRIPT": script.encode("utf-8"),
        "DATA": json_bytes(data),
        "BODIES_A": lines_block(bodies_a),
        "BODIES_B": lines_block(bodies_b),
        "IMAGES": json_bytes(images),
    }
    # Split once and fill each placeholder: data that happens to contain "{{DATA}}" is
    # never scanned again.
    parts = _PLACEHOLDER.split(_static("report.html"))
    out: list[bytes] = []
    for index, part in enumerate(parts):
        out.append(values[part] if index % 2 else part.encode("utf-8"))
    return b"".join(out)


__all__ = ["json_bytes", "lines_block", "page", "script_safe", "strict_json"]
