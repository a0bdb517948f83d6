"""The frames of a ``Comparison``: the aligned turns, the first divergence and the totals.

``aligned`` pairs the two sides' turns (``loopnb.analysis._align``) and lays each side's columns
beside the other's; ``divergence_of`` finds the first row that differs; ``totals_of`` counts each
side with ``loopnb.audit`` (its recovery streaks, retries and breaker trips), so a comparison's
figures are the audit's.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from loopnb.analysis._align import align
from loopnb.engine import MAX_RECOVERY_ATTEMPTS

if TYPE_CHECKING:
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
        return [calls.get(int(t), "") for t in side.turns["turn"].tolist()]
    return [_text(v) or "" for v in side.turns["tools"].astype(object).tolist()]


def _keys(side: Side, calls: list[str]) -> list[Hashable]:
    """What the alignment matches: each turn's calls; a hard turn that made none (the run ended
    before the model asked for anything) matches nothing, so a final reply never pairs with it."""
    channels = side.turns["channel"].astype(object).tolist()
    return [object() if not c and ch == "hard" else c for c, ch in zip(calls, channels, strict=True)]


def aligned(a: Side, b: Side) -> pd.DataFrame:
    """The aligned frame of sides ``a`` and ``b`` (``Comparison.turns``)."""
    import pandas as pd

    with_arguments = a.event_objects is not None and b.event_objects is not None
    keys_a, keys_b = _calls(a, with_arguments), _calls(b, with_arguments)
    pairs = align(_keys(a, keys_a), _keys(b, keys_b))
    at_a = [-1 if i is None else i for i, _ in pairs]
    at_b = [-1 if j is None else j for _, j in pairs]
    side_a = a.turns.reindex(at_a).reset_index(drop=True)
    side_b = b.turns.reindex(at_b).reset_index(drop=True)
    calls_a = pd.array([keys_a[i] or None if i >= 0 else None for i in at_a], dtype="string")
    calls_b = pd.array([keys_b[j] or None if j >= 0 else None for j in at_b], dtype="string")
    hows = _hows(pairs, side_a, side_b, calls_a, calls_b)
    data: dict[str, Any] = {
        "row": pd.array(range(1, len(pairs) + 1), dtype="Int64"),
        "turn_a": pd.array(side_a["turn"].array, dtype="Int64"),
        "turn_b": pd.array(side_b["turn"].array, dtype="Int64"),
        "differs": pd.array([h is not None for h in hows], dtype="bool"),
        "how": pd.Categorical(hows, categories=pd.Index(list(HOWS), dtype="string")),
    }
    for column in PER_SIDE:
        for suffix, frame, calls in (("a", side_a, calls_a), ("b", side_b, calls_b)):
            data[f"{column}_{suffix}"] = calls if column == "call" else frame[column].array
    return pd.DataFrame(data, columns=list(COMPARE_COLUMNS))


def _hows(
    pairs: list[tuple[int | None, int | None]],
    side_a: pd.DataFrame,
    side_b: pd.DataFrame,
    calls_a: Any,
    calls_b: Any,
) -> list[str | None]:
    last_a = max((r for r, (i, _) in enumerate(pairs) if i is not None), default=-1)
    last_b = max((r for r, (_, j) in enumerate(pairs) if j is not None), default=-1)
    columns = {
        name: (side_a[name].astype(object).tolist(), side_b[name].astype(object).tolist())
        for name in ("channel", "producer", "error_text")
    }
    out: list[str | None] = []
    for r, (i, j) in enumerate(pairs):
        if i is None:
            out.append("ended" if r > last_a else "call")
        elif j is None:
            out.append("ended" if r > last_b else "call")
        elif _text(calls_a[r]) != _text(calls_b[r]):
            out.append("call")
        else:
            out.append(next((n for n, (va, vb) in columns.items() if _text(va[r]) != _text(vb[r])), None))
    return out


def divergence_of(frame: pd.DataFrame, totals: pd.DataFrame, labels: tuple[str, str]) -> Divergence | None:
    """The first row of ``frame`` that differs, or how the runs ended when every row agrees."""
    from loopnb.analysis._compare import Divergence

    turns_a = frame["turn_a"].tolist()
    last_a = max((v for v in map(_int, turns_a) if v is not None), default=0)
    hows = frame["how"].astype(object).tolist()
    for r, how in enumerate(hows):
        if not isinstance(how, str):
            continue
        ta, tb = _int(turns_a[r]), _int(frame["turn_b"].iat[r])
        later = next((_int(t) for t in turns_a[r:] if _int(t) is not None), None)
        turn = ta if ta is not None else later if later is not None else last_a + 1
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
