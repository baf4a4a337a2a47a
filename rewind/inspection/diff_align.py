"""The alignment of two traces' steps, for ``rewind diff``.

A weighted longest common subsequence over the steps' identities (kind and call
name): a pair of identical steps (``diff_steps.Side.sig``) weighs 2, a pair that only
shares an identity 1. Identical heads and tails pair up first; the middle they leave is
aligned exactly up to ``DP_LIMIT`` cells, and beyond it by difflib's matching blocks over
the identities.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .diff_steps import Side, same

# Beyond this many cells the exact alignment gets slow in pure Python; difflib's
# matching-blocks alignment (close to LCS in practice) takes over.
DP_LIMIT = 2_000_000


def align(side_a: Side, side_b: Side) -> list[tuple[int | None, int | None]]:
    """Pairs of step indexes (A's, B's) in order; ``None`` on the side a step is missing from."""
    n, m = len(side_a.events), len(side_b.events)
    ka, kb = side_a.keys, side_b.keys
    # Identical heads and tails pair up directly; only the middle needs aligning.
    head = 0
    while head < n and head < m and ka[head] == kb[head] and same(side_a, head, side_b, head):
        head += 1
    tail = 0
    while tail < min(n, m) - head:
        x, y = n - 1 - tail, m - 1 - tail
        if ka[x] != kb[y] or not same(side_a, x, side_b, y):
            break
        tail += 1
    pairs: list[tuple[int | None, int | None]] = [(k, k) for k in range(head)]
    middle_a = range(head, n - tail)
    middle_b = range(head, m - tail)
    if len(middle_a) * len(middle_b) <= DP_LIMIT:
        # Signatures only where the exact alignment weighs them: the middle.
        sa = {i: side_a.sig(i) for i in middle_a}
        sb = {j: side_b.sig(j) for j in middle_b}
        pairs.extend(_lcs(middle_a, middle_b, ka, kb, sa, sb))
    else:
        pairs.extend(_blocks(middle_a, middle_b, ka, kb))
    pairs.extend((n - tail + k, m - tail + k) for k in range(tail))
    return pairs


def _lcs(
    ra: range, rb: range, ka: Sequence[Any], kb: Sequence[Any], sa: Mapping[int, str], sb: Mapping[int, str]
) -> Iterator[tuple[int | None, int | None]]:
    """Weighted LCS: an identical pair scores 2, a pair sharing only kind and name 1."""
    n, m = len(ra), len(rb)
    a0, b0 = ra.start, rb.start
    if _all_pairs_alike(ra, rb, ka, kb, sa, sb):
        # Every pair weighs 1, so the table is min(n - i, m - j) and the walk below pairs
        # the steps in place, then leaves the longer side's rest unpaired.
        yield from zip(ra, rb)
        yield from ((a0 + k, None) for k in range(m, n))
        yield from ((None, b0 + k) for k in range(n, m))
        return
    pair_weight = 1
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        key, sig = ka[a0 + i], sa[a0 + i]
        for j in range(m - 1, -1, -1):
            best = below[j] if below[j] >= row[j + 1] else row[j + 1]
            if key == kb[b0 + j]:
                score = below[j + 1] + pair_weight + (1 if sig == sb[b0 + j] else 0)
                if score > best:
                    best = score
            row[j] = best
    i = j = 0
    while i < n and j < m:
        if ka[a0 + i] == kb[b0 + j]:
            score = table[i + 1][j + 1] + pair_weight + (1 if sa[a0 + i] == sb[b0 + j] else 0)
            if table[i][j] == score:
                yield a0 + i, b0 + j
                i += 1
                j += 1
                continue
        if table[i + 1][j] >= table[i][j + 1]:
            yield a0 + i, None
            i += 1
        else:
            yield None, b0 + j
            j += 1
    for k in range(i, n):
        yield a0 + k, None
    for k in range(j, m):
        yield None, b0 + k


def _all_pairs_alike(
    ra: range, rb: range, ka: Sequence[Any], kb: Sequence[Any], sa: Mapping[int, str], sb: Mapping[int, str]
) -> bool:
    """Whether every step of both middles has one identity and no step of A's is
    identical to one of B's: a run of one call (a chat agent) that diverged."""
    if not ra or not rb:
        return False
    key = ka[ra.start]
    if any(ka[i] != key for i in ra) or any(kb[j] != key for j in rb):
        return False
    return {sa[i] for i in ra}.isdisjoint(sb[j] for j in rb)


def _blocks(ra: range, rb: range, ka: Sequence[Any], kb: Sequence[Any]) -> Iterator[tuple[int | None, int | None]]:
    ids: dict[Any, int] = {}
    left = [ids.setdefault(ka[i], len(ids)) for i in ra]
    right = [ids.setdefault(kb[j], len(ids)) for j in rb]
    if left == right:  # what the matcher would find, without its quadratic search
        yield from zip(ra, rb)
        return
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                yield ra.start + i1 + k, rb.start + j1 + k
            continue
        for k in range(i1, i2):
            yield ra.start + k, None
        for k in range(j1, j2):
            yield None, rb.start + k


__all__ = ["DP_LIMIT", "align"]
