"""One mapper per attribute layout; the first that claims a span maps it.

Order matters only where layouts overlap: rewind's spans also carry GenAI attributes,
OpenLLMetry's also carry ``gen_ai.system``/``gen_ai.request.model``, so the more
specific layouts are asked first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from rewind.importing.model import Draft
from rewind.importing.spans import SpanRecord

from . import genai, openinference, openllmetry, rewind_spans


class Mapper(NamedTuple):
    layout: str
    claims: Callable[[SpanRecord], bool]
    map_span: Callable[[SpanRecord], Draft | None]


MAPPERS: tuple[Mapper, ...] = (
    Mapper(rewind_spans.LAYOUT, rewind_spans.claims, rewind_spans.map_span),
    Mapper(openinference.LAYOUT, openinference.claims, openinference.map_span),
    Mapper(openllmetry.LAYOUT, openllmetry.claims, openllmetry.map_span),
    Mapper(genai.LAYOUT, genai.claims, genai.map_span),
)

LAYOUTS = tuple(m.layout for m in MAPPERS)


def mapper_for(span: SpanRecord) -> Mapper | None:
    for mapper in MAPPERS:
        if mapper.claims(span):
            return mapper
    return None
