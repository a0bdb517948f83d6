"""Audit helpers: the summaries a user would otherwise write by hand, as DataFrames.

``audit(x)`` accepts a ``Recording``, a ``Recorder``, a ``turns`` frame (e.g. from
``load_many``), or a ``(turns, events)`` pair, and returns an ``Audit``::

    a = loopnb.audit(loopnb.load("runs/today.jsonl"))
    a.summary()               # one table of headline figures
    a.by_producer()           # soft vs hard counts per producer
    a.recovery()              # how often the model recovered on its own, within how many turns
    a.retries()               # retries per call against the ceiling of 5
    a.breakers(); a.loops(); a.models()
    a.usage()                 # tokens, latency and cost per run (by="model", by="turn")
    a.figure("retries")       # the plotly counterpart of any of them

With events, per-call and per-transition detail comes from them; from turns alone, each table is
computed at turn granularity (documented per method).

This module holds ``audit()``, the ``Audit`` class and the tables it builds itself; the input
checks live in ``checks``, the recovery streaks in ``episodes``, and the retries and breakers
tables (from events or from turns alone) in ``retries`` and ``breakers``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, get_args

from loopnb.analysis._breakers import breaker_table, breakers_from_events, breakers_from_turns
from loopnb.analysis._checks import checked, no_repeated_turns, of_turns
from loopnb.analysis._episodes import PRODUCERS, recovery_episodes, recovery_per_producer
from loopnb.analysis._history import retries_from_events
from loopnb.analysis._recovery_rate import RateBy, false_success, recovery_rate
from loopnb.analysis._retries import retries_from_turns
from loopnb.analysis._usage import By, on_wall, simulated_runs, usage_frame
from loopnb.engine import MAX_RECOVERY_ATTEMPTS
from loopnb.engine._errors import SOFT_PRODUCERS
from loopnb.engine._events import DetectorAction, DetectorName
from loopnb.engine._texts import CONVERGED, MAX_TURNS_REACHED
from loopnb.record import EVENTS, TURNS

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

_CHANNELS = tuple(["ok", "soft", "hard"])
# Turn producers that show a safety detector acting, when no events are at hand.
_DETECTOR_OF = {
    "loop_refusal": ("loop", "refuse"),
    "loop_detected": ("loop", "stop"),
    "convergence_warning": ("convergence", "warn"),
    "user_input_required": ("convergence", "ask_user"),
}


# LoopDetected's messages, for telling its three raisers apart when no events are at hand.
_STOPPED_BY = ((MAX_TURNS_REACHED, "max_turns"), (CONVERGED, "convergence"))


def _detector_of(producer: str, error_text: Any) -> tuple[str, str]:
    """The detector and action a turn's producer shows (``loop_detected`` by its message)."""
    if producer == "loop_detected" and isinstance(error_text, str):
        for prefix, detector in _STOPPED_BY:
            if error_text.startswith(prefix):
                return detector, "stop"
    return _DETECTOR_OF[producer]


def audit(source: Any, events: pd.DataFrame | None = None) -> Audit:
    """An ``Audit`` of a Recording, a Recorder, a turns frame, or a ``(turns, events)`` pair."""
    import pandas as pd

    if isinstance(source, tuple):
        source, events = source
    if isinstance(source, pd.DataFrame):
        return Audit(source, events)
    if hasattr(source, "turns") and hasattr(source, "events"):
        simulated = simulated_runs(getattr(source, "event_objects", ()))
        return Audit(source.turns, source.events if events is None else events, simulated=simulated)
    raise TypeError(
        "audit() takes a Recording, a Recorder, a turns DataFrame or a (turns, events) pair; "
        f"got {type(source).__name__}"
    )


def _keys(df: pd.DataFrame) -> list[str]:
    return ["source", "run_id"] if "source" in df.columns else ["run_id"]


