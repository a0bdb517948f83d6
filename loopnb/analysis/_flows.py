"""``flow_counts``: the decision flow's edge counts as a frame, one row per edge of the chart.

The counts are the live view's own: each turn lights the path the view's counting rule gives it
(``path_of``, as ``FlowCount`` of ``loopnb.analysis._flowchart`` adds them in turn order), so the
frame of a recording equals the labels its replay, its HTML report and its live run showed. A
turn's path depends only on its channel, its producer and whether the turn before it was soft:
the turns are counted by those, a frame at a time, not turn by turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import pandas as pd

_NEEDED = ("run_id", "turn", "channel", "producer")


def flow_counts(data: Any, *, split_injected: bool = False) -> pd.DataFrame:
    """How many times each arrow of the spec's flowchart was taken, over every run of ``data``.

    One row per edge of the chart, in the chart's order, with columns ``edge`` (its id),
    ``source`` and ``target`` (node ids: ``failed``, ``adapt``, ``soft``, ``model``, ``next``,
    ``watch``, ``ok``, ``hard2``, ``hard``, ``finalize``), ``label`` (the spec's text on the
    arrow, empty when it has none) and ``count``. Per run, summed over runs:

    - each soft turn counts once on failed -> adapt -> soft -> model -> next -> watch: the model
      reads the failure, and its next turn is where the safety systems watch the pattern;
    - next -> ok ("model recovered on its own") counts the soft streaks (consecutive soft turns)
      followed directly by an ok turn; an ok turn after an ok turn counts nothing;
    - a run that ended hard counts once on watch -> hard2 -> finalize when a safety system
      stopped it (``loop_detected``, ``user_input_required``, ``tool_recovery_exhausted``), and
      once on failed -> adapt -> hard -> finalize when there was nothing to adapt to
      (``cancelled``, a Stop pressed included, ``context_exceeded``, ``fallback_exhausted``);
    - the turn that hit the recovery ceiling also counts on the soft branch, as a soft turn:
      its failed attempts were soft tool errors that recovery retried, and recovery is one of
      the watchers;
    - so failed -> adapt = adapt -> soft + adapt -> hard, and a run of ok turns counts nothing.

    Args:
        data: a ``Recording``, a ``Recorder``, or a turns frame of one or many runs (runs are
            told apart by ``run_id``, and by ``source`` too when ``load_many`` added it). With a
            turns frame alone, a run that ended hard before any turn finished is not seen.
        split_injected: add the columns ``injected`` (what the turns a fault was injected into
            counted: their ``injected`` column is set, ``loopnb.inject``) and ``natural`` (the
            rest); the two add up to ``count``.

    Raises:
        TypeError: ``data`` is none of those.
        ValueError: the turns frame lacks a column the count needs, or names an unknown channel.
    """
    import pandas as pd

    from loopnb.analysis._flowchart import EDGES, path_of

    turns, events = frames_of(data)
    keys = ["source", "run_id"] if "source" in turns.columns else ["run_id"]
    counts, injected = _turn_counts(turns.sort_values([*keys, "turn"], kind="stable"), keys)
    hard_runs = set(_run_keys(turns[turns["channel"].eq("hard").fillna(False).to_numpy()], keys))
    for run, producer in _hard_endings(events, keys).items():
        if run not in hard_runs:  # a run that ended hard on no turn of its own: its ending lights the path
            _add(counts, path_of("hard", producer))
    frame = pd.DataFrame(
        {
            "edge": [e.id for e in EDGES],
            "source": [e.source for e in EDGES],
            "target": [e.target for e in EDGES],
            "label": [e.label for e in EDGES],
            "count": pd.Series(counts, dtype="int64"),
        }
    )
    if split_injected:
        frame["injected"] = pd.Series(injected, dtype="int64")
        frame["natural"] = frame["count"] - frame["injected"]
    return frame


def _turn_counts(order: pd.DataFrame, keys: list[str]) -> tuple[list[int], list[int]]:
    """The edge counts of the turns of ``order`` (sorted by run, then turn), by ``FlowCount``'s
    rule: a turn's path depends only on its channel, its producer and whether the turn before it
    in its run was soft, so each such triple is counted once and its path added that many times;
    and the same counts of its turns a fault was injected into."""
    import numpy as np
    import pandas as pd

    from loopnb.analysis._flowchart import EDGES, path_of

    channel = order["channel"].astype(object).to_numpy()
    bad = [c for c in channel.tolist() if not isinstance(c, str) or c not in _CHANNELS]
    if bad:
        path_of(_channel(bad[0]), None)  # raises, naming the first turn's channel that is none of them
    new_run = np.zeros(len(order), dtype=bool)
    new_run[:1] = True
    for k in keys:
        values = _objects(order[k])
        new_run[1:] |= values[1:] != values[:-1]
    after_soft = np.zeros(len(order), dtype=bool)
    after_soft[1:] = (channel[:-1] == "soft") & ~new_run[1:]
    marked = (
        order["injected"].notna().to_numpy() if "injected" in order.columns else np.zeros(len(order), bool)
    )
    triples = pd.DataFrame({"c": channel, "p": _objects(order["producer"]), "s": after_soft, "i": marked})
    counts, injected = [0] * len(EDGES), [0] * len(EDGES)
    for key, n in triples.value_counts(dropna=False, sort=False).items():
        c, p, soft, i = cast("tuple[str, Any, bool, bool]", key)  # a frame's counts are keyed by its rows
        path = path_of(c, _producer(p), after_soft=bool(soft))
        _add(counts, path, int(n))
        if i:
            _add(injected, path, int(n))
    return counts, injected


def _objects(column: pd.Series) -> Any:
    """A column's values as an object array, ``None`` for a missing one."""
    import numpy as np

    return np.asarray(column.astype(object).where(column.notna(), None).to_numpy())


