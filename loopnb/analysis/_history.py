"""``recovery_attempts`` and ``breaker_history``: the recovery gauge and the breaker board as frames.

Both fold a run's events with the rule the live view folds them with (``RecoveryFold`` in
``retries``, ``BreakerFold`` in ``breakers``), so a row says what the view showed for its turn.
They take what the audit helpers take: a ``Recording``, a ``Recorder``, a list of events, an
``events`` frame, or a ``(turns, events)`` pair; ``breaker_history`` also a ``turns`` frame alone.
From frames the run's settings are not at hand: ``strategy`` is missing, and so are the loop
detector's thresholds; a tool's breaker is seen only if it ever moved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from loopnb.analysis._breakers import BreakerFold, BreakerTurn
from loopnb.analysis._retries import CALL_OUTCOMES, DECISIONS, RETRY_OUTCOMES, CallRecovery, RecoveryFold
from loopnb.engine import MAX_RECOVERY_ATTEMPTS
from loopnb.engine._events import Event

if TYPE_CHECKING:
    import pandas as pd

_BREAKER_STATES = ["closed", "open", "half_open"]


def recovery_attempts(data: Any) -> pd.DataFrame:
    """One row per tool call: what recovery made of it, against the ceiling.

    Columns: ``run_id``, ``turn``, ``call_id``, ``tool``; ``attempts`` dispatched (the original
    call and its retries), ``retries`` and the ``ceiling`` (5); the run's recovery ``strategy``
    (its repr; missing when none was configured, or from frames); the ``last_decision``; the
    original call's ``producer`` when it failed; ``loop_count``, the loop detector's count when it
    refused the call; and the ``outcome``: ``ok``, ``recovered`` (ok after retries), ``gave_up``,
    ``exhausted``, ``still_failing`` (the run ended during recovery) or ``no_recovery`` (it failed
    and no strategy ran on it).
    """
    import pandas as pd

    rows: list[tuple[dict[str, str], str | None, CallRecovery]] = []
    for keys, fold in _recovery_runs(data):
        rows += [(keys, fold.strategy, call) for call in fold.calls]
    names = list(rows[0][0]) if rows else ["run_id"]
    return pd.DataFrame(
        {
            **{k: pd.array([r[0][k] for r in rows], dtype="string") for k in names},
            "turn": pd.array([c.turn for _, _, c in rows], dtype="Int64"),
            "call_id": pd.array([c.call_id for _, _, c in rows], dtype="string"),
            "tool": pd.array([c.tool for _, _, c in rows], dtype="string"),
            "attempts": pd.array([c.retries + 1 for _, _, c in rows], dtype="Int64"),
            "retries": pd.array([c.retries for _, _, c in rows], dtype="Int64"),
            "ceiling": pd.array([MAX_RECOVERY_ATTEMPTS] * len(rows), dtype="Int64"),
            "strategy": pd.array([s for _, s, _ in rows], dtype="string"),
            "last_decision": pd.Categorical([c.decision for _, _, c in rows], categories=DECISIONS),
            "producer": pd.array([c.first if c.first else None for _, _, c in rows], dtype="string"),
            "loop_count": pd.array([c.loop.count if c.loop else None for _, _, c in rows], dtype="Int64"),
            "outcome": pd.Categorical([c.outcome for _, _, c in rows], categories=CALL_OUTCOMES),
        }
    )


def breaker_history(data: Any) -> pd.DataFrame:
    """One row per breaker and turn: the breaker as the turn ended.

    Columns: ``run_id``, ``turn``, ``breaker``, ``scope`` (``tool`` or ``model``), ``state``,
    ``failures`` counted so far, ``cooldown_left`` (seconds, while open) and ``passed``: the
    states it moved to during the turn, in order (e.g. ``half_open, closed``). From a turns frame
    alone only the states are known: ``failures`` and ``cooldown_left`` are missing, and
    ``passed`` is the change between consecutive turns.
    """
    import pandas as pd

    rows: list[tuple[dict[str, str], BreakerTurn]] = []
    for keys, turns in _breaker_runs(data):
        rows += [(keys, row) for row in turns]
    names = list(rows[0][0]) if rows else ["run_id"]
    return pd.DataFrame(
        {
            **{k: pd.array([r[0][k] for r in rows], dtype="string") for k in names},
            "turn": pd.array([r.turn for _, r in rows], dtype="Int64"),
            "breaker": pd.array([r.name for _, r in rows], dtype="string"),
            "scope": pd.Categorical([r.scope for _, r in rows], categories=["tool", "model"]),
            "state": pd.Categorical([r.state for _, r in rows], categories=_BREAKER_STATES),
            "failures": pd.array([None if r.failures < 0 else r.failures for _, r in rows], dtype="Int64"),
            "cooldown_left": pd.array([r.cooldown_left for _, r in rows], dtype="Float64"),
            "passed": pd.array([", ".join(r.passed) for _, r in rows], dtype="string"),
        }
    )


def retries_from_events(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``Audit.retries`` from an events frame: the calls recovery ran on, by ``RecoveryFold``."""
    import pandas as pd

    rows = [
        (run, call)
        for run, fold in _recovery_runs(events)
        for call in fold.calls
        if call.decision is not None
    ]
    out = pd.DataFrame(
        {
            **{k: pd.array([r[k] for r, _ in rows], dtype="string") for k in keys},
            "turn": pd.array([c.turn for _, c in rows], dtype="Int64"),
            "call_id": pd.array([c.call_id for _, c in rows], dtype="string"),
            "tool": pd.array([c.tool for _, c in rows], dtype="string"),
            "retries": pd.array([c.retries for _, c in rows], dtype="Int64"),
            "calls": pd.array([c.retries + 1 for _, c in rows], dtype="Int64"),
            "ceiling": pd.array([MAX_RECOVERY_ATTEMPTS] * len(rows), dtype="Int64"),
            "last_decision": pd.Categorical([c.decision for _, c in rows], categories=DECISIONS),
            "outcome": pd.Categorical([c.outcome for _, c in rows], categories=RETRY_OUTCOMES),
        }
    )
    return out.sort_values([*keys, "turn"], kind="stable").reset_index(drop=True)


