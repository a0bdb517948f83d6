"""Two runs' turns side by side: pair them by turn while they agree, by their calls where they drift.

``align(a, b)`` takes each run's turns as keys (one per turn, in turn order: the calls the turn
made) and returns the aligned rows as ``(i, j)`` index pairs, ``None`` on the side that has no
turn on that row. Equal keys pair at once, so two runs that agree pair turn by turn. Where the
keys differ, the nearest place where the two runs make the same calls again (two turns in a row,
or to the end of either run) is found within ``WINDOW`` turns of each side: the turns before it
pair one to one as differing rows and the side that made more turns gets gaps for the rest, so
one retry more on one side is one gap, not every later row shifted. With no such place in reach
the two turns pair as a differing row. Pure Python, linear in the turns for runs that re-align.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

WINDOW = 24
"""How many turns of each side a re-alignment looks ahead."""

Pair = tuple[int | None, int | None]


def align(a: Sequence[Hashable], b: Sequence[Hashable], window: int = WINDOW) -> list[Pair]:
    """The aligned rows of keys ``a`` and ``b`` (see the module's docstring)."""
    rows: list[Pair] = []
    i = j = 0
    n, m = len(a), len(b)
    while i < n and j < m:
        if a[i] == b[j]:
            rows.append((i, j))
            i, j = i + 1, j + 1
            continue
        p, q = _resync(a, b, i, j, window)
        both = min(p, q)
        rows.extend((i + k, j + k) for k in range(both))
        rows.extend((i + k, None) for k in range(both, p))
        rows.extend((None, j + k) for k in range(both, q))
        i, j = i + p, j + q
    rows.extend((k, None) for k in range(i, n))
    rows.extend((None, k) for k in range(j, m))
    return rows


def _resync(a: Sequence[Hashable], b: Sequence[Hashable], i: int, j: int, window: int) -> tuple[int, int]:
    """How many turns ``(p, q)`` of each side to step over before they agree again: the fewest
    rows (``max(p, q)``), then the fewest gaps (``p == q`` first); ``(1, 1)`` when out of reach."""
    for d in range(1, window + 1):
        for p, q in _candidates(d):
            if _agree(a, b, i + p, j + q):
                return p, q
    return 1, 1


def _candidates(d: int) -> list[tuple[int, int]]:
    """The steps of ``d`` rows: ``(d, d)``, then ``(d, d - 1)``, ``(d - 1, d)``, ... ``(0, d)``."""
    out = [(d, d)]
    for k in range(d - 1, -1, -1):
        out.extend([(d, k), (k, d)])
    return out


def _agree(a: Sequence[Hashable], b: Sequence[Hashable], i: int, j: int) -> bool:
    """Whether the runs agree from ``a[i]``, ``b[j]``: two turns in a row, or to either one's end."""
    n, m = len(a), len(b)
    if i > n or j > m:
        return False
    if i == n or j == m:
        return i == n and j == m  # both ended there: the turns before were all the difference
    if a[i] != b[j]:
        return False
    return i + 1 == n or j + 1 == m or a[i + 1] == b[j + 1]
