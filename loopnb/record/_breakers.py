"""The breakers table: transitions and refusals per breaker target.

``breakers_from_events`` reads the transitions and refusals off the events;
``breakers_from_turns``, for a turns frame alone, infers them from consecutive turns'
``breaker_states``. Both give ``breaker_table`` the same (transitions, refusals, scopes).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def breakers_from_events(
    events: pd.DataFrame, keys: list[str]
) -> tuple[list[tuple[str, str]], pd.Series, dict[str, str]]:
    """Transitions, refusals per tool and scopes, read off the events, runs in the order they started."""
    e = events[events["kind"].isin(["breaker_transitioned", "soft_error_returned"])]
    e = _chronological(e, keys, "at", "seq")
    tr = e[e["kind"] == "breaker_transitioned"]
    states = [(str(t), str(s)) for t, s in zip(tr["target"], tr["state"], strict=True)]
    ref = e[(e["kind"] == "soft_error_returned") & (e["producer"] == "breaker_open")]
    refusals = ref["tool"].astype(str).value_counts()
    scopes = dict(zip(tr["target"].astype(str), tr["scope"].astype(str), strict=True))
    return states, refusals, scopes


def breakers_from_turns(
    turns: pd.DataFrame, keys: list[str]
) -> tuple[list[tuple[str, str]], pd.Series, dict[str, str]]:
    """Transitions, refusals per tool and scopes, read off the turns' ``breaker_states``."""
    import pandas as pd

    transitions: list[tuple[str, str]] = []
    refused: list[str] = []
    t = _chronological(turns, keys, "started_at", "turn")
    for _, run in t.groupby(keys, sort=False, observed=True):
        before: dict[str, str] = {}
        for raw, producer, tools in zip(
            run["breaker_states"], run["producer"].astype(object), run["tools"], strict=True
        ):
            now = json.loads(raw) if isinstance(raw, str) else {}
            for target, state in now.items():
                if state != before.get(target, "closed"):
                    transitions.append((target, state))
            if producer == "breaker_open":
                names = str(tools).split(", ") if isinstance(tools, str) else ["?"]
                open_ = [n for n in names if "open" in (before.get(n), now.get(n))]
                refused.append((open_ or names)[0])
            before = now
    called = {n for tools in turns["tools"].dropna() for n in str(tools).split(", ")}
    scopes = {target: "tool" if target in called else "model" for target, _ in transitions}
    return transitions, pd.Series(refused, dtype=object).value_counts(), scopes


def breaker_table(states: list[tuple[str, str]], refusals: pd.Series, scopes: dict[str, str]) -> pd.DataFrame:
    """One row per breaker target (see ``Audit.breakers``)."""
    import pandas as pd

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


def _chronological(df: pd.DataFrame, keys: list[str], time: str, order: str) -> pd.DataFrame:
    """``df`` run by run, runs in the order they started (by ``time``), each in ``order``."""
    if not len(df):
        return df
    started = df.groupby(keys, sort=False, observed=True)[time].transform("min")
    return (
        df.assign(_started=started)
        .sort_values(["_started", *keys, order], kind="stable")
        .drop(columns="_started")
    )
