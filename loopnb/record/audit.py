"""Audit helpers: the summaries a user would otherwise write by hand, as DataFrames.

``audit(x)`` accepts a ``Recording``, a ``Recorder``, a ``turns`` frame (e.g. from
``load_many``), or a ``(turns, events)`` pair, and returns an ``Audit``::

    a = loopnb.audit(loopnb.load("runs/today.jsonl"))
    a.summary()               # one table of headline figures
    a.by_producer()           # soft vs hard counts per producer
    a.recovery()              # how often the model recovered on its own, within how many turns
    a.retries()               # retries per call against the ceiling of 5
    a.breakers(); a.loops(); a.models()
    a.figure("retries")       # the plotly counterpart of any of them

With events, per-call and per-transition detail comes from them; from turns alone, each table is
computed at turn granularity (documented per method).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from loopnb.engine.errors import HARD_PRODUCERS, SOFT_PRODUCERS
from loopnb.record.schema import EventRow, TurnRow

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["CEILING", "Audit", "audit"]

CEILING = 5
"""``MAX_RECOVERY_ATTEMPTS``: retries a call may get (attempt 0 plus 5)."""

_PRODUCERS = (*SOFT_PRODUCERS, *HARD_PRODUCERS)
_CHANNELS = tuple(["ok", "soft", "hard"])
_OUTCOMES = tuple(["recovered", "ended_hard", "unfinished"])
_DECISIONS = tuple(["retry", "skip", "ask_user", "fail"])
_RETRY_OUTCOMES = tuple(["recovered", "still_failing", "gave_up", "exhausted"])
# Turn producers that show a safety detector acting, when no events are at hand.
_DETECTOR_OF = {
    "loop_refusal": ("loop", "refuse"),
    "loop_detected": ("loop", "stop"),
    "convergence_warning": ("convergence", "warn"),
    "user_input_required": ("convergence", "ask_user"),
}


def audit(source: Any, events: pd.DataFrame | None = None) -> Audit:
    """An ``Audit`` of a Recording, a Recorder, a turns frame, or a ``(turns, events)`` pair."""
    import pandas as pd

    if isinstance(source, tuple):
        source, events = source
    if isinstance(source, pd.DataFrame):
        return Audit(source, events)
    if hasattr(source, "turns") and hasattr(source, "events"):
        return Audit(source.turns, source.events if events is None else events)
    raise TypeError(
        "audit() takes a Recording, a Recorder, a turns DataFrame or a (turns, events) pair; "
        f"got {type(source).__name__}"
    )


def _keys(df: pd.DataFrame) -> list[str]:
    return ["source", "run_id"] if "source" in df.columns else ["run_id"]


class Audit:
    """Summaries of recorded turns (and events, when given). Every method returns a new frame."""

    def __init__(self, turns: pd.DataFrame, events: pd.DataFrame | None = None) -> None:
        from loopnb.record.frames import conform

        extra = [c for c in ("source",) if c in turns.columns]
        self.turns = _with(conform(turns, TurnRow), turns, extra)
        self.events = None
        if events is not None:
            extra = [c for c in ("source",) if c in events.columns]
            self.events = _with(conform(events, EventRow), events, extra)
        self._keys = _keys(self.turns)

    # -- tables ---------------------------------------------------------------------------------

    def by_producer(self) -> pd.DataFrame:
        """Per producer: its channel, the turns it tagged, the runs it appeared in, its share of
        all turns, and (with events) ``errors``: how many errors of it the model read or the
        run ended with (a turn with several failing calls counts once in ``turns``)."""
        import pandas as pd

        t = self.turns[self.turns["producer"].notna()]
        run = t[self._keys].astype(str).agg("/".join, axis=1) if len(t) else pd.Series(dtype=str)
        out = (
            pd.DataFrame({"producer": t["producer"].astype(str), "run": run})
            .groupby("producer", sort=False)
            .agg(turns=("run", "size"), runs=("run", "nunique"))
        )
        out = out.reindex([p for p in _PRODUCERS if p in out.index])
        errors = None
        if self.events is not None:
            e = self.events
            kinds = e["kind"].isin(["soft_error_returned", "hard_error_raised"])
            errors = e.loc[kinds, "producer"].astype(str).value_counts()
        frame = pd.DataFrame(
            {
                "producer": pd.Categorical(out.index, categories=_PRODUCERS),
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
        ``ended_hard`` (the run ended on the next turn) or ``unfinished`` (no next turn).
        ``turns_to_recover``: turns from the first error to the ok turn (1 = the very next one).
        """
        import pandas as pd

        t = self.turns.sort_values([*self._keys, "turn"], kind="stable")
        rows: list[dict[str, Any]] = []
        for key, run in t.groupby(self._keys, sort=False, observed=True):
            channels = run["channel"].astype(str).tolist()
            producers = run["producer"].astype(object).tolist()
            numbers = run["turn"].tolist()
            i = 0
            while i < len(channels):
                if channels[i] != "soft":
                    i += 1
                    continue
                j = i
                while j < len(channels) and channels[j] == "soft":
                    j += 1
                nxt = channels[j] if j < len(channels) else None
                outcome = "recovered" if nxt == "ok" else "ended_hard" if nxt == "hard" else "unfinished"
                keyvals = key if isinstance(key, tuple) else (key,)
                rows.append(
                    {
                        **dict(zip(self._keys, keyvals, strict=True)),
                        "first_turn": numbers[i],
                        "producer": producers[i],
                        "soft_turns": j - i,
                        "outcome": outcome,
                        "turns_to_recover": j - i if outcome == "recovered" else None,
                    }
                )
                i = j
        columns = {k: pd.array([r[k] for r in rows], dtype="string") for k in self._keys}
        return pd.DataFrame(
            {
                **columns,
                "first_turn": pd.array([r["first_turn"] for r in rows], dtype="Int64"),
                "producer": pd.Categorical([r["producer"] for r in rows], categories=_PRODUCERS),
                "soft_turns": pd.array([r["soft_turns"] for r in rows], dtype="Int64"),
                "outcome": pd.Categorical([r["outcome"] for r in rows], categories=_OUTCOMES),
                "turns_to_recover": pd.array([r["turns_to_recover"] for r in rows], dtype="Int64"),
            }
        )

    def recovery(self) -> pd.DataFrame:
        """Self-recovery per producer of the first error of each soft streak: ``episodes``,
        ``recovered``, ``rate``, median and max ``turns_to_recover``, ``ended_hard``."""
        import pandas as pd

        ep = self.recovery_episodes()
        rows = []
        for producer in _PRODUCERS:
            sel = ep[ep["producer"] == producer]
            if not len(sel):
                continue
            rec = sel[sel["outcome"] == "recovered"]["turns_to_recover"]
            rows.append(
                {
                    "producer": producer,
                    "episodes": len(sel),
                    "recovered": len(rec),
                    "rate": len(rec) / len(sel),
                    "median_turns": float(rec.median()) if len(rec) else None,
                    "max_turns": int(rec.max()) if len(rec) else None,
                    "ended_hard": int((sel["outcome"] == "ended_hard").sum()),
                }
            )
        return pd.DataFrame(
            {
                "producer": pd.Categorical([r["producer"] for r in rows], categories=_PRODUCERS),
                "episodes": pd.array([r["episodes"] for r in rows], dtype="Int64"),
                "recovered": pd.array([r["recovered"] for r in rows], dtype="Int64"),
                "rate": pd.array([r["rate"] for r in rows], dtype="Float64"),
                "median_turns": pd.array([r["median_turns"] for r in rows], dtype="Float64"),
                "max_turns": pd.array([r["max_turns"] for r in rows], dtype="Int64"),
                "ended_hard": pd.array([r["ended_hard"] for r in rows], dtype="Int64"),
            }
        )

    def retries(self) -> pd.DataFrame:
        """Every call that went to recovery: its ``retries`` against the ``ceiling`` (5),
        ``calls`` made in all, the ``last_decision`` and the ``outcome`` (``recovered``,
        ``gave_up``, ``exhausted``: asked for a retry past the ceiling, or ``still_failing``).

        From turns alone: one row per turn with retries (``call_id`` and ``last_decision``
        missing, ``outcome`` from the turn's channel).
        """
        import pandas as pd

        if self.events is None:
            return self._retries_from_turns()
        e = self.events
        keys = [*self._keys, "call_id"]
        dec = e[e["kind"] == "recovery_decided"]
        disp = e[(e["kind"] == "tool_dispatched") & e["call_id"].notna()]
        wanted = set(map(tuple, dec[keys].astype(str).itertuples(index=False, name=None)))
        mine = [k in wanted for k in disp[keys].astype(str).itertuples(index=False, name=None)]
        disp = disp[pd.Series(mine, index=disp.index, dtype=bool)]
        last_disp = disp.sort_values("seq", kind="stable").groupby(keys, sort=False).tail(1)
        last_dec = dec.sort_values("seq", kind="stable").groupby(keys, sort=False).tail(1)
        merged = last_dec[[*keys, "turn", "tool", "decision", "attempt", "max_attempts"]].merge(
            last_disp[[*keys, "attempt", "is_error"]].rename(columns={"attempt": "tried"}),
            on=keys,
            how="left",
        )
        retries = merged["tried"].fillna(0).astype("Int64")
        exhausted = (merged["decision"] == "retry") & (merged["attempt"] >= merged["max_attempts"])
        outcome = [
            "exhausted"
            if ex
            else "gave_up"
            if d != "retry"
            else "recovered"
            if not bool(err)
            else "still_failing"
            for ex, d, err in zip(
                exhausted,
                merged["decision"].astype(str),
                merged["is_error"].fillna(True),
                strict=True,
            )
        ]
        out = pd.DataFrame(
            {
                **{k: merged[k].astype("string") for k in self._keys},
                "turn": merged["turn"].astype("Int64"),
                "call_id": merged["call_id"].astype("string"),
                "tool": merged["tool"].astype("string"),
                "retries": retries,
                "calls": retries + 1,
                "ceiling": pd.array([CEILING] * len(merged), dtype="Int64"),
                "last_decision": merged["decision"],
                "outcome": pd.Categorical(outcome, categories=_RETRY_OUTCOMES),
            }
        )
        return out.sort_values([*self._keys, "turn"], kind="stable").reset_index(drop=True)

    def _retries_from_turns(self) -> pd.DataFrame:
        import pandas as pd

        t = self.turns[self.turns["recovery_attempts"] > 0]
        outcome = [
            "exhausted"
            if p == "tool_recovery_exhausted"
            else "gave_up"
            if p == "recovery_gave_up"
            else "recovered"
            if c == "ok"
            else "still_failing"
            for p, c in zip(t["producer"].astype(object), t["channel"].astype(str), strict=True)
        ]
        return pd.DataFrame(
            {
                **{k: t[k].astype("string") for k in self._keys},
                "turn": t["turn"],
                "call_id": pd.array([None] * len(t), dtype="string"),
                "tool": t["tools"],
                "retries": t["recovery_attempts"],
                "calls": t["recovery_attempts"] + 1,
                "ceiling": pd.array([CEILING] * len(t), dtype="Int64"),
                "last_decision": pd.Categorical([None] * len(t), categories=_DECISIONS),
                "outcome": pd.Categorical(outcome, categories=_RETRY_OUTCOMES),
            }
        ).reset_index(drop=True)

    def breakers(self) -> pd.DataFrame:
        """Per breaker target: ``trips`` (to open), ``half_opens``, ``closes`` (back to closed),
        ``refusals`` (soft ``breaker_open`` errors the model read) and ``last_state``.

        From turns alone, transitions are seen between consecutive turns' ``breaker_states``
        (several within one turn count once) and ``refusals`` count turns.
        """
        import pandas as pd

        if self.events is not None:
            e = self.events
            tr = e[e["kind"] == "breaker_transitioned"]
            states = [(str(t), str(s)) for t, s in zip(tr["target"], tr["state"], strict=True)]
            ref = e[(e["kind"] == "soft_error_returned") & (e["producer"] == "breaker_open")]
            refusals = ref["tool"].astype(str).value_counts()
            scopes = dict(zip(tr["target"].astype(str), tr["scope"].astype(str), strict=True))
        else:
            states = self._transitions_from_turns()
            ref = self.turns[self.turns["producer"] == "breaker_open"]
            refusals = ref["tools"].astype(str).str.split(", ").str[0].value_counts()
            scopes = {}
        targets = list(dict.fromkeys([t for t, _ in states] + list(refusals.index)))
        rows = []
        for target in targets:
            mine = [s for t, s in states if t == target]
            rows.append(
                {
                    "target": target,
                    "scope": scopes.get(target),
                    "trips": mine.count("open"),
                    "half_opens": mine.count("half_open"),
                    "closes": mine.count("closed"),
                    "refusals": int(refusals.get(target, 0)),
                    "last_state": mine[-1] if mine else None,
                }
            )
        breaker = pd.CategoricalDtype(["closed", "open", "half_open"])
        return pd.DataFrame(
            {
                "target": pd.array([r["target"] for r in rows], dtype="string"),
                "scope": pd.Categorical([r["scope"] for r in rows], categories=["tool", "model"]),
                "trips": pd.array([r["trips"] for r in rows], dtype="Int64"),
                "half_opens": pd.array([r["half_opens"] for r in rows], dtype="Int64"),
                "closes": pd.array([r["closes"] for r in rows], dtype="Int64"),
                "refusals": pd.array([r["refusals"] for r in rows], dtype="Int64"),
                "last_state": pd.Categorical([r["last_state"] for r in rows], dtype=breaker),
            }
        )

    def _transitions_from_turns(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        t = self.turns.sort_values([*self._keys, "turn"], kind="stable")
        for _, run in t.groupby(self._keys, sort=False, observed=True):
            before: dict[str, str] = {}
            for raw in run["breaker_states"].tolist():
                now = json.loads(raw) if isinstance(raw, str) else {}
                for target, state in now.items():
                    if state != before.get(target, "closed"):
                        out.append((target, state))
                before = now
        return out

    def loops(self) -> pd.DataFrame:
        """Safety detectors acting, per ``detector`` and ``action``: ``fired`` and ``runs``.

        ``refuse`` is a loop caught softly (the call refused before execution); ``stop`` and
        ``ask_user`` ended the run. From turns alone, counted from the producers that show them.
        """
        import pandas as pd

        if self.events is not None:
            e = self.events[self.events["kind"] == "detector_fired"]
            pairs = list(zip(e["detector"].astype(str), e["action"].astype(str), strict=True))
            runs = e[self._keys].astype(str).agg("/".join, axis=1).tolist() if len(e) else []
        else:
            t = self.turns[self.turns["producer"].isin(list(_DETECTOR_OF))]
            pairs = [_DETECTOR_OF[str(p)] for p in t["producer"]]
            runs = t[self._keys].astype(str).agg("/".join, axis=1).tolist() if len(t) else []
        counts: dict[tuple[str, str], list[str]] = {}
        for pair, run in zip(pairs, runs, strict=True):
            counts.setdefault(pair, []).append(run)
        keys = sorted(counts)
        return pd.DataFrame(
            {
                "detector": pd.Categorical(
                    [k[0] for k in keys], categories=["loop", "convergence", "max_turns"]
                ),
                "action": pd.Categorical(
                    [k[1] for k in keys], categories=["refuse", "stop", "warn", "ask_user"]
                ),
                "fired": pd.array([len(counts[k]) for k in keys], dtype="Int64"),
                "runs": pd.array([len(set(counts[k])) for k in keys], dtype="Int64"),
            }
        )

    def models(self) -> pd.DataFrame:
        """Per model: turns it answered (ok / soft / hard), runs, median and mean latency,
        tokens reported, and (with events) ``failures``: requests it could not answer."""
        import pandas as pd

        t = self.turns[self.turns["model"].notna()]
        failures = None
        if self.events is not None:
            e = self.events
            failures = e.loc[e["kind"] == "model_failed", "model"].astype(str).value_counts()
        rows = []
        for model, g in t.groupby("model", sort=True):
            ch = g["channel"].astype(str)
            rows.append(
                {
                    "model": model,
                    "turns": len(g),
                    "runs": g[self._keys].drop_duplicates().shape[0],
                    "ok": int((ch == "ok").sum()),
                    "soft": int((ch == "soft").sum()),
                    "hard": int((ch == "hard").sum()),
                    "latency_ms_median": float(g["latency_ms"].median()),
                    "latency_ms_mean": float(g["latency_ms"].mean()),
                    "input_tokens": int(g["input_tokens"].sum()),
                    "output_tokens": int(g["output_tokens"].sum()),
                    "failures": None if failures is None else int(failures.get(model, 0)),
                }
            )
        if failures is not None:
            for model in failures.index:
                if model not in {r["model"] for r in rows}:
                    rows.append(
                        {
                            "model": model,
                            "turns": 0,
                            "runs": 0,
                            "ok": 0,
                            "soft": 0,
                            "hard": 0,
                            "latency_ms_median": None,
                            "latency_ms_mean": None,
                            "input_tokens": 0,
                            "output_tokens": 0,
                            "failures": int(failures[model]),
                        }
                    )
        ints = ("turns", "runs", "ok", "soft", "hard", "input_tokens", "output_tokens", "failures")
        data: dict[str, Any] = {"model": pd.array([r["model"] for r in rows], dtype="string")}
        for col in ints:
            data[col] = pd.array([r[col] for r in rows], dtype="Int64")
        for col in ("latency_ms_median", "latency_ms_mean"):
            data[col] = pd.array([r[col] for r in rows], dtype="Float64")
        cols = [
            "model",
            "turns",
            "runs",
            "ok",
            "soft",
            "hard",
            "latency_ms_median",
            "latency_ms_mean",
            "input_tokens",
            "output_tokens",
            "failures",
        ]
        return pd.DataFrame(data)[cols]

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
            ("runs ended hard", len(hard), ", ".join(f"{k} {v}" for k, v in hard.items())),
            ("soft streaks", len(ep), ""),
            ("recovered on its own", len(rec), pct(len(rec), len(ep))),
            (
                "median turns to recover",
                float(rec["turns_to_recover"].median()) if len(rec) else "-",
                "",
            ),
            ("calls retried", len(retries), ""),
            (
                "most retries on one call",
                int(retries["retries"].max()) if len(retries) else 0,
                f"ceiling {CEILING}",
            ),
            ("calls past the ceiling", int((retries["outcome"] == "exhausted").sum()), ""),
            (
                "breaker trips",
                int(br["trips"].sum()),
                ", ".join(f"{r.target} {r.trips}" for r in br.itertuples() if r.trips),
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
        from loopnb.record import figures

        if name not in self.FIGURES:
            raise ValueError(f"no figure {name!r}; choose one of {', '.join(self.FIGURES)}")
        return getattr(figures, name)(self)

    def __repr__(self) -> str:
        with_events = "with events" if self.events is not None else "turns only"
        return f"Audit({len(self.turns)} turns, {with_events})"


def _with(conformed: pd.DataFrame, original: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    for i, col in enumerate(extra):
        conformed.insert(i, col, original[col].astype("string").array)
    return conformed
