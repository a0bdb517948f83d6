"""Input checks of ``audit()``: each frame conformed to its row schema, and the events narrowed.

A frame that cannot be audited is refused with an error naming the frame, what is wrong with it
and which frame was expected; ``of_turns`` keeps only the events of the turns being audited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopnb.record import Table

if TYPE_CHECKING:
    import pandas as pd


def checked(df: Any, table: Table, name: str) -> pd.DataFrame:
    """``df`` conformed to ``table`` (plus its ``source`` column), or an error naming what is wrong."""
    import pandas as pd

    from loopnb.record._frames import conform

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"audit(): {name} must be a DataFrame, got {type(df).__name__}")
    missing = [c for c in table.names if c not in df.columns]
    if missing:
        hint = ""
        if name == "turns" and "kind" in df.columns:
            hint = " (this looks like an events frame: pass the turns first, audit(turns, events))"
        elif name == "events" and "recovery_attempts" in df.columns:
            hint = " (this looks like a turns frame: pass the turns first, audit(turns, events))"
        which = "" if name == "turns" else ", table='events'"
        raise ValueError(
            f"audit(): the {name} frame is missing columns {', '.join(missing)}; expected a {name} "
            f"frame (Recorder.{name}, load(path).{name} or load_many(paths{which})){hint}"
        )
    try:
        conformed = conform(df, table)
    except ValueError as exc:
        raise ValueError(f"audit(): the {name} frame: {exc}") from exc
    if "source" in df.columns:
        conformed.insert(0, "source", df["source"].astype("string").array)  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
    return conformed


def no_repeated_turns(turns: pd.DataFrame, keys: list[str]) -> None:
    """Raise when a run has a turn twice: two recordings reusing a run id, stacked without
    ``load_many``'s ``source`` column, would otherwise be audited as one run."""
    repeated = turns[turns.duplicated([*keys, "turn"])]
    if len(repeated):
        first = repeated.iloc[0]
        where = ", ".join(f"{k} {first[k]!r}" for k in keys)
        raise ValueError(
            f"audit(): the turns frame has turn {first['turn']} of {where} more than once; "
            "recordings that reuse a run_id need load_many's 'source' column to tell them apart"
        )


def of_turns(events: pd.DataFrame, turns: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The events of ``turns``: those inside one of its turns, and its runs' events outside any."""
    import pandas as pd

    if not len(events):
        return events
    runs = pd.MultiIndex.from_frame(turns[keys])
    numbered = pd.MultiIndex.from_frame(turns[[*keys, "turn"]])
    in_run = pd.MultiIndex.from_frame(events[keys]).isin(runs)
    in_turn = pd.MultiIndex.from_frame(events[[*keys, "turn"]]).isin(numbered)
    keep = in_run & (events["turn"].isna().to_numpy() | in_turn)
    if keep.all():
        return events
    return events[keep].reset_index(drop=True)
