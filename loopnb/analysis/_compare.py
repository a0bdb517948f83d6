"""``compare(a, b)``: two runs side by side, turn by turn, and where they first diverge.

Each side is one run of a ``Recording``, a ``Recorder``, a ``Sweep`` or a turns frame (read as
``flow_counts`` reads its data); ``runs=`` picks the run of a side holding several. The turns
are aligned by ``loopnb.analysis._align`` on the calls each turn made; the aligned frame, the
divergence and the totals are built in ``loopnb.analysis._compare_frames``. ``Comparison`` holds
them, shows them as a widget in a notebook (drawn by the notebook layer through
``loopnb._drawing`` on first display), writes them as a standalone page (``to_html``) and as
text (``loopnb compare``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb._drawing import drawer
from loopnb.engine._errors import arguments_text, text_of

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.engine import ToolCall
    from loopnb.engine._events import Event, ModelReplied

_SIDES = ("a", "b")


@dataclass(frozen=True, eq=False)
class Side:
    """One side of a comparison: its run's turns (sorted by turn) and events (``None`` when the
    side was a bare turns frame), and its events as objects when they were at hand."""

    label: str
    run_id: str
    turns: pd.DataFrame = field(repr=False)
    events: pd.DataFrame | None = field(repr=False)
    event_objects: list[Event] | None = field(repr=False)

    @property
    def calls(self) -> dict[int, str]:
        """Each turn's calls as text, ``name(arguments)``, by turn (empty without events)."""
        if self.event_objects is None:
            return {}
        return {turn: calls_text(calls) for turn, calls in calls_by_turn(self.event_objects).items()}


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first place the two runs differ.

    ``turn`` is ``Comparison.first_divergence``; ``row`` the aligned row (``None`` when every
    row agrees and only how the runs ended differs); ``turn_a`` and ``turn_b`` each side's turn
    there (``None`` on a side with no turn on that row); ``how`` one of ``HOWS``; ``a`` and
    ``b`` each side's value of what differs (the calls for ``call`` and ``ended``, else the
    column ``how`` names; ``None`` where a side has no turn or no value).
    """

    turn: int
    row: int | None
    turn_a: int | None
    turn_b: int | None
    how: str
    a: str | None
    b: str | None
    labels: tuple[str, str] = ("a", "b")

    def text(self) -> str:
        """The divergence in words: ``turn 2 (a's numbering): channel differs: a soft, b ok``."""
        la, lb = self.labels
        where = f"turn {self.turn} ({la}'s numbering)"
        if self.how == "ended":
            gone = lb if self.turn_b is None and self.row is not None else la
            if self.row is None:
                return f"{where}: the runs ended differently: {la} {self.a}, {lb} {self.b}"
            return f"{where}: {gone} had ended; {la if gone == lb else lb} went on"
        if self.turn_a is None or self.turn_b is None:
            made, lacks = (lb, la) if self.turn_a is None else (la, lb)
            calls = self.b if self.turn_a is None else self.a
            return f"{where}: {made} made a turn {lacks} did not: {_said(calls)}"
        return f"{where}: {self.how} differs: {la} {_said(self.a)}, {lb} {_said(self.b)}"


def _said(value: str | None) -> str:
    return "(none)" if value is None else value


_SORTED = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=text_of)
"""``arguments_text(..., sort_keys=True)``'s encoder, made once (``json.dumps`` makes one a call)."""


def calls_text(calls: tuple[ToolCall, ...]) -> str:
    """A turn's calls as compared: ``read_file({"path": "x"}), ls({})`` (keys sorted); empty
    when it made none."""
    if len(calls) == 1:
        return _call_text(calls[0])
    return ", ".join(map(_call_text, calls))


def _call_text(call: ToolCall) -> str:
    arguments = call.arguments
    if type(arguments) is dict:
        try:
            return f"{call.name}({_SORTED.encode(arguments)})"
        except KeyboardInterrupt:
            raise
        except BaseException:  # arguments_text says what JSON cannot hold
            pass
    return f"{call.name}({arguments_text(arguments, sort_keys=True)})"


