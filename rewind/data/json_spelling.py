"""The spellings every JSON form in rewind shares.

Rewind's marker keys (bytes, a user dict that looks like a marker, a blob), the one
canonical spelling of JSON data (``canonical_json``: sorted keys, no spaces, what
fingerprints hash and what orders sets), the nesting bound of a recorded value, and
reprs with their memory addresses removed. Conversion (``rewind.data.jsonable``) and
fingerprinting (``rewind.data.canonical``) both build on these, so they spell a value
the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any

BYTES_UTF8 = "__bytes_utf8__"
BYTES_HEX = "__bytes_hex__"
LITERAL = "__rewind_literal__"
#: Marks a payload leaf stored in the trace's blob folder (``rewind.blobs``).
BLOB = "__rewind_blob__"
MARKER_KEYS = frozenset({BYTES_UTF8, BYTES_HEX, LITERAL, BLOB})

# Process-dependent spellings: the memory address in a default repr
# (``<Foo object at 0x7f3a...>``, ``<function f at 0x...>``), and any bare hex number too
# wide for 32 bits (an ``id()`` printed in hex). Narrower hex is meaningful
# (``<Color 0xff0000>``) and is kept.
_ADDRESS = re.compile(r"(?<=\bat )0x[0-9a-fA-F]{6,}|0x[0-9a-fA-F]{9,}")


def normalize_repr(text: str) -> str:
    """Remove memory addresses from a repr so it is identical across processes."""
    return _ADDRESS.sub("0x…", text)


def canonical_json(value: Any) -> str:
    """The one spelling of JSON data used for fingerprints: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=refuse_unconverted)


def refuse_unconverted(value: Any) -> Any:
    """The encoders' ``default``: anything not JSON data is an error, never a silent repr."""
    raise TypeError(f"not JSON data: {type(value).__name__}; call to_jsonable first")


#: How deep a recorded value may nest. JSON this deep still encodes and decodes with
#: the standard library's recursion limits to spare; deeper parts are recorded as a
#: placeholder string with a ``LossySerializationWarning``.
MAX_DEPTH = 128
