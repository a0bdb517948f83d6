"""The straightforward versions of what ``compare`` now does a column at a time.

Each is the code as it was first written (row by row, one object per row): the tests of
``test_compare_scale.py`` check that the optimised paths give exactly what these give.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import Any

import pandas as pd

from loopnb.analysis._align import WINDOW, _resync
from loopnb.analysis._compare import Comparison, Side
from loopnb.analysis._compare_frames import COMPARE_COLUMNS, HOWS, PER_SIDE
from loopnb.analysis._flowchart import FlowCount
from loopnb.analysis._retries import RecoveryFold
from loopnb.engine import turns_of
from loopnb.engine._errors import arguments_text

Pair = tuple[int | None, int | None]


def align(a: Sequence[Hashable], b: Sequence[Hashable], window: int = WINDOW) -> list[Pair]:
    """The alignment, one pair appended per row."""
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


def calls_text(calls: Sequence[Any]) -> str:
    return ", ".join(f"{c.name}({arguments_text(c.arguments, sort_keys=True)})" for c in calls)


def calls_of(side: Side) -> dict[int, str]:
    """Each turn's calls, every turn put together by ``turns_of``."""
    assert side.event_objects is not None
    return {t.turn: calls_text(t.calls) for t in turns_of(side.event_objects)}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _calls(side: Side, with_arguments: bool) -> list[str]:
    if with_arguments:
        calls = calls_of(side)
        return [calls.get(int(t), "") for t in side.turns["turn"].tolist()]
    return [_text(v) or "" for v in side.turns["tools"].astype(object).tolist()]


def _keys(side: Side, calls: list[str]) -> list[Hashable]:
    channels = side.turns["channel"].astype(object).tolist()
    return [object() if not c and ch == "hard" else c for c, ch in zip(calls, channels, strict=True)]


def aligned(c: Comparison) -> pd.DataFrame:
    """``Comparison.turns``, the whole frames reindexed and each row's ``how`` found in turn."""
    a, b = c.sides
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
    pairs: list[Pair], side_a: pd.DataFrame, side_b: pd.DataFrame, calls_a: Any, calls_b: Any
) -> list[Any]:
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


def divergence(frame: pd.DataFrame) -> tuple[Any, ...] | None:
    """The first differing row of an aligned frame: (turn, row, turn_a, turn_b, how, a, b)."""

    def _int(value: Any) -> int | None:
        return None if value is None or value is pd.NA else int(value)

    turns_a = frame["turn_a"].tolist()
    last_a = max((v for v in map(_int, turns_a) if v is not None), default=0)
    for r, how in enumerate(frame["how"].astype(object).tolist()):
        if not isinstance(how, str):
            continue
        ta, tb = _int(turns_a[r]), _int(frame["turn_b"].iat[r])
        later = next((_int(t) for t in turns_a[r:] if _int(t) is not None), None)
        turn = ta if ta is not None else later if later is not None else last_a + 1
        column = "call" if how in ("call", "ended") else how
        va, vb = (_text(frame[f"{column}_{s}"].iat[r]) for s in ("a", "b"))
        return (turn, r + 1, ta, tb, how, va, vb)
    return None


def flow_counts(turns: pd.DataFrame, ended: dict[Any, str | None]) -> list[int]:
    """``FlowCount`` fed every turn in order, run by run; ``ended``: each run's hard ending."""
    keys = ["source", "run_id"] if "source" in turns.columns else ["run_id"]
    order = turns.sort_values([*keys, "turn"], kind="stable")
    run_keys = (
        order[keys[0]].tolist()
        if len(keys) == 1
        else list(zip(*(order[k].tolist() for k in keys), strict=True))
    )
    ended = dict(ended)
    flow = FlowCount()
    run: object = object()
    for key, channel, producer in zip(
        run_keys, order["channel"].tolist(), order["producer"].tolist(), strict=True
    ):
        if key != run:
            if run in ended:
                flow.run_finished("hard", ended.pop(run))
            flow.new_run()
            run = key
        flow.turn(channel, _text(producer))
    if run in ended:
        flow.run_finished("hard", ended.pop(run))
    for producer in ended.values():
        flow.new_run()
        flow.run_finished("hard", producer)
    return list(flow.counts)


def retries_folds(events: pd.DataFrame) -> list[tuple[dict[str, str], RecoveryFold]]:
    """Each run's ``RecoveryFold`` fed from the frame's rows as dicts (``to_dict``)."""
    keys = ["source", "run_id"] if "source" in events.columns else ["run_id"]
    records = events.astype(object).where(events.notna(), None).to_dict("records")
    runs: dict[tuple[str, ...], list[dict[Any, Any]]] = {}
    for r in records:
        runs.setdefault(tuple(str(r[k]) for k in keys), []).append(r)
    out = []
    for key, rows in runs.items():
        rows.sort(key=lambda r: r["seq"])
        fold = RecoveryFold()
        for r in rows:
            kind = r["kind"]
            if kind == "tool_dispatched":
                fold.dispatched(
                    r["turn"], r["call_id"], r["tool"], r["attempt"], r["is_error"], r["producer"]
                )
            elif kind == "recovery_decided":
                fold.decided(r["turn"], r["call_id"], r["attempt"], r["max_attempts"], r["decision"])
            elif kind == "detector_fired":
                fold.detected(r["turn"], r["detector"], r["action"], r["count"])
            elif kind == "hard_error_raised":
                fold.hard(r["producer"])
        out.append((dict(zip(keys, key, strict=True)), fold))
    return out


def breaker_transitions(
    states: list[str | None], producers: list[str | None], tools: list[str | None]
) -> Any:
    """One run's breaker transitions and refusals, each turn's ``breaker_states`` parsed anew."""
    transitions: list[tuple[str, str]] = []
    refused: list[str] = []
    before: dict[str, str] = {}
    for raw, producer, names_ in zip(states, producers, tools, strict=True):
        now = json.loads(raw) if isinstance(raw, str) else {}
        for target, state in now.items():
            if state != before.get(target, "closed"):
                transitions.append((target, state))
        if producer == "breaker_open":
            names = str(names_).split(", ") if isinstance(names_, str) else ["?"]
            open_ = [n for n in names if "open" in (before.get(n), now.get(n))]
            refused.append((open_ or names)[0])
        before = now
    return transitions, refused