def calls_by_turn(events: Iterable[Event]) -> dict[int, tuple[ToolCall, ...]]:
    """The calls of each finished turn, by turn: what ``turns_of(events)``' turns' ``calls`` are
    (the last reply inside the turn; none when no model replied), without putting every turn
    together. The assembler's rules are followed event for event: a turn opens at its
    ``TurnStarted`` (or at a ``HardErrorRaised`` or ``TurnFinished`` outside the open turn) and
    keeps a reply only of its own number; a later turn of the same number replaces an earlier."""
    open_turn: dict[str, int] = {}  # each run's open turn
    replied: dict[str, ModelReplied] = {}  # its reply so far
    out: dict[int, tuple[ToolCall, ...]] = {}
    for e in events:
        match e.kind:
            case "turn_started":
                open_turn[e.run_id] = e.turn
                replied.pop(e.run_id, None)
            case "model_replied":
                if open_turn.get(e.run_id) == e.turn:
                    replied[e.run_id] = e
            case "hard_error_raised":
                if open_turn.get(e.run_id) != e.turn:
                    open_turn[e.run_id] = e.turn
                    replied.pop(e.run_id, None)
            case "turn_finished":
                reply = replied.pop(e.run_id, None)
                ours = open_turn.pop(e.run_id, None) == e.turn  # else it finishes a turn of its own
                out[e.turn] = reply.reply.tool_calls if reply is not None and ours else ()
    return out


def compare(
    a: Any,
    b: Any,
    *,
    labels: tuple[str, str] = ("a", "b"),
    runs: tuple[str | None, str | None] = (None, None),
) -> Comparison:
    """Two runs side by side: their turns aligned, where they first diverge, and their totals.

    Args:
        a: one run: a ``Recording``, a ``Recorder``, a ``Sweep`` or a turns frame (as
            ``flow_counts`` takes; a frame filtered to one run, e.g.
            ``sweep.turns[sweep.turns.run_id == "base-0"]``, is one run).
        b: the other run, in any of those forms.
        labels: what to call each side in the totals, the view, the report and the terminal.
        runs: the run id to take from each side, ``None`` when the side holds a single run
            (``compare(rec, rec, runs=("r1", "r2"))`` compares two runs of one recording; a
            sweep's run ids are ``CONFIG-SEED``).

    Per-call detail (the calls' arguments, the retries per call, breaker trips and how a run
    ended) comes from the events: a side given as a bare turns frame is compared by tool names
    and counted at turn granularity (``Comparison.totals``' ``with_events`` says which).

    Raises:
        TypeError: a side is none of those.
        ValueError: a side holds no run, or several and ``runs`` names none of them (the error
            lists them), or ``labels`` are not two different names.
    """
    from loopnb.analysis._compare_frames import aligned, divergence_of, totals_of

    if (
        not isinstance(labels, tuple)
        or len(labels) != 2
        or not all(isinstance(x, str) and x for x in labels)
        or labels[0] == labels[1]
    ):
        raise ValueError(f"compare(): labels must be two different non-empty names; got {labels!r}")
    if not isinstance(runs, tuple) or len(runs) != 2:
        raise ValueError(
            f"compare(): runs must be a pair (run of a, run of b), None for either; got {runs!r}"
        )
    sides = (
        _side(a, runs[0], labels[0], _SIDES[0]),
        _side(b, runs[1], labels[1], _SIDES[1]),
    )
    frame = aligned(*sides)
    totals = totals_of(sides)
    return Comparison(sides, frame, totals, divergence_of(frame, totals, labels))


