"""The retries table: every call that went to recovery, against the ceiling of retries.

``retries_from_events`` gives one row per call; ``retries_from_turns``, for a turns frame alone,
one row per turn with retries. Both return the same columns, so ``Audit.retries`` reads alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopnb.engine._recovery import MAX_RECOVERY_ATTEMPTS

if TYPE_CHECKING:
    import pandas as pd

"""``MAX_RECOVERY_ATTEMPTS``: retries a call may get (attempt 0 plus 5)."""

_DECISIONS = tuple(["retry", "skip", "ask_user", "fail"])
_RETRY_OUTCOMES = tuple(["recovered", "still_failing", "gave_up", "exhausted"])


def retries_from_events(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per call of ``events`` that went to recovery (see ``Audit.retries``)."""
    import pandas as pd

    call = [*keys, "turn", "call_id", "instance"]
    e = events
    e = e[e["kind"].isin(["tool_dispatched", "recovery_decided"]) & e["call_id"].notna()]
    e = e.sort_values([*keys, "seq"], kind="stable")
    # A call is its attempt 0 and what follows: a model may reuse an id in a later turn, or
    # even twice in one reply, and those are separate calls.
    starts = ((e["kind"] == "tool_dispatched") & (e["attempt"] == 0)).fillna(False).astype(int)
    e = e.assign(instance=starts.groupby([e[k] for k in call[:-1]], sort=False).cumsum())
    dec = e[e["kind"] == "recovery_decided"]
    disp = e[e["kind"] == "tool_dispatched"]
    last_disp = disp.groupby(call, sort=False).tail(1)
    last_dec = dec.groupby(call, sort=False).tail(1)
    merged = last_dec[[*call, "tool", "decision", "attempt", "max_attempts"]].merge(
        last_disp[[*call, "attempt", "is_error"]].rename(columns={"attempt": "tried"}),
        on=call,
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
            **{k: merged[k].astype("string") for k in keys},
            "turn": merged["turn"].astype("Int64"),
            "call_id": merged["call_id"].astype("string"),
            "tool": merged["tool"].astype("string"),
            "retries": retries,
            "calls": retries + 1,
            "ceiling": pd.array([MAX_RECOVERY_ATTEMPTS] * len(merged), dtype="Int64"),
            "last_decision": merged["decision"],
            "outcome": pd.Categorical(outcome, categories=_RETRY_OUTCOMES),
        }
    )
    return out.sort_values([*keys, "turn"], kind="stable").reset_index(drop=True)


def retries_from_turns(turns: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per turn of ``turns`` with retries (see ``Audit.retries``)."""
    import pandas as pd

    t = turns[turns["recovery_attempts"] > 0]
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
            **{k: t[k].astype("string") for k in keys},
            "turn": t["turn"],
            "call_id": pd.array([None] * len(t), dtype="string"),
            "tool": t["tools"],
            "retries": t["recovery_attempts"],
            "calls": t["recovery_attempts"] + 1,
            "ceiling": pd.array([MAX_RECOVERY_ATTEMPTS] * len(t), dtype="Int64"),
            "last_decision": pd.Categorical([None] * len(t), categories=_DECISIONS),
            "outcome": pd.Categorical(outcome, categories=_RETRY_OUTCOMES),
        }
    ).reset_index(drop=True)
