"""Recovery measured per tool error: ``Audit.recovery_rate`` and ``Audit.false_success``.

A tool's soft error is *recovered* when a later call of the same tool in the same run succeeds
(UNDERWRITE's recovery rate: the share of tool errors followed by a successful retry of the same
tool). Errors about a name that is no tool (``not_advertised``, ``registry_miss``) are not a tool's
and are left out: no later call of that name can succeed. A run *falsely succeeds* when it ended
with a final answer while some tool's last soft error was never followed by a success of that tool.

Both read the events: each error the model read (``soft_error_returned``, with its tool and call)
and each dispatch that succeeded (``tool_dispatched`` with no error flag), ordered by ``seq``. An
error's fault is the label its call's dispatch carries (``injected``; missing for a real error).
A ``wrong`` or ``empty`` result has no error flag: it counts as a success, which is the point of
measuring it (an implicit failure is invisible here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

RateBy = Literal["run", "tool", "fault"]
NAME_ERRORS = ("not_advertised", "registry_miss")
"""Soft errors about a name that is no tool: no tool's errors."""
_KEY = {"run": "run_id", "tool": "tool", "fault": "fault"}


def tool_errors(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per tool error the model read: the run ``keys``, ``turn``, ``seq``, ``tool``,
    ``error_text``, ``fault`` (the injected label, or missing) and ``recovered``."""
    import pandas as pd

    e = events
    soft = e[
        (e["kind"] == "soft_error_returned")
        & e["tool"].notna()
        & e["call_id"].notna()
        & ~e["producer"].isin(NAME_ERRORS)
    ]
    dispatched = e[e["kind"] == "tool_dispatched"]
    ok = dispatched[dispatched["is_error"].eq(False).fillna(False)]
    last_ok = ok.groupby([*keys, "tool"], observed=True, dropna=False)["seq"].max().rename("last_ok")
    marked = dispatched[dispatched["injected"].notna()]
    labels = marked.groupby([*keys, "call_id"], observed=True)["injected"].first().rename("fault")
    rows = soft[[*keys, "turn", "seq", "tool", "call_id", "text"]].rename(columns={"text": "error_text"})
    rows = rows.join(last_ok, on=[*keys, "tool"]).join(labels, on=[*keys, "call_id"])
    rows["recovered"] = (rows["last_ok"] > rows["seq"]).fillna(False).astype(bool)
    rows["fault"] = rows["fault"].astype("string")
    return pd.DataFrame(rows.drop(columns=["last_ok", "call_id"])).reset_index(drop=True)


def recovery_rate(turns: pd.DataFrame, events: pd.DataFrame, keys: list[str], by: RateBy) -> pd.DataFrame:
    """Per run, tool or fault: ``soft_errors``, how many were ``recovered``, ``rate`` (0 to 1).

    By run, every run of ``turns`` has a row (``rate`` missing without soft errors); by tool or
    fault, each that had a soft error (the real errors' fault is missing).
    """
    import pandas as pd

    if by not in _KEY:
        raise ValueError(f"recovery_rate(by={by!r}): by is one of 'run', 'tool' or 'fault'")
    errors = tool_errors(events, keys)
    group = keys if by == "run" else [_KEY[by]]
    counts = errors.groupby(group, dropna=False, sort=True, observed=True)["recovered"].agg(["size", "sum"])
    if by == "run":
        runs = turns[keys].drop_duplicates().set_index(keys).index
        counts = counts.reindex(runs, fill_value=0)
    frame = counts.reset_index().rename(columns={"size": "soft_errors", "sum": "recovered"})
    for name in group:
        frame[name] = frame[name].astype("string")
    frame["soft_errors"] = frame["soft_errors"].astype("Int64")
    frame["recovered"] = frame["recovered"].astype("Int64")
    n = frame["soft_errors"]
    frame["rate"] = (frame["recovered"] / n.where(n > 0)).astype("Float64")
    return pd.DataFrame(frame[[*group, "soft_errors", "recovered", "rate"]])


def false_success(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The runs that ended with a final answer while a tool's last soft error was never followed by
    a success of that tool: ``run_id``, ``tool``, ``turn`` and ``error_text`` of that last error,
    and the run's ``final_output``; one row per such tool of such a run."""
    import pandas as pd

    ended = events[(events["kind"] == "run_finished") & events["channel"].eq("ok").fillna(False)]
    outputs = ended[[*keys, "text"]].rename(columns={"text": "final_output"})
    errors = tool_errors(events, keys)
    last = errors.sort_values("seq", kind="stable").groupby([*keys, "tool"], observed=True).tail(1)
    unrecovered = last[~last["recovered"]].merge(outputs, on=keys, how="inner")
    columns = [*keys, "tool", "turn", "error_text", "final_output"]
    frame = unrecovered.sort_values([*keys, "seq"], kind="stable")[columns].reset_index(drop=True)
    for name in (*keys, "tool", "error_text", "final_output"):
        frame[name] = frame[name].astype("string")
    frame["turn"] = frame["turn"].astype("Int64")
    return pd.DataFrame(frame)