class Audit:
    """Summaries of recorded turns (and events, when given). Every method returns a new frame.

    The audit covers the turns it is given: a filtered ``turns`` frame audits those turns, and
    only the events of those turns (and of their runs, for events outside any turn) are used.
    Fractions (``share``, ``rate``) are between 0 and 1; times are in milliseconds.

    ``simulated``: the runs that ran on a simulated clock (a ``FakeClock``), by ``run_id`` (or
    ``(source, run_id)`` when the frames have a ``source`` column); their simulated time is left
    out of every latency. ``audit()`` finds them in a Recording's or a Recorder's events; a frame
    alone does not say, and its runs count as run on the wall clock.
    """

    def __init__(
        self,
        turns: pd.DataFrame,
        events: pd.DataFrame | None = None,
        *,
        simulated: Iterable[str | tuple[str, ...]] = (),
    ) -> None:
        self.turns = checked(turns, TURNS, "turns")
        self._keys = _keys(self.turns)
        no_repeated_turns(self.turns, self._keys)
        self.simulated = frozenset((run,) if isinstance(run, str) else tuple(run) for run in simulated)
        self.events = None
        if events is not None:
            conformed = checked(events, EVENTS, "events")
            if ("source" in conformed.columns) != ("source" in self.turns.columns):
                has, lacks = ("turns", "events") if "source" in self.turns.columns else ("events", "turns")
                raise ValueError(
                    f"audit(): the {has} frame has a 'source' column (load_many adds it) and the "
                    f"{lacks} frame has none, so their runs cannot be matched; load both with "
                    "load_many(paths) and load_many(paths, table='events')"
                )
            self.events = of_turns(conformed, self.turns, self._keys)

    # -- tables ---------------------------------------------------------------------------------

    def by_producer(self) -> pd.DataFrame:
        """Per producer: its ``channel``; ``turns``: the turns it tagged (a turn is tagged by
        its first failing call's producer, so a turn counts once however many calls failed);
        ``runs``: the runs it tagged a turn in; ``share``: ``turns`` as a fraction (0 to 1) of all
        turns, ok ones included; and (with events) ``errors``: every error of it the model read
        or the run ended with, the calls a turn's tag hides included."""
        import pandas as pd

        t = self.turns[self.turns["producer"].notna()]
        pairs = pd.DataFrame({"producer": t["producer"].astype(str).to_numpy()})
        pairs[self._keys] = t[self._keys].to_numpy()
        turns = pairs["producer"].value_counts()
        runs = pairs.drop_duplicates()["producer"].value_counts()
        out = pd.DataFrame({"turns": turns, "runs": runs.reindex(turns.index)})
        out = out.reindex([p for p in PRODUCERS if p in out.index])
        errors = None
        if self.events is not None:
            e = self.events
            kinds = e["kind"].isin(["soft_error_returned", "hard_error_raised"])
            errors = e.loc[kinds, "producer"].astype(str).value_counts()
        frame = pd.DataFrame(
            {
                "producer": pd.Categorical(out.index, categories=PRODUCERS),
                "channel": pd.Categorical(
                    ["soft" if p in SOFT_PRODUCERS else "hard" for p in out.index], categories=_CHANNELS
                ),
                "turns": pd.array(out["turns"].to_numpy(), dtype="Int64"),
                "runs": pd.array(out["runs"].to_numpy(), dtype="Int64"),
                "share": pd.array(out["turns"].to_numpy() / max(len(self.turns), 1), dtype="Float64"),
                "errors": pd.array(
                    [None if errors is None else int(errors.get(p, 0)) for p in out.index],
                    dtype="Int64",
                ),
            }
        )
        return frame.reset_index(drop=True)

    def recovery_episodes(self) -> pd.DataFrame:
        """Every streak of consecutive soft turns in a run, and how it ended.

        ``outcome``: ``recovered`` (the next turn was ok: the model recovered on its own),
        ``ended_hard`` (the run ended on the next turn) or ``unfinished`` (the next turn is not in
        the frame: the run was still going, or the frame was filtered; a gap in the turn numbers
        ends a streak). ``soft_turns``: the streak's length. ``turns_to_recover``: turns from the
        first error to the ok turn (1 = the very next one), i.e. ``soft_turns`` when recovered.
        """
        return recovery_episodes(self.turns, self._keys)

    def recovery(self) -> pd.DataFrame:
        """Self-recovery per producer of the first error of each soft streak: ``episodes``
        (streaks), how many ``recovered``, ``rate`` (recovered / episodes, a fraction from 0 to
        1), ``median_turns`` and ``max_turns`` to recover (of the recovered ones), how many
        ``ended_hard`` and how many are ``unfinished`` (the three add up to ``episodes``)."""
        return recovery_per_producer(self.recovery_episodes())

    def retries(self) -> pd.DataFrame:
        """Every call that went to recovery: its ``retries`` against the ``ceiling`` (5),
        ``calls`` made in all (``retries`` + 1), the ``last_decision`` and the ``outcome``
        (``recovered``, ``gave_up``, ``exhausted``: asked for a retry past the ceiling, or
        ``still_failing``: the run ended before recovery answered).

        From turns alone: one row per turn with retries (a turn whose calls recovery gave up on
        without retrying is not seen): ``retries`` is the most any of its calls got, ``tool``
        every tool it called, ``call_id`` and ``last_decision`` missing, ``outcome`` from the
        turn's producer and channel.
        """
        if self.events is None:
            return retries_from_turns(self.turns, self._keys)
        return retries_from_events(self.events, self._keys)

    def breakers(self) -> pd.DataFrame:
        """Per breaker target: ``trips`` (to open), ``half_opens``, ``closes`` (back to closed),
        ``refusals`` (soft ``breaker_open`` errors the model read) and ``last_state`` (after the
        last transition of the latest run, runs ordered by when they started).

        From turns alone, transitions are seen between consecutive turns' ``breaker_states``
        (several within one turn count once: open then half-open then closed is one close),
        ``refusals`` count turns (each given to a tool of the turn whose breaker was open), and
        ``scope`` is inferred: a target the model called as a tool is a tool's breaker, any
        other a model's.
        """
        if self.events is not None:
            return breaker_table(*breakers_from_events(self.events, self._keys))
        return breaker_table(*breakers_from_turns(self.turns, self._keys))

    def loops(self) -> pd.DataFrame:
        """Safety detectors acting, per ``detector`` and ``action``: ``fired`` and ``runs``.

        ``refuse`` is a loop caught softly (the call refused before execution); ``stop`` and
        ``ask_user`` ended the run. From turns alone, counted from the producers that show them
        (one per turn, however many calls were refused in it); a ``loop_detected`` stop is told
        apart from a convergence or ``max_turns`` stop by the hard row's message.
        """
        import pandas as pd

        if self.events is not None:
            e = self.events[self.events["kind"] == "detector_fired"]
            pairs = list(zip(e["detector"].astype(str), e["action"].astype(str), strict=True))
            runs = e[self._keys].astype(str).agg("/".join, axis=1).tolist() if len(e) else []
        else:
            t = self.turns[self.turns["producer"].isin(list(_DETECTOR_OF))]
            pairs = [
                _detector_of(str(p), text)
                for p, text in zip(t["producer"], t["error_text"].astype(object), strict=True)
            ]
            runs = t[self._keys].astype(str).agg("/".join, axis=1).tolist() if len(t) else []
        counts: dict[tuple[str, str], list[str]] = {}
        for pair, run in zip(pairs, runs, strict=True):
            counts.setdefault(pair, []).append(run)
        keys = sorted(counts)
        return pd.DataFrame(
            {
                "detector": pd.Categorical([k[0] for k in keys], categories=get_args(DetectorName)),
                "action": pd.Categorical([k[1] for k in keys], categories=get_args(DetectorAction)),
                "fired": pd.array([len(counts[k]) for k in keys], dtype="Int64"),
                "runs": pd.array([len(set(counts[k])) for k in keys], dtype="Int64"),
            }
        )

    def models(self) -> pd.DataFrame:
        """Per model: the ``turns`` it answered (``ok`` / ``soft`` / ``hard``: a hard turn counts
        only when the model replied on it) in how many ``runs``; ``latency_ms_median`` and
        ``latency_ms_mean``: the wall time of those turns in ms (the model's request, any failed
        requests to other models before it, the tool calls and any recovery back-off; missing
        when none of them has a time); ``input_tokens`` and
        ``output_tokens`` its replies reported (missing when none did). With events:
        ``failures``, requests it could not answer, and ``request_ms_median``, the median time of
        its answered requests alone (missing from turns alone). Both times leave out the runs on a
        simulated clock (``Audit``'s ``simulated``)."""
        import pandas as pd

        t = self.turns.assign(
            latency_ms=self.turns["latency_ms"].where(on_wall(self.turns, self._keys, self.simulated))
        )
        t = t[t["model"].notna()]
        failures = requests = None
        if self.events is not None:
            e = self.events
            failures = e.loc[e["kind"] == "model_failed", "model"].astype(str).value_counts()
            replied = e[
                (e["kind"] == "model_replied") & e["model"].notna() & on_wall(e, self._keys, self.simulated)
            ]
            requests = replied.groupby(replied["model"].astype(str))["latency_ms"].median()
        rows: dict[str, dict[str, Any]] = {}
        for model, g in t.groupby("model", sort=True):
            ch = g["channel"].astype(str)
            rows[str(model)] = {
                "turns": len(g),
                "runs": g[self._keys].drop_duplicates().shape[0],
                "ok": int((ch == "ok").sum()),
                "soft": int((ch == "soft").sum()),
                "hard": int((ch == "hard").sum()),
                "latency_ms_median": _or_none(g["latency_ms"].median()),
                "latency_ms_mean": _or_none(g["latency_ms"].mean()),
                "input_tokens": g["input_tokens"].sum(min_count=1),
                "output_tokens": g["output_tokens"].sum(min_count=1),
            }
        for model in [] if failures is None else failures.index:
            rows.setdefault(str(model), {"turns": 0, "runs": 0, "ok": 0, "soft": 0, "hard": 0})
        data: dict[str, Any] = {"model": pd.array(list(rows), dtype="string")}
        for col in ("turns", "runs", "ok", "soft", "hard"):
            data[col] = pd.array([r[col] for r in rows.values()], dtype="Int64")
        for col in ("latency_ms_median", "latency_ms_mean"):
            data[col] = pd.array([r.get(col) for r in rows.values()], dtype="Float64")
        for col in ("input_tokens", "output_tokens"):
            data[col] = pd.array([_or_none(r.get(col)) for r in rows.values()], dtype="Int64")
        data["failures"] = pd.array(
            [None if failures is None else int(failures.get(m, 0)) for m in rows], dtype="Int64"
        )
        data["request_ms_median"] = pd.array(
            [None if requests is None else _or_none(requests.get(m)) for m in rows], dtype="Float64"
        )
        return pd.DataFrame(data)

    def usage(self, by: By = "run") -> pd.DataFrame:
        """Token usage, wall time and cost per run (``by="run"``), per model or per turn; how
        model names are priced: ``loopnb.analysis._usage``.

        ``input_tokens``, ``output_tokens``: what the replies reported (missing when none did);
        ``latency_ms``: the turns' wall time added up (none from a run whose ``clock`` is
        ``"simulated"``); ``cost_usd``: US dollars from genai-prices' bundled table as of each
        turn's start, missing (never zero) unless every turn a model answered has a price;
        ``priced_turns``, ``priced_as`` (the table's ``provider/model``), ``price_source`` (the
        table and its version), ``unpriced`` (why a cost is missing: no model named, no tokens,
        a model the table does not know, genai-prices not installed). Per run: the ``models``
        that answered and all its ``turns``; per model: the ``runs`` and ``turns`` it answered (a
        row without a model holds turns that reported tokens but named none); per turn: ``turn``
        and ``model``.
        """
        return usage_frame(self.turns, self._keys, self.simulated, by)

    def disagreements(self) -> pd.DataFrame:
        """Where a foreign run's own marking disagrees with the channel table: one row per call or
        turn, columns ``run_id``, ``turn``, ``call_id``, ``tool``, ``source_status``, ``channel``,
        ``reason``, ``detail`` (``REASONS`` says what each means). Empty for
        loopnb's own runs. Needs the events (audit a Recording, or pass them)."""
        from loopnb.record._disagree import disagreements

        return disagreements(self.turns, self._needs_events("disagreements"))

    def recovery_rate(self, by: RateBy = "run") -> pd.DataFrame:
        """Of each tool's soft errors (the ones the model read), the share followed later in the
        same run by a successful call of that tool: per ``run_id``, ``tool`` or ``fault`` (the
        injected label, ``natural`` for the rest), with ``soft_errors``, ``recovered`` and ``rate``
        (0 to 1). A fault that fails quietly (``wrong``, ``empty``) has no soft error: no rate."""
        return recovery_rate(self._needs_events("recovery_rate"), self._keys, by)

    def false_success(self) -> pd.DataFrame:
        """Runs that ended with an answer (not hard) while some tool's last soft error was never
        followed by a success of that tool: ``run_id``, ``tool``, the error's ``turn`` and
        ``error_text``, and the run's ``final_output``."""
        return false_success(self._needs_events("false_success"), self._keys)

    def _needs_events(self, what: str) -> pd.DataFrame:
        if self.events is None:
            raise ValueError(f"{what}() needs the events: audit(recording) or audit((turns, events))")
        return self.events

    def summary(self) -> pd.DataFrame:
        """The headline figures, one per row: ``metric``, ``value`` (and ``detail``)."""
        import pandas as pd

        t = self.turns
        ch = t["channel"].astype(str)
        n = len(t)
        runs = t[self._keys].drop_duplicates().shape[0]
        ep = self.recovery_episodes()
        rec = ep[ep["outcome"] == "recovered"]
        retries = self.retries()
        br = self.breakers()
        loops = self.loops()
        models = self.models()
        caught = int(loops.loc[loops["action"] == "refuse", "fired"].sum())
        stopped = int(loops.loc[loops["action"].isin(["stop", "ask_user"]), "fired"].sum())
        hard = t[ch == "hard"]["producer"].astype(str).value_counts()

        def pct(a: int, b: int) -> str:
            return f"{a / b:.0%}" if b else "-"

        rows = [
            ("runs", runs, ""),
            ("turns", n, ""),
            ("ok turns", int((ch == "ok").sum()), pct(int((ch == "ok").sum()), n)),
            ("soft turns", int((ch == "soft").sum()), pct(int((ch == "soft").sum()), n)),
            ("runs ended hard", int(hard.sum()), ", ".join(f"{k} {v}" for k, v in _most_first(hard))),
            ("soft streaks", len(ep), ""),
            ("recovered on its own", len(rec), pct(len(rec), len(ep))),
            (
                "median turns to recover",
                float(rec["turns_to_recover"].median()) if len(rec) else "-",
                "",
            ),
            ("calls retried", len(retries), "" if self.events is not None else "turns with retries"),
            (
                "most retries on one call",
                int(retries["retries"].max()) if len(retries) else 0,
                f"ceiling {MAX_RECOVERY_ATTEMPTS}",
            ),
            ("calls past the ceiling", int((retries["outcome"] == "exhausted").sum()), ""),
            (
                "breaker trips",
                int(br["trips"].sum()),
                ", ".join(f"{t} {n}" for t, n in zip(br["target"], br["trips"], strict=True) if n),
            ),
            ("loops caught softly", caught, ""),
            ("runs stopped by a detector", stopped, ""),
            ("models", len(models), ", ".join(str(m) for m in models["model"])),
        ]
        return pd.DataFrame(
            {
                "metric": pd.array([r[0] for r in rows], dtype="string"),
                "value": pd.array([str(r[1]) for r in rows], dtype="string"),
                "detail": pd.array([r[2] for r in rows], dtype="string"),
            }
        )

    # -- figures --------------------------------------------------------------------------------

    FIGURES = ("by_producer", "recovery", "retries", "breakers", "loops", "models")

    def figure(self, name: str) -> go.Figure:
        """The plotly figure of one table: one of ``Audit.FIGURES``."""
        from loopnb.analysis import _figures as figures

        if name not in self.FIGURES:
            raise ValueError(f"no figure {name!r}; choose one of {', '.join(self.FIGURES)}")
        return getattr(figures, name)(self)

    def __repr__(self) -> str:
        with_events = "with events" if self.events is not None else "turns only"
        return f"Audit({len(self.turns)} turns, {with_events})"


def _most_first(counts: pd.Series) -> list[tuple[str, int]]:
    """``counts`` as (name, count) pairs, the largest first, ties by name: the same for any row order."""
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))


def _or_none(value: Any) -> Any:
    """``value``, or ``None`` for pandas' missing values."""
    import pandas as pd

    return None if value is None or pd.isna(value) else value