# -- the folds, over event objects or frame rows ----------------------------------------------


def feed_recovery(fold: RecoveryFold, e: Event) -> None:
    """Fold one event object into ``fold`` (kinds it does not read are ignored)."""
    match e.kind:
        case "run_started":
            fold.start(e.settings)
        case "tool_dispatched":
            r = e.result
            fold.dispatched(e.turn, r.call_id, r.name, e.attempt, r.is_error, r.producer)
        case "recovery_decided":
            fold.decided(e.turn, e.call_id, e.attempt, e.max_attempts, e.decision)
        case "detector_fired":
            fold.detected(e.turn, e.detector, e.action, e.count)
        case "hard_error_raised":
            fold.hard(e.producer)
        case _:
            pass


def feed_breakers(fold: BreakerFold, e: Event) -> list[BreakerTurn]:
    """Fold one event object into ``fold``; a ``TurnFinished`` returns the turn's rows."""
    match e.kind:
        case "run_started":
            fold.start(e.models, tool_breakers(e.settings), e.breakers)
        case "tool_dispatched":
            fold.dispatched(e.result.name, e.attempt, e.result.is_error, e.result.producer)
        case "breaker_transitioned":
            fold.transitioned(e.target, e.scope, e.state, e.failures, e.cooldown, e.at)
        case "model_failed":
            fold.model_failed(e.model)
        case "model_replied":
            fold.model_replied(e.reply.model)
        case "hard_error_raised":
            fold.settle(drop=e.producer == "tool_recovery_exhausted")
        case "turn_finished":
            return fold.turn_finished(e.turn, e.breakers, e.at)
        case "recovery_decided":
            pass  # the call is not settled yet
        case _:
            fold.settle()
    return []