def _side(data: Any, run: str | None, label: str, which: str) -> Side:
    import pandas as pd

    from loopnb.analysis._checks import no_repeated_turns
    from loopnb.analysis._flows import frames_of
    from loopnb.record import EVENTS, TURNS
    from loopnb.record._frames import conform

    turns, events = frames_of(data, f"compare() (side {which})")
    objects = None if isinstance(data, pd.DataFrame) else getattr(data, "event_objects", None)
    ids = _run_ids(turns["run_id"])
    if events is not None and "run_id" in events.columns:
        ids = list(dict.fromkeys([*ids, *_run_ids(events["run_id"])]))
    if run is None:
        if not ids:
            raise ValueError(f"compare(): side {which} ({label}) holds no run: no turn and no event")
        if len(ids) > 1:
            shown = ", ".join(map(repr, ids[:12])) + (", ..." if len(ids) > 12 else "")
            pick = ("'...'", "None") if which == "a" else ("None", "'...'")
            raise ValueError(
                f"compare(): side {which} ({label}) holds {len(ids)} runs ({shown}); pick one with "
                f"runs=({', '.join(pick)}), or pass one run's turns (turns[turns.run_id == ...])"
            )
        run = ids[0]
    elif run not in ids:
        shown = ", ".join(map(repr, ids[:12])) + (", ..." if len(ids) > 12 else "")
        raise ValueError(f"compare(): side {which} ({label}) has no run {run!r}; its runs are {shown}")
    mine = _of_run(turns, run)
    if "source" in mine.columns and mine["source"].nunique() > 1:
        raise ValueError(
            f"compare(): side {which} ({label}): run {run!r} is in several recordings (load_many's "
            f"source {', '.join(map(str, mine['source'].unique()))}); pass one recording's turns"
        )
    missing = [c for c in TURNS.names if c not in mine.columns and c != "source_status"]
    if missing:
        hint = " (this looks like an events frame: pass the turns frame)" if "kind" in mine.columns else ""
        raise ValueError(
            f"compare(): side {which} ({label}): the turns frame is missing columns "
            f"{', '.join(missing)}; expected a turns frame (Recorder.turns, load(path).turns){hint}"
        )
    t = conform(mine, TURNS)
    no_repeated_turns(t, ["run_id"])
    if not t["turn"].is_monotonic_increasing:  # a run's turns come in order: sorted only when not
        t = t.sort_values("turn", kind="stable").reset_index(drop=True)
    e = None if events is None else conform(_of_run(events, run), EVENTS)
    if objects is not None and len(ids) > 1:
        objects = [o for o in objects if o.run_id == run]
    return Side(label, run, t, e, objects)


def _run_ids(column: pd.Series) -> list[str]:
    """The run ids of a frame's ``run_id`` column, in the order they first appear."""
    return list(dict.fromkeys(str(r) for r in column.dropna().unique()))


def _of_run(frame: pd.DataFrame, run: str) -> pd.DataFrame:
    """The rows of ``frame`` of run ``run``: ``frame`` itself when it holds that run alone."""
    mine = frame["run_id"].astype("string").eq(run).fillna(False).to_numpy()
    return frame if mine.all() else frame[mine]


