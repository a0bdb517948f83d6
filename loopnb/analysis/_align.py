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
    at_a, at_b = positions(a, b, window)
    return [(None if i < 0 else i, None if j < 0 else j) for i, j in zip(at_a, at_b, strict=True)]


def positions(
    a: Sequence[Hashable], b: Sequence[Hashable], window: int = WINDOW
) -> tuple[list[int], list[int]]:
    """``align``'s rows as two columns: each row's index into ``a`` and into ``b``, ``-1`` on the
    side with no turn there. A stretch where the runs agree is paired in one step (no pair built
    per row), so that two long runs that mostly agree cost little more than comparing their keys."""
    xs: list[int] = []
    ys: list[int] = []
    i = j = 0
    n, m = len(a), len(b)
    while i < n and j < m:
        i0, j0 = i, j
        while i < n and j < m and a[i] == b[j]:
            i, j = i + 1, j + 1
        if i > i0:
            xs.extend(range(i0, i))
            ys.extend(range(j0, j))
            continue
        p, q = _resync(a, b, i, j, window)
        both = min(p, q)
        xs.extend(range(i, i + p))  # the first ``both`` pair up, then one side's extra turns
        ys.extend(range(j, j + both))
        ys.extend([-1] * (p - both))
        xs.extend([-1] * (q - both))
        ys.extend(range(j + both, j + q))
        i, j = i + p, j + q
    xs.extend(range(i, n))
    ys.extend([-1] * (n - i))
    xs.extend([-1] * (m - j))
    ys.extend(range(j, m))
    return xs, ys


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