def tool_breakers(settings: Mapping[str, Any]) -> list[str]:
    """The tools with a breaker, as a run's ``settings`` record them (a damaged file's: none)."""
    value = settings.get("tool_breakers")
    return [n for n in value if isinstance(n, str)] if isinstance(value, list | tuple) else []


def _recovery_runs(data: Any) -> Iterator[tuple[dict[str, str], RecoveryFold]]:
    events, frame = _source(data, "recovery_attempts")
    if events is not None:
        for run_id, run in _by_run(events):
            fold = RecoveryFold()
            for e in run:
                feed_recovery(fold, e)
            yield {"run_id": run_id}, fold
        return
    assert frame is not None
    for keys, rows in _run_rows(frame, _RECOVERY_COLUMNS, kinds=_RECOVERY_KINDS):
        fold = RecoveryFold()
        for _, kind, turn, call_id, tool, attempt, is_error, producer, ceiling, decision, *detected in rows:
            if kind == "tool_dispatched":
                fold.dispatched(turn, call_id, tool, attempt, is_error, producer)
            elif kind == "recovery_decided":
                fold.decided(turn, call_id, attempt, ceiling, decision)
            elif kind == "detector_fired":
                fold.detected(turn, *detected)
            elif kind == "hard_error_raised":
                fold.hard(producer)
        yield keys, fold


def _breaker_runs(data: Any) -> Iterator[tuple[dict[str, str], list[BreakerTurn]]]:
    events, frame = _source(data, "breaker_history", turns_ok=True)
    if events is not None:
        for run_id, run in _by_run(events):
            fold, turns = BreakerFold(), []
            for e in run:
                turns += feed_breakers(fold, e)
            yield {"run_id": run_id}, turns
        return
    assert frame is not None
    if "kind" not in frame.columns:
        yield from _breakers_of_turns(frame)
        return
    for keys, rows in _frame_runs(frame):
        fold, turns = BreakerFold(), []
        # a frame does not hold the run's settings: its tools' breakers are those that moved
        tools = [r["target"] for r in rows if r["kind"] == "breaker_transitioned" and r["scope"] == "tool"]
        for r in rows:
            kind = r["kind"]
            if kind == "run_started":
                fold.start(str(r["model"] or "").split(", ") if r["model"] else (), dict.fromkeys(tools), ())
            elif kind == "tool_dispatched":
                fold.dispatched(r["tool"], r["attempt"], r["is_error"], r["producer"])
            elif kind == "breaker_transitioned":
                at = r["at"].timestamp()
                fold.transitioned(r["target"], r["scope"], r["state"], r["failures"], r["cooldown"], at)
            elif kind == "model_failed":
                fold.model_failed(r["model"])
            elif kind == "model_replied":
                fold.model_replied(r["model"])
            elif kind == "hard_error_raised":
                fold.settle(drop=r["producer"] == "tool_recovery_exhausted")
            elif kind == "turn_finished":
                turns += fold.turn_finished(r["turn"], None, r["at"].timestamp())
            elif kind != "recovery_decided":
                fold.settle()
        yield keys, turns


def _breakers_of_turns(turns: pd.DataFrame) -> Iterator[tuple[dict[str, str], list[BreakerTurn]]]:
    """From ``breaker_states`` alone: the breakers that were ever not closed, turn by turn."""
    for keys, rows in _frame_runs(turns, order="turn"):
        states = [json.loads(r["breaker_states"]) if r["breaker_states"] else {} for r in rows]
        names = list(dict.fromkeys(n for s in states for n in s))
        called = {n for r in rows if r["tools"] for n in str(r["tools"]).split(", ")}
        before: dict[str, str] = {}
        out = []
        for r, now in zip(rows, states, strict=True):
            for name in names:
                state = now.get(name, "closed")
                passed = (state,) if state != before.get(name, "closed") else ()
                scope = "tool" if name in called else "model"
                out.append(BreakerTurn(r["turn"], name, scope, state, -1, None, passed))  # type: ignore[arg-type]
            before = now
        yield keys, out


