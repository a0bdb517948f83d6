"""The frames of a ``Comparison``: the aligned turns, the first divergence and the totals.

``aligned`` pairs the two sides' turns (``loopnb.analysis._align``) and lays each side's columns
beside the other's; ``divergence_of`` finds the first row that differs; ``totals_of`` counts each
side with ``loopnb.audit`` (its recovery streaks, retries and breaker trips), so a comparison's
figures are the audit's.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from loopnb.analysis._align import positions
from loopnb.engine import MAX_RECOVERY_ATTEMPTS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from loopnb.analysis._compare import Divergence, Side

HOWS: tuple[str, ...] = ("call", "ended", "channel", "producer", "error_text")
"""How an aligned row can differ, in the order a row's ``how`` names the first that applies."""
PER_SIDE: tuple[str, ...] = (
    "channel",
    "producer",
    "tools",
    "call",
    "error_text",
    "reply_text",
    "recovery_attempts",
    "latency_ms",
    "input_tokens",
    "output_tokens",
)
"""The columns each side has in the aligned frame (suffix ``_a`` or ``_b``)."""
COMPARE_COLUMNS: tuple[str, ...] = (
    "row",
    "turn_a",
    "turn_b",
    "differs",
    "how",
    *(f"{c}_{s}" for c in PER_SIDE for s in ("a", "b")),
)
"""The aligned frame's columns, in order: a public contract, as the turns frame's are."""
TOTALS_COLUMNS: tuple[str, ...] = (
    "side",
    "run_id",
    "turns",
    "ok",
    "soft",
    "hard",
    "soft_streaks",
    "recovered",
    "recovery_rate",
    "retried_calls",
    "retries",
    "max_retries",
    "ceiling",
    "exhausted",
    "breaker_trips",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "ended",
    "with_events",
)

TOTALS_LABELS: tuple[tuple[str, str], ...] = (
    ("turns", "turns"),
    ("ok", "ok turns"),
    ("soft", "soft turns"),
    ("hard", "hard turns"),
    ("soft_streaks", "soft streaks"),
    ("recovered", "recovered on its own"),
    ("retried_calls", "calls retried"),
    ("retries", "retries in all"),
    ("max_retries", "most retries on one call"),
    ("exhausted", "calls past the ceiling"),
    ("breaker_trips", "breaker trips"),
    ("input_tokens", "tokens in"),
    ("output_tokens", "tokens out"),
    ("latency_ms", "latency (ms, summed)"),
    ("ended", "ended"),
)
"""The totals' rows as the panes, the page and the terminal show them: column, words."""
"""The totals' columns, in order."""


def _text(value: Any) -> str | None:
    """A frame value as text, ``None`` for a missing one (``pd.NA`` or NaN)."""
    return value if isinstance(value, str) else None


def _calls(side: Side, with_arguments: bool) -> list[str]:
    """Each turn's calls as compared: with their arguments when both sides have events."""
    if with_arguments:
        calls = side.calls
        return [calls.get(t, "") for t in side.turns["turn"].tolist()]
    return [_text(v) or "" for v in side.turns["tools"].astype(object).tolist()]


def _keys(side: Side, calls: list[str]) -> list[Hashable]:
    """What the alignment matches: each turn's calls; a hard turn that made none (the run ended
    before the model asked for anything) matches nothing, so a final reply never pairs with it."""
    import numpy as np

    keys: list[Hashable] = list(calls)
    hard = side.turns["channel"].eq("hard").fillna(False).to_numpy()
    for i in np.flatnonzero(hard).tolist():
        if not calls[i]:
            keys[i] = object()
    return keys


