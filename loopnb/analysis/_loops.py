"""The safety detectors' table of ``Audit.loops``: each detector's actions, counted.

With events, each ``detector_fired``; from turns alone, the producers that show a detector acting
(a ``loop_detected`` stop told apart from a convergence or ``max_turns`` stop by its message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from loopnb.engine._events import DetectorAction, DetectorName
from loopnb.engine._texts import CONVERGED, MAX_TURNS_REACHED

if TYPE_CHECKING:
    import pandas as pd

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


def loops_table(turns: pd.DataFrame, events: pd.DataFrame | None, keys: list[str]) -> pd.DataFrame:
    """Per ``detector`` and ``action``: ``fired`` and ``runs`` (see ``Audit.loops``)."""
    import pandas as pd

    if events is not None:
        e = events[events["kind"] == "detector_fired"]
        pairs = list(zip(e["detector"].astype(str), e["action"].astype(str), strict=True))
        runs = e[keys].astype(str).agg("/".join, axis=1).tolist() if len(e) else []
    else:
        t = turns[turns["producer"].isin(list(_DETECTOR_OF))]
        pairs = [
            _detector_of(str(p), text)
            for p, text in zip(t["producer"], t["error_text"].astype(object), strict=True)
        ]
        runs = t[keys].astype(str).agg("/".join, axis=1).tolist() if len(t) else []
    counts: dict[tuple[str, str], list[str]] = {}
    for pair, run in zip(pairs, runs, strict=True):
        counts.setdefault(pair, []).append(run)
    pairs_seen = sorted(counts)
    return pd.DataFrame(
        {
            "detector": pd.Categorical([k[0] for k in pairs_seen], categories=get_args(DetectorName)),
            "action": pd.Categorical([k[1] for k in pairs_seen], categories=get_args(DetectorAction)),
            "fired": pd.array([len(counts[k]) for k in pairs_seen], dtype="Int64"),
            "runs": pd.array([len(set(counts[k])) for k in pairs_seen], dtype="Int64"),
        }
    )
