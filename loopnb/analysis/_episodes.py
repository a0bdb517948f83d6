"""Recovery episodes: each run's streaks of consecutive soft turns, and how each one ended.

``recovery_episodes`` finds the streaks with numpy over the turns sorted run by run (no Python
loop per turn); ``recovery_per_producer`` sums them up per producer of each streak's first error.
They are ``Audit.recovery_episodes`` and ``Audit.recovery``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopnb.engine._errors import HARD_PRODUCERS, SOFT_PRODUCERS

if TYPE_CHECKING:
    import pandas as pd

PRODUCERS = (*SOFT_PRODUCERS, *HARD_PRODUCERS, "source_error")
"""Every producer, soft ones first (and source_error, which only runs read from other frameworks
end on): the categories and row order of the audit's producer columns."""
_OUTCOMES = tuple(["recovered", "ended_hard", "unfinished"])


def recovery_episodes(turns: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The streaks of soft turns in ``turns``, one row each (see ``Audit.recovery_episodes``)."""
    import numpy as np
    import pandas as pd

    t = turns.sort_values([*keys, "turn"], kind="stable").reset_index(drop=True)
    run = t.groupby(keys, sort=False, observed=True).ngroup().to_numpy()
    number = t["turn"].to_numpy(dtype=np.int64, na_value=-2)
    channel = t["channel"].astype(str).to_numpy()
    soft = channel == "soft"
    # row i follows row i - 1 when both are of one run and their turn numbers are consecutive
    follows = np.zeros(len(t), dtype=bool)
    follows[1:] = (run[1:] == run[:-1]) & (number[1:] == number[:-1] + 1)
    continues = soft & follows & np.concatenate([[False], soft[:-1]])
    starts = soft & ~continues
    first = np.flatnonzero(starts)
    soft_turns = np.bincount(np.cumsum(starts)[soft], minlength=len(first) + 1)[1:]
    after = first + soft_turns  # the row after each streak, if it exists and follows it
    known = after < len(t)
    known[known] &= follows[after[known]]
    nxt = np.full(len(first), "", dtype=object)
    nxt[known] = channel[after[known]]
    outcome = np.where(nxt == "ok", "recovered", np.where(nxt == "hard", "ended_hard", "unfinished"))
    rows = t.iloc[first]
    return pd.DataFrame(
        {
            **{k: rows[k].astype("string").array for k in keys},
            "first_turn": pd.array(rows["turn"].to_numpy(), dtype="Int64"),
            "producer": pd.Categorical(rows["producer"].astype(object), categories=PRODUCERS),
            "soft_turns": pd.array(soft_turns, dtype="Int64"),
            "outcome": pd.Categorical(outcome, categories=_OUTCOMES),
            "turns_to_recover": pd.array(
                [n if o == "recovered" else None for n, o in zip(soft_turns.tolist(), outcome, strict=True)],
                dtype="Int64",
            ),
        }
    )


def recovery_per_producer(episodes: pd.DataFrame) -> pd.DataFrame:
    """``episodes`` summed up per producer of their first error (see ``Audit.recovery``)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for producer in PRODUCERS:
        sel = episodes[episodes["producer"] == producer]
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
                "unfinished": int((sel["outcome"] == "unfinished").sum()),
            }
        )
    return pd.DataFrame(
        {
            "producer": pd.Categorical([r["producer"] for r in rows], categories=PRODUCERS),
            "episodes": pd.array([r["episodes"] for r in rows], dtype="Int64"),
            "recovered": pd.array([r["recovered"] for r in rows], dtype="Int64"),
            "rate": pd.array([r["rate"] for r in rows], dtype="Float64"),
            "median_turns": pd.array([r["median_turns"] for r in rows], dtype="Float64"),
            "max_turns": pd.array([r["max_turns"] for r in rows], dtype="Int64"),
            "ended_hard": pd.array([r["ended_hard"] for r in rows], dtype="Int64"),
            "unfinished": pd.array([r["unfinished"] for r in rows], dtype="Int64"),
        }
    )
