"""The proxy's server-sent-event splitter gives the same events however the bytes arrive."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rewind.proxy._exchange import EventSplitter

#: A stream as some servers frame it: CRLF line endings, a named event, a comment, [DONE].
CRLF_STREAM = (
    b'data: {"n":1}\r\n\r\n'
    b'event: delta\r\ndata: {"n":2}\r\n\r\n'
    b": keep-alive\r\n\r\n"
    b'data: {"text":"caf\xc3\xa9"}\r\n\r\n'
    b"data: [DONE]\r\n\r\n"
)
EVENTS = [{"n": 1}, {"n": 2}, {"text": "café"}]


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


def events_of(pieces: list[bytes]) -> list[object]:
    splitter = EventSplitter()
    return [event for piece in pieces for event in splitter.feed(piece)]


def test_a_crlf_split_between_two_pieces_still_ends_its_event() -> None:
    cut = CRLF_STREAM.index(b"\r\n\r\n") + 3  # the blank line's "\r" ends a piece, its "\n" opens the next
    assert events_of([CRLF_STREAM[:cut], CRLF_STREAM[cut:]]) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(CRLF_STREAM)), max_size=12))
def test_any_split_of_a_crlf_stream_gives_the_events_of_the_whole(cuts: list[int]) -> None:
    assert events_of(split_at(CRLF_STREAM, cuts)) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(CRLF_STREAM)), max_size=12))
def test_any_split_of_a_lf_stream_gives_the_events_of_the_whole(cuts: list[int]) -> None:
    stream = CRLF_STREAM.replace(b"\r\n", b"\n")
    assert events_of(split_at(stream, cuts)) == EVENTS