_CHANNELS = ("ok", "soft", "hard")


def _add(counts: list[int], path: tuple[str, ...], times: int = 1) -> None:
    from loopnb.analysis._flowchart import EDGE_INDEX

    for edge_id in path:
        counts[EDGE_INDEX[edge_id]] += times


def frames_of(data: Any, caller: str = "flow_counts()") -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``data``'s turns frame and events frame (``None`` for a bare turns frame), checked; errors
    name ``caller``."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        turns, events = data, None
    elif hasattr(data, "turns") and hasattr(data, "events"):
        turns, events = data.turns, data.events
    else:
        raise TypeError(
            f"{caller} takes a Recording, a Recorder or a turns DataFrame; got {type(data).__name__}"
        )
    missing = [c for c in _NEEDED if c not in turns.columns]
    if missing:
        hint = " (this looks like an events frame: pass the turns frame)" if "kind" in turns.columns else ""
        raise ValueError(
            f"{caller}: the turns frame is missing columns {', '.join(missing)}; expected a turns "
            f"frame (Recorder.turns, load(path).turns or load_many(paths)){hint}"
        )
    return turns, events


def _run_keys(frame: pd.DataFrame, keys: list[str]) -> list[Any]:
    """Each row's run: its ``run_id``, or its ``(source, run_id)``."""
    if len(keys) == 1:
        return frame[keys[0]].tolist()
    return list(zip(*(frame[k].tolist() for k in keys), strict=True))


def _hard_endings(events: pd.DataFrame | None, keys: list[str]) -> dict[Any, str | None]:
    """The producer of each run's hard ending, by run, from the events' ``run_finished`` rows."""
    if events is None or len(events) == 0 or any(k not in events.columns for k in keys):
        return {}
    done = events[(events["kind"] == "run_finished") & (events["channel"] == "hard")]
    return dict(zip(_run_keys(done, keys), map(_producer, done["producer"].tolist()), strict=True))


def _producer(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _channel(value: object) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"flow_counts(): a turn's channel is {value!r}; expected ok, soft or hard")
