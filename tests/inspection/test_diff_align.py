"""The exact alignment's shortcuts give what its table gives."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from rewind.inspection.diff_align import _lcs


def _by_table(
    ra: range, rb: range, ka: Sequence[Any], kb: Sequence[Any], sa: Mapping[int, str], sb: Mapping[int, str]
) -> Iterator[tuple[int | None, int | None]]:
    """The weighted LCS as it was written before its shortcuts: the whole table, then the walk."""
    n, m = len(ra), len(rb)
    a0, b0 = ra.start, rb.start
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best = max(table[i + 1][j], table[i][j + 1])
            if ka[a0 + i] == kb[b0 + j]:
                best = max(best, table[i + 1][j + 1] + 1 + (sa[a0 + i] == sb[b0 + j]))
            table[i][j] = best
    i = j = 0
    while i < n and j < m:
        if ka[a0 + i] == kb[b0 + j]:
            score = table[i + 1][j + 1] + 1 + (sa[a0 + i] == sb[b0 + j])
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


_step = st.tuples(st.sampled_from([("llm", "chat"), ("tool", "search")]), st.sampled_from(["s1", "s2", "s3", "s4"]))


@given(st.lists(_step, max_size=9), st.lists(_step, max_size=9), st.integers(0, 3), st.sampled_from([0, 1, 2]))
# One call throughout, and A's second step identical to B's first: pairing them beats pairing in place.
@example([(("llm", "chat"), "s1"), (("llm", "chat"), "s2")], [(("llm", "chat"), "s2")], 0, 0)
def test_the_alignment_is_the_tables(a: list[Any], b: list[Any], start: int, shape: int) -> None:
    if shape:  # one identity (a chat agent): with signatures apart (the shortcut), or shared
        a = [(("llm", "chat"), ("a" if shape == 1 else "") + sig) for _, sig in a]
        b = [(("llm", "chat"), ("b" if shape == 1 else "") + sig) for _, sig in b]
    ka = [None] * start + [key for key, _ in a]
    kb = [None] * start + [key for key, _ in b]
    sa = {start + i: sig for i, (_, sig) in enumerate(a)}
    sb = {start + j: sig for j, (_, sig) in enumerate(b)}
    ra, rb = range(start, start + len(a)), range(start, start + len(b))
    assert list(_lcs(ra, rb, ka, kb, sa, sb)) == list(_by_table(ra, rb, ka, kb, sa, sb))
