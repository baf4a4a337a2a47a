"""Two traces' steps, and whether a step of one is the same as a step of the other.

``compare`` tells whether two steps have the same request and the same outcome
(response or error), the way ``rewind diff`` means it: per-run ids, timestamps and usage
masked unless ``exact`` (``diff_mask``). It tries the cheapest proof first:

- signatures, when the exact alignment computed both (a digest of each step's masked
  request and outcome);
- the stored bytes (``stored_body``): the same body is the same step unread; a body
  that differs is cut where its request starts, a part that is the same bytes on both
  sides is equal unread, and only a part that differs is parsed and walked;
- else both events are read and their payloads walked, stopping at the first
  difference (events held in memory, v2 lines with blob markers, bodies that do not cut).

Every way gives the same answer: the one a digest of each side's masked canonical
JSON gives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from rewind.data.canonical import canonical_json, fast_dumps
from rewind.storage.trace import Event, Trace

from .diff_mask import mask as _mask
from .diff_mask import same_json
from .stored_body import bodies_stored, body_key, parse_head, parse_request, stored_body, stored_parts


class Side:
    """One trace's steps and their content signatures, each computed on first need.

    A step's signature (its masked request and outcome, hashed) costs a parse, a mask
    and a canonical dump of its whole body; most steps of two related runs are equal,
    and equal stored bytes prove that without any of it (``stored_body``). So the
    signatures are only computed for steps whose stored bytes have no twin on the
    other side at the position being compared.
    """

    def __init__(self, trace: Trace, exact: bool, shared: dict[bytes, tuple[str, str]]) -> None:
        self.events: list[Event] = list(trace.events)
        self.keys = [(e.kind, e.name) for e in self.events]
        self.exact = exact
        self._texts: dict[str, str] = {}  # masked strings, see _mask
        self.stored = bodies_stored(trace)
        # Signatures by body key, shared by both sides: a body seen twice is hashed once.
        self._shared = shared
        self._parts: list[tuple[str, str] | None] = [None] * len(self.events)
        # Steps found equal to the other side's step (by index) while aligning the
        # identical head and tail: their rows need no second comparison.
        self.equal_to: dict[int, int] = {}

    def parts(self, index: int) -> tuple[str, str]:
        """The request and outcome signatures of step ``index``."""
        parts = self._parts[index]
        if parts is None:
            raw = body_key(self.events[index], with_fingerprint=self.exact) if self.stored else None
            parts = self._shared.get(raw) if raw is not None else None
            if parts is None:
                event = self.events[index]
                request, result = self.views(event)
                parts = (event.fingerprint if self.exact else _digest(request), _digest(result))
                if raw is not None:
                    self._shared[raw] = parts
            self._parts[index] = parts
        return parts

    def sig(self, index: int) -> str:
        request, result = self.parts(index)
        return f"{request}:{result}"

    def compare(self, index: int, other: Side, other_index: int) -> tuple[bool, bool]:
        """Whether the request and the outcome of step ``index`` are the same as those
        of ``other``'s step ``other_index``, from signatures when both sides have them,
        else from the parts of their stored bodies, else by walking both payloads, which
        stops at their first difference."""
        mine, theirs = self._parts[index], other._parts[other_index]
        if mine is not None and theirs is not None:
            return mine[0] == theirs[0], mine[1] == theirs[1]
        ea, eb = self.events[index], other.events[other_index]
        if self.stored and other.stored:
            known = self.compare_stored(ea, eb)
            if known is not None:
                return known
        return self.compare_read(ea, eb)

    def compare_read(self, ea: Event, eb: Event) -> tuple[bool, bool]:
        """``compare`` by reading both events and walking their payloads."""
        ea, eb = ea.hydrated(), eb.hydrated()
        masked = not self.exact
        texts, provider = self._texts, ea.kind == "llm"
        # The outcome first: reading it parses a small line whole (and the copy keeps it),
        # so the request is then read from memory.
        same_outcome = same_json(_result(ea), _result(eb), masked=masked, provider=provider, texts=texts)
        if self.exact:
            same_request = ea.fingerprint == eb.fingerprint
        else:
            same_request = same_json(ea.request, eb.request, masked=True, provider=provider, texts=texts)
        return same_request, same_outcome

    def compare_stored(self, ea: Event, eb: Event) -> tuple[bool, bool] | None:
        """``compare`` from the two steps' stored bodies: the same bytes (and ``ok`` flag,
        and fingerprint with ``exact``) are the same step unread; else each body is cut
        where its request starts, a part that is the same bytes on both sides is equal
        unread, and a part that differs is parsed and walked. ``None`` when a body is not
        stored, or does not cut or parse so: the caller reads the events.

        A part that is the same bytes on both sides is not parsed, as an equal body is
        not (``same_stored``); with ``exact`` a request is its fingerprint and not read.
        What is parsed proves the cut: heads that parse as whole fields, or requests
        that each parse as one object, which a cut inside the response (or one with
        fields after the request) cannot give."""
        body_a, body_b = stored_body(ea), stored_body(eb)
        if body_a is None or body_b is None:
            return None
        if body_a == body_b and ea.ok == eb.ok and (not self.exact or ea.fingerprint == eb.fingerprint):
            return True, True
        cut_a, cut_b = stored_parts(body_a), stored_parts(body_b)
        if cut_a is None or cut_b is None:
            return None
        (head_a, request_a), (head_b, request_b) = cut_a, cut_b
        texts, provider = self._texts, ea.kind == "llm"
        if head_a == head_b:
            same_outcome = ea.ok == eb.ok
            if (self.exact or request_a == request_b) and parse_head(head_a) is None:
                return None  # no request is parsed, so the head must prove the cut
        else:
            fields_a, fields_b = parse_head(head_a), parse_head(head_b)
            if fields_a is None or fields_b is None:
                return None
            result_a, result_b = _result_of(ea.ok, fields_a), _result_of(eb.ok, fields_b)
            same_outcome = same_json(result_a, result_b, masked=not self.exact, provider=provider, texts=texts)
        if self.exact:
            return ea.fingerprint == eb.fingerprint, same_outcome
        if request_a == request_b:
            return True, same_outcome
        parsed_a = parse_request(request_a)
        parsed_b = parse_request(request_b) if parsed_a is not None else None
        if parsed_a is None or parsed_b is None:
            return None
        return same_json(parsed_a, parsed_b, masked=True, provider=provider, texts=texts), same_outcome

    def views(self, event: Event) -> tuple[Any, Any]:
        # A lazily opened step would parse its line for each part read; a hydrated copy
        # parses it once (and is dropped with the views).
        event = event.hydrated()
        result = _result(event)
        if self.exact:
            return event.request, result
        provider = event.kind == "llm"
        texts = self._texts
        return _mask(event.request, provider=provider, texts=texts), _mask(result, provider=provider, texts=texts)


def _result(event: Event) -> dict[str, Any]:
    """What a step's outcome is compared by: ok, and the response (and stream) or error."""
    return _result_of(event.ok, event.head())


def _result_of(ok: bool, head: Mapping[str, Any]) -> dict[str, Any]:
    """``_result`` of a step with this ``ok`` flag and these body fields (its head)."""
    result: dict[str, Any] = {"ok": ok}
    if ok:
        result["response"] = head.get("response")
        stream = head.get("stream")
        if stream is not None:
            result["stream"] = stream
    else:
        result["error"] = head.get("error")
    return result


def compare(side_a: Side, i: int, side_b: Side, j: int) -> tuple[bool, bool]:
    """Whether step ``i`` of A and step ``j`` of B have the same request, and outcome."""
    return side_a.compare(i, side_b, j)


def same(side_a: Side, i: int, side_b: Side, j: int) -> bool:
    if compare(side_a, i, side_b, j) != (True, True):
        return False
    side_a.equal_to[i] = j
    return True


def _digest(value: Any) -> str:
    # fast_dumps gives the canonical JSON's exact bytes (orjson's, where they are provably
    # the standard library's), or None, and then the standard library spells it.
    text = fast_dumps(value, sort_keys=True)
    if text is None:
        text = canonical_json(value).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()[:32]


__all__ = ["Side", "compare", "same"]