def aligned(a: Side, b: Side) -> pd.DataFrame:
    """The aligned frame of sides ``a`` and ``b`` (``Comparison.turns``), built a column at a time:
    each side's columns taken at its rows' positions (missing on a gap), never row by row."""
    import numpy as np
    import pandas as pd

    with_arguments = a.event_objects is not None and b.event_objects is not None
    keys_a, keys_b = _calls(a, with_arguments), _calls(b, with_arguments)
    xs, ys = positions(_keys(a, keys_a), _keys(b, keys_b))
    at_a, at_b = np.array(xs, dtype=np.intp), np.array(ys, dtype=np.intp)
    del xs, ys
    side_a, side_b = _taken(a.turns, at_a), _taken(b.turns, at_b)
    side_a["call"], side_b["call"] = _taken_calls(keys_a, at_a), _taken_calls(keys_b, at_b)
    codes = _hows(at_a, at_b, side_a, side_b)
    n = len(at_a)
    data: dict[str, Any] = {
        "row": pd.array(np.arange(1, n + 1), dtype="Int64"),
        "turn_a": side_a["turn"],
        "turn_b": side_b["turn"],
        "differs": codes >= 0,
        "how": pd.Categorical.from_codes(codes, dtype=_how_dtype()),
    }
    for column in PER_SIDE:
        data[f"{column}_a"], data[f"{column}_b"] = side_a[column], side_b[column]
    return pd.DataFrame(data, columns=list(COMPARE_COLUMNS), copy=False)


def _how_dtype() -> pd.CategoricalDtype:
    import pandas as pd

    return pd.CategoricalDtype(pd.Index(list(HOWS), dtype="string"))


def _taken(turns: pd.DataFrame, at: np.ndarray) -> dict[str, Any]:
    """``turns``' columns of the aligned frame taken at positions ``at`` (``-1``: missing); a side
    with a turn on every row keeps its own arrays (no copy)."""
    names = ["turn", *(c for c in PER_SIDE if c != "call")]
    if len(at) == len(turns):  # each turn is on one row: as many rows as turns is no gap, in order
        return {name: turns[name].array for name in names}
    return {name: turns[name].array.take(at, allow_fill=True) for name in names}


def _taken_calls(calls: list[str], at: np.ndarray) -> Any:
    """The side's calls at positions ``at`` as a ``string`` array: missing on a gap and for none."""
    import numpy as np
    import pandas as pd

    values = np.array([*calls, None], dtype=object)[at]  # -1 takes the None at the end
    values[values == ""] = None
    return pd.array(values, dtype="string")


def _hows(at_a: np.ndarray, at_b: np.ndarray, side_a: dict[str, Any], side_b: dict[str, Any]) -> np.ndarray:
    """Each row's ``how`` as its index in ``HOWS`` (``-1``: the row agrees): on a gap ``ended`` past
    the side's last turn, else ``call``; on a pair the first of ``call``, ``channel``, ``producer``,
    ``error_text`` that differs."""
    import numpy as np

    n = len(at_a)
    rows = np.arange(n)
    gap_a, gap_b = at_a < 0, at_b < 0
    both = ~(gap_a | gap_b)
    codes = np.full(n, -1, dtype=np.int8)
    for name in ("error_text", "producer", "channel", "call"):  # the last one set wins: HOWS' order
        differs = _values(side_a[name]) != _values(side_b[name])
        codes[both & differs] = HOWS.index(name)
    last_a = rows[~gap_a][-1] if (~gap_a).any() else -1
    last_b = rows[~gap_b][-1] if (~gap_b).any() else -1
    codes[gap_a | gap_b] = HOWS.index("call")
    codes[(gap_a & (rows > last_a)) | (gap_b & (rows > last_b))] = HOWS.index("ended")
    return codes


def _values(array: Any) -> np.ndarray:
    """An array's values as objects, ``None`` for a missing one (text compared as ``_text`` does)."""
    import numpy as np

    return np.asarray(array.to_numpy(dtype=object, na_value=None))