class Comparison:
    """Two runs compared: ``turns`` (aligned), ``first_divergence`` and ``divergence``, ``totals``.

    Made by ``loopnb.compare`` (and ``loopnb.what_if``). In a notebook it shows as a widget: both
    timelines one above the other with the divergence marked, the two inspectors side by side for
    the selected row, and the two decision flows' counts (``flows()``) with their differences.
    """

    def __init__(
        self,
        sides: tuple[Side, Side],
        turns: pd.DataFrame,
        totals: pd.DataFrame,
        divergence: Divergence | None,
    ) -> None:
        self.sides = sides
        self._turns = turns
        self._totals = totals
        self.divergence = divergence
        """Where and how the runs first differ, or ``None`` when they agree."""
        self._flows: pd.DataFrame | None = None

    @property
    def labels(self) -> tuple[str, str]:
        return self.sides[0].label, self.sides[1].label

    @property
    def turns(self) -> pd.DataFrame:
        """The two runs' turns aligned, one row each (the columns of ``COMPARE_COLUMNS``).

        ``row`` counts the aligned rows from 1; ``turn_a`` and ``turn_b`` are each side's turn
        (``<NA>`` on a side with no turn on the row: a gap); then, per side (suffix ``_a`` or
        ``_b``, whatever the labels), the turns columns ``channel``, ``producer``, ``tools``,
        ``error_text``, ``reply_text``, ``recovery_attempts``, ``latency_ms``, ``input_tokens``,
        ``output_tokens`` and ``call`` (the calls as compared: ``name(arguments)`` when both
        sides have events, else the tool names). ``differs`` is True on a row where the runs
        differ and ``how`` says how (the first of ``call``, ``ended``, ``channel``,
        ``producer``, ``error_text``; ``<NA>`` where they agree): a gap is ``call`` when the
        side without a turn goes on later, ``ended`` when its run had ended.
        """
        return self._turns.copy(deep=False)

    @property
    def first_divergence(self) -> int | None:
        """The ``turn`` (counted from 1, in side a's numbering) of the first row where the runs
        differ in call, channel, producer or error text, or where one has ended; on a row where a
        has no turn (b made one more), the number a's next turn has. ``None`` when they agree."""
        return None if self.divergence is None else self.divergence.turn

    @property
    def totals(self) -> pd.DataFrame:
        """One row per side: ``side`` (its label), ``run_id``, ``turns``, ``ok``, ``soft``,
        ``hard``, ``soft_streaks`` and how many the model ``recovered`` from on its own
        (``recovery_rate``, 0 to 1), ``retried_calls``, ``retries`` (in all), ``max_retries`` (on
        one call) against the ``ceiling`` (5), ``exhausted`` (calls past it), ``breaker_trips``,
        ``input_tokens``, ``output_tokens``, ``latency_ms`` (the turns' sum), ``ended`` (``ok``,
        the hard producer, or ``<NA>`` while a recorded run has not finished) and
        ``with_events`` (False: a bare turns frame, counted at turn granularity as ``audit``
        does, and ``ended`` read from its last turn). The figures are ``loopnb.audit``'s."""
        return self._totals.copy(deep=False)

    def flows(self) -> pd.DataFrame:
        """The two decision flows' counts: ``flow_counts`` of each side, one row per edge, with
        ``count_a``, ``count_b`` and ``difference`` (b minus a)."""

        from loopnb.analysis._flows import flow_counts

        if self._flows is None:  # counted once: the page, the picture and the widget each show them
            fa, fb = (flow_counts(s) for s in self.sides)
            out = fa.drop(columns=["count"])
            out["count_a"] = fa["count"].to_numpy()
            out["count_b"] = fb["count"].to_numpy()
            out["difference"] = (out["count_b"] - out["count_a"]).astype("int64")
            self._flows = out
        return self._flows.copy(deep=False)

    def around(self, context: int = 3) -> pd.DataFrame:
        """The aligned rows around the divergence, ``context`` either side (the first rows when
        the runs agree)."""
        turns = self._turns
        row = self.divergence.row if self.divergence is not None else None
        if row is None:
            return turns.head(2 * context + 1).copy(deep=False)
        lo = max(row - 1 - context, 0)
        return turns.iloc[lo : row + context].copy(deep=False)

    def to_html(self, path: str | Path, *, title: str | None = None) -> Path:
        """Write the comparison as a standalone, offline HTML page (no script; every text from a
        run redacted by the default redactor, then escaped). Written whole or not at all; a
        recording at ``path`` is never replaced. Returns the path."""
        written: Path = drawer().comparison_page(self, path, title)
        return written

    def view(self) -> Any:
        """The notebook view (a ``CompareView``: ``.widget`` is its ipywidgets box)."""
        return drawer().comparison_view(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = self.view().mimebundle(**kwargs)
        return bundle

    def _repr_html_(self) -> str:
        html: str = drawer().comparison_html(self)
        return html

    def __repr__(self) -> str:
        la, lb = self.labels
        ra, rb = (s.run_id for s in self.sides)
        at = (
            "agree"
            if self.divergence is None
            else f"first diverge at turn {self.divergence.turn} ({self.divergence.how})"
        )
        return f"Comparison({la}={ra!r}, {lb}={rb!r}: {len(self._turns)} aligned rows, {at})"
