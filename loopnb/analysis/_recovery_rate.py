"""The recovery rate and false successes: did a tool's failure get over, and did the run admit it?

Both read the events frame: the soft errors the model read of each tool (``soft_error_returned``
rows with a tool), and each tool's successful calls (``tool_dispatched`` rows that ran and were no
error). A soft error is *recovered* when a later successful call of the same tool follows it in
the same run (UNDERWRITE's measure, arXiv 2602.00456: it tracks success better than the error
count). A *false success* is a run that ended with an answer (not hard) while some tool's last
soft error was never followed by a success of that tool: the run claimed to be done on top of a
failure it never got past. The fault a soft error came from is the injected label of the
dispatch it answers (``natural`` when nothing was injected).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

RateBy = Literal["run", "tool", "fault"]
NATURAL = "natural"
"""The ``fault`` of a soft error nothing injected."""

_KEY = {"run": "run_id", "tool": "tool", "fault": "fault"}


def soft_errors(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Each soft error a tool gave the model: ``keys``, ``seq``, ``turn``, ``tool``, ``text``,
    ``fault`` and ``recovered`` (a later success of the same tool in the same run)."""
    import pandas as pd

    e = events
    errors = e[(e["kind"] == "soft_error_returned") & e["tool"].notna()]
    cols = [*keys, "seq", "turn", "tool", "call_id", "text"]
    errors = errors[cols].reset_index(drop=True)
    dispatched = e[e["kind"] == "tool_dispatched"]
    labels = dispatched[[*keys, "call_id", "injected"]].dropna(subset=["call_id"])
    labels = labels.drop_duplicates([*keys, "call_id"], keep="last")  # the call's last dispatch
    errors = errors.merge(labels, on=[*keys, "call_id"], how="left")
    errors["fault"] = errors["injected"].astype("string").fillna(NATURAL)
    ok = dispatched[dispatched["executed"].eq(True) & dispatched["is_error"].eq(False)]
    last_ok = ok.groupby([*keys, "tool"], observed=True)["seq"].max().rename("last_ok").reset_index()
    errors = errors.merge(last_ok, on=[*keys, "tool"], how="left")
    errors["recovered"] = (errors["last_ok"] > errors["seq"]).fillna(False).astype(bool)
    return pd.DataFrame(errors.drop(columns=["injected", "last_ok"]))


def recovery_rate(events: pd.DataFrame, keys: list[str], by: RateBy) -> pd.DataFrame:
    """Per run, tool or fault: ``soft_errors``, how many were ``recovered``, and the ``rate``."""
    import pandas as pd

    if by not in _KEY:
        raise ValueError(f"recovery_rate(by={by!r}): expected 'run', 'tool' or 'fault'")
    errors = soft_errors(events, keys)
    group = keys if by == "run" else [_KEY[by]]
    counted = errors.groupby(group, observed=True, sort=True)["recovered"].agg(["size", "sum"]).reset_index()
    out = counted.rename(columns={"size": "soft_errors", "sum": "recovered"})
    out["soft_errors"] = pd.array(out["soft_errors"].to_numpy(), dtype="Int64")
    out["recovered"] = pd.array(out["recovered"].to_numpy(), dtype="Int64")
    out["rate"] = pd.array(
        out["recovered"].to_numpy(float) / out["soft_errors"].to_numpy(float), dtype="Float64"
    )
    for key in group:
        out[key] = out[key].astype("string")
    return out[[*group, "soft_errors", "recovered", "rate"]]


def false_success(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Runs that ended with an answer while some tool's last soft error was never got past: one
    row per (run, tool), with that error's ``turn`` and ``error_text``, and the run's ``final_output``."""
    import pandas as pd

    columns = [*keys, "tool", "turn", "error_text", "final_output"]
    errors = soft_errors(events, keys)
    finished = events[(events["kind"] == "run_finished") & events["channel"].eq("ok")]
    answers = finished[[*keys, "text"]].rename(columns={"text": "final_output"})
    last = errors.sort_values("seq").drop_duplicates([*keys, "tool"], keep="last")
    stuck = last[~last["recovered"]].merge(answers, on=keys, how="inner")
    out = stuck.rename(columns={"text": "error_text"})[columns].reset_index(drop=True)
    for col in (*keys, "tool", "error_text", "final_output"):
        out[col] = out[col].astype("string")
    out["turn"] = pd.array(out["turn"].to_numpy(), dtype="Int64")
    return out