def divergence_of(frame: pd.DataFrame, totals: pd.DataFrame, labels: tuple[str, str]) -> Divergence | None:
    """The first row of ``frame`` that differs, or how the runs ended when every row agrees."""
    import numpy as np

    from loopnb.analysis._compare import Divergence

    turn_a = frame["turn_a"].to_numpy(dtype=np.int64, na_value=-1)
    known = np.flatnonzero(turn_a >= 0)
    last_a = int(turn_a[known].max()) if len(known) else 0
    differs = np.flatnonzero(frame["how"].cat.codes.to_numpy() >= 0)
    if len(differs):
        r = int(differs[0])
        ta, tb = _int(frame["turn_a"].iat[r]), _int(frame["turn_b"].iat[r])
        later = known[known >= r]  # a's next turn, on a row where a has none
        turn = ta if ta is not None else int(turn_a[later[0]]) if len(later) else last_a + 1
        how = str(frame["how"].iat[r])
        column = "call" if how in ("call", "ended") else how
        va, vb = (_text(frame[f"{column}_{s}"].iat[r]) for s in ("a", "b"))
        return Divergence(turn, r + 1, ta, tb, how, va, vb, labels)
    ended = [_text(v) for v in totals["ended"].astype(object).tolist()]
    if ended[0] is not None and ended[1] is not None and ended[0] != ended[1]:
        return Divergence(last_a + 1, None, None, None, "ended", ended[0], ended[1], labels)
    return None


def _int(value: Any) -> int | None:
    import pandas as pd

    return None if value is None or value is pd.NA else int(value)


def totals_of(sides: tuple[Side, Side]) -> pd.DataFrame:
    """One row per side (``Comparison.totals``), counted by ``loopnb.audit``."""
    import pandas as pd

    rows = [_totals(side) for side in sides]
    ints = TOTALS_COLUMNS[2:8] + TOTALS_COLUMNS[9:17]
    data: dict[str, Any] = {
        "side": pd.array([r["side"] for r in rows], dtype="string"),
        "run_id": pd.array([r["run_id"] for r in rows], dtype="string"),
    }
    for name in TOTALS_COLUMNS[2:]:
        values = [r[name] for r in rows]
        if name in ints:
            data[name] = pd.array(values, dtype="Int64")
        elif name in ("recovery_rate", "latency_ms"):
            data[name] = pd.array(values, dtype="Float64")
        elif name == "ended":
            data[name] = pd.array(values, dtype="string")
        else:
            data[name] = pd.array(values, dtype="bool")
    return pd.DataFrame(data, columns=list(TOTALS_COLUMNS))


def _totals(side: Side) -> dict[str, Any]:
    from loopnb.analysis._audit import Audit

    t = side.turns
    audit = Audit(t, side.events)
    channel = t["channel"].astype(str)
    episodes = audit.recovery_episodes()
    recovered = int((episodes["outcome"] == "recovered").sum())
    retries = audit.retries()
    most = retries["retries"].max() if len(retries) else 0
    return {
        "side": side.label,
        "run_id": side.run_id,
        "turns": len(t),
        "ok": int((channel == "ok").sum()),
        "soft": int((channel == "soft").sum()),
        "hard": int((channel == "hard").sum()),
        "soft_streaks": len(episodes),
        "recovered": recovered,
        "recovery_rate": recovered / len(episodes) if len(episodes) else None,
        "retried_calls": len(retries),
        "retries": int(retries["retries"].sum()) if len(retries) else 0,
        "max_retries": int(most),
        "ceiling": MAX_RECOVERY_ATTEMPTS,
        "exhausted": int((retries["outcome"] == "exhausted").sum()),
        "breaker_trips": int(audit.breakers()["trips"].sum()),
        "input_tokens": _or_none(t["input_tokens"].sum(min_count=1)),
        "output_tokens": _or_none(t["output_tokens"].sum(min_count=1)),
        "latency_ms": _or_none(t["latency_ms"].sum(min_count=1)),
        "ended": _ended(side),
        "with_events": side.events is not None,
    }


def _or_none(value: Any) -> Any:
    import pandas as pd

    return None if value is None or pd.isna(value) else value


def _ended(side: Side) -> str | None:
    """``ok``, the hard producer (``hard`` when none is named), or ``None`` while not finished."""
    events = side.events
    if events is not None:
        done = events[events["kind"] == "run_finished"]
        if not len(done):
            return None
        last = done.iloc[-1]
        if _text(last["channel"]) == "hard":
            return _text(last["producer"]) or "hard"
        return "ok"
    t = side.turns
    if not len(t):
        return None
    last_turn = t.iloc[-1]
    if _text(last_turn["channel"]) == "hard":
        return _text(last_turn["producer"]) or "hard"
    return "ok"