def _source(data: Any, who: str, turns_ok: bool = False) -> tuple[list[Event] | None, pd.DataFrame | None]:
    """The event objects of ``data``, or else its events frame (or turns frame, when ``turns_ok``)."""
    import pandas as pd

    if isinstance(data, tuple) and len(data) == 2:
        data = data[1]
    objects = getattr(data, "event_objects", None)
    if objects is not None:
        return list(objects() if callable(objects) else objects), None
    if isinstance(data, pd.DataFrame):
        if "kind" in data.columns or (turns_ok and "breaker_states" in data.columns):
            return None, data
        raise ValueError(
            f"{who}() needs events: give it a Recording, a Recorder, an events frame or a (turns, "
            f"events) pair; this frame has no 'kind' column (a turns frame?)"
        )
    if isinstance(data, Iterable) and not isinstance(data, str | bytes):
        return list(data), None
    raise TypeError(
        f"{who}() takes a Recording, a Recorder, a list of events, an events frame or a "
        f"(turns, events) pair; got {type(data).__name__}"
    )


def _by_run(events: list[Event]) -> Iterator[tuple[str, list[Event]]]:
    runs: dict[str, list[Event]] = {}
    for e in events:
        runs.setdefault(e.run_id, []).append(e)
    yield from runs.items()


_RECOVERY_KINDS = ("tool_dispatched", "recovery_decided", "detector_fired", "hard_error_raised")
_RECOVERY_COLUMNS = (
    "seq", "kind", "turn", "call_id", "tool", "attempt", "is_error", "producer", "max_attempts",
    "decision", "detector", "action", "count",
)  # fmt: skip
"""The events and columns ``RecoveryFold`` reads, in the order its loop unpacks them."""


def _frame_runs(
    df: pd.DataFrame, order: str = "seq"
) -> Iterator[tuple[dict[str, str], list[dict[str, Any]]]]:
    """Each run's rows of ``df`` (runs by ``source`` and ``run_id``) in ``order``, missing values None."""
    names = list(df.columns)
    for keys, rows in _run_rows(df, names, order):
        yield keys, [dict(zip(names, row, strict=True)) for row in rows]


def _run_rows(
    df: pd.DataFrame, names: Sequence[str], order: str = "seq", *, kinds: Sequence[str] | None = None
) -> Iterator[tuple[dict[str, str], list[tuple[Any, ...]]]]:
    """Each run's rows of ``df`` as tuples of the columns ``names`` (``None`` for a missing value
    or column), in ``order``; only the rows of ``kinds`` when given. Read a column at a time, so a
    long run's other columns are never boxed."""
    keys = ["source", "run_id"] if "source" in df.columns else ["run_id"]
    if kinds is not None:
        df = df[df["kind"].isin(kinds).to_numpy()]
    rows = list(zip(*(_objects(df[n]) if n in df.columns else [None] * len(df) for n in names), strict=True))
    ids = [_objects(df[k]) for k in keys]
    runs: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}  # in the order runs first appear
    if all(len(set(v)) == 1 for v in ids):  # a single run: no grouping row by row
        runs[tuple(str(v[0]) for v in ids)] = rows
    else:
        for key, row in zip(zip(*ids, strict=True), rows, strict=True):
            runs.setdefault(tuple(map(str, key)), []).append(row)
    by = itemgetter(list(names).index(order))
    for key, run in runs.items():
        run.sort(key=by)
        yield dict(zip(keys, key, strict=True)), run


def _objects(column: pd.Series) -> list[Any]:
    """A column's values as Python objects, ``None`` for a missing one."""
    values: list[Any] = column.astype(object).where(column.notna(), None).tolist()
    return values
