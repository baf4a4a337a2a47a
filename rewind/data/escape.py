"""Making text from a trace inert before a human sees it.

A trace is data from anywhere, and its strings (step names, ``meta``, payloads, error
messages, even the file name) reach terminals through ``rewind show``, ``stats``,
``diff``, the stepper and the TUI. A string holding an escape sequence would be obeyed
by the terminal: OSC sets the window title or, with OSC 52, writes the clipboard;
CSI moves the cursor or erases the screen; C1 controls do the same in one byte;
bidirectional overrides make text read differently from what it is. Every
human-facing output passes recorded text through ``inert``, which shows such
characters as visible escapes (``\\x1b``, ``\\x9b``, ``\\u202e``) instead.

This is the one place that decides what is escaped; renderers never do it their own
way.
"""

from __future__ import annotations

import json
import re

# C0 controls (below), DEL and C1 controls; lone surrogates (not printable, and a terminal
# encoder would fail on them); invisible format characters that reorder or hide text
# (bidi embeddings/overrides/isolates, zero-width marks, the BOM, interlinear
# annotations) and the Unicode line and paragraph separators.
_FORMAT = "\x7f-\x9f\ud800-\udfff\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
_ANY = re.compile(f"[\x00-\x1f{_FORMAT}]")
_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_FORMAT}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control and invisible formatting character shown as an escape.

    ``keep_newlines`` leaves ``\\n`` alone, for multi-line views (pretty JSON, a diff)
    whose line breaks are rewind's own layout.
    """
    if text.isprintable():  # the common case, checked in C
        return text
    pattern = _BUT_NEWLINE if keep_newlines else _ANY
    return pattern.sub(_visible, text)


def inert_value(value: object) -> str:
    """Any value as inert text (``str()`` first)."""
    return inert(value if isinstance(value, str) else str(value))


_IN_JSON = re.compile(f"[{_FORMAT}]")


def inert_json(value: object, *, indent: int | None = 2) -> str:
    """``value`` as JSON for a terminal: readable text, but every character ``inert`` would
    escape written as a JSON ``\\uXXXX`` escape (the same value to a JSON reader).

    ``json.dumps`` escapes only C0 controls; with ``ensure_ascii=False`` a C1 CSI (U+009B)
    or a bidi override (U+202E) would reach the terminal raw.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


__all__ = ["inert", "inert_json", "inert_value"]
