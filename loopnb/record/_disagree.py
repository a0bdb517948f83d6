"""Where a framework's own marking of a run disagrees with the channel table.

Every reader keeps what its source said of each call and turn in ``source_status``
(``"<format>:<what it said>"``) and its format's ``marks`` say what each of those statuses means,
as one of a few ``Mark`` words. The rules below compare those marks with the channel the table
gives the same call, so that one set of rules serves every format (and a folder of mixed runs).

The rules are the audit's, which lives in this package, below the formats that know the marks:
the formats layer hands its lookup over with ``read_marks_with`` when it is imported, as it is
by every way a run of another framework reaches loopnb (``load``, ``load_many``, ``from_*``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

Mark = Literal["ok", "error", "retry", "missing", "crash", "unknown", "ended"]
"""What a source's status means: ``ok`` shown as a success (or left unset); ``error`` marked
failed the same way a run-ending failure is; ``retry`` marked as an error the model was given
back (the source tells soft from hard); ``missing`` no record of the call at all; ``crash`` a
tool's unexpected exception that ended the run; ``unknown`` a call of a tool the agent does not
have that ended the run; ``ended`` the run ended (any other cause)."""

REASONS: dict[str, str] = {
    "soft_shown_as_success": "the model read an error, the source marked the call as ok or left it unset",
    "soft_shown_as_hard": "a soft error, marked the same way as a failure that ends the run",
    "panic_ended_run": "a tool's unexpected exception ended the run, where the table makes it soft",
    "unknown_tool_ended_run": "a call of a tool the agent does not have ended the run, where the table "
    "makes it soft (not_advertised: the model reads that the tool is not available)",
    "missing_tool_record": "the model made this call, the source kept no record of it",
    "error_text_names_nothing": "the text the model read names neither what failed nor an alternative",
}
"""Each reason ``disagreements()`` gives, and what it means."""

COLUMNS = ("run_id", "turn", "call_id", "tool", "source_status", "channel", "reason", "detail")

_lookup: list[Callable[[str], Mapping[str, Mark] | None]] = []
"""The formats layer's lookup of a format's marks by its name (none until that layer is imported)."""


def read_marks_with(lookup: Callable[[str], Mapping[str, Mark] | None]) -> None:
    """Find what a format's statuses mean with ``lookup`` (a format's name to its ``marks``)."""
    _lookup[:] = [lookup]


_VAGUE_WORDS = (
    "a an the this that it error errors occurred occured while when running run tool tools call calls "
    "function please try again retry later failed failure fail unexpected internal unknown something "
    "went wrong exception has have was is an of to in during execution executing"
)
_VAGUE = frozenset(_VAGUE_WORDS.split())


def mark_of(source_status: str | None) -> Mark | None:
    """What ``source_status`` means (``None`` for loopnb's own runs or a status no reader knows)."""
    if not source_status or ":" not in source_status:
        return None
    source, said = source_status.split(":", 1)
    marks = next((found for lookup in _lookup if (found := lookup(source)) is not None), None)
    return None if marks is None else marks.get(said)


def names_nothing(text: str | None) -> bool:
    """Whether an error text names neither what failed nor an alternative: empty, or made only of
    generic words ("An error occurred while running the tool. Please try again.")."""
    words = re.findall(r"[a-z0-9_./-]+", (text or "").lower())
    return all(w.strip("./-_") in _VAGUE or not w.strip("./-_") for w in words)


def disagreements(turns: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """One row per place where the source's marking disagrees with the channel table (columns
    ``COLUMNS``), in run and turn order; empty for loopnb's own runs."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    calls = events[events["kind"] == "tool_dispatched"]
    for row in calls.itertuples(index=False):
        status = row.source_status if isinstance(row.source_status, str) else None
        mark = mark_of(status)
        soft = bool(row.is_error) if row.is_error is not pd.NA else False
        base = {
            "run_id": row.run_id,
            "turn": row.turn,
            "call_id": row.call_id,
            "tool": row.tool,
            "source_status": status,
            "channel": "soft" if soft else "ok",
        }
        text = row.text if isinstance(row.text, str) else ""
        if mark == "missing":
            rows.append({**base, "reason": "missing_tool_record", "detail": f"no record of {row.tool}()"})
        elif soft and mark == "ok":
            rows.append({**base, "reason": "soft_shown_as_success", "detail": text})
        elif soft and mark == "error":
            rows.append({**base, "reason": "soft_shown_as_hard", "detail": text})
        if soft and mark is not None and names_nothing(text):
            rows.append({**base, "reason": "error_text_names_nothing", "detail": text})
    hard = turns[(turns["channel"] == "hard") & turns["source_status"].notna()]
    ended = {"crash": "panic_ended_run", "unknown": "unknown_tool_ended_run"}
    for row in hard.itertuples(index=False):
        reason = ended.get(str(mark_of(str(row.source_status))))
        if reason is not None:
            rows.append(
                {
                    "run_id": row.run_id,
                    "turn": row.turn,
                    "call_id": None,
                    "tool": row.tools,
                    "source_status": row.source_status,
                    "channel": "hard",
                    "reason": reason,
                    "detail": row.error_text,
                }
            )
    runs = {r: i for i, r in enumerate(dict.fromkeys(turns["run_id"].astype(str)))}
    reasons = {r: i for i, r in enumerate(REASONS)}
    rows.sort(key=lambda r: (runs.get(str(r["run_id"]), -1), int(r["turn"]), reasons[r["reason"]]))
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    return out.astype({c: "string" for c in COLUMNS if c != "turn"}).astype({"turn": "Int64"})
