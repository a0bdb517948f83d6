"""Recovery per call: the rule the live view's gauge and the frames share, and the retries table.

``RecoveryFold`` is pandas-free: it folds a run's dispatches, recovery decisions and loop
detections into one ``CallRecovery`` per tool call. ``loopnb.recovery_attempts`` makes its rows a
frame and the live view's gauge shows ``turn_call`` of a turn's calls: one rule for both.
``Audit.retries`` is the fold's calls that went to recovery (``history.retries_from_events``);
``retries_from_turns``, for a turns frame alone, gives one row per turn with retries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from loopnb.engine import MAX_RECOVERY_ATTEMPTS

if TYPE_CHECKING:
    import pandas as pd

"""``MAX_RECOVERY_ATTEMPTS``: retries a call may get (attempt 0 plus 5)."""

CallOutcome = Literal["ok", "recovered", "gave_up", "exhausted", "still_failing", "no_recovery"]
CALL_OUTCOMES: tuple[CallOutcome, ...] = (
    "ok",
    "recovered",
    "gave_up",
    "exhausted",
    "still_failing",
    "no_recovery",
)
"""``ok``: succeeded at once; ``recovered``: ok after retries; ``gave_up``: the strategy answered
skip, ask_user or fail; ``exhausted``: it asked for a retry past the ceiling; ``still_failing``:
the run ended while recovery was at work; ``no_recovery``: it failed and no strategy ran on it
(none configured, or a failure recovery does not handle: a refusal, a loop refusal)."""
CallStatus = Literal["ok", "failed", "retrying", "gave_up", "exhausted"]
_LOOP_SETTINGS = re.compile(r"warn_after=(\d+), stop_after=(\d+)")


@dataclass(frozen=True, slots=True)
class LoopCount:
    """The loop detector acting on a call: ``count`` identical failing calls in a row (this one
    included), its ``action``, and its thresholds when the run's settings name them: calls past
    ``warn_after`` are refused, the one past ``stop_after`` ends the run."""

    count: int
    action: str
    warn_after: int | None = None
    stop_after: int | None = None

    def text(self) -> str:
        """In words: ``loop detector: 4 identical calls in a row, refused (refuses from 4, stops at 6)``."""
        did = {"refuse": "refused", "stop": "the run stopped"}.get(self.action, self.action)
        limits = (
            f" (refuses from {self.warn_after + 1}, stops at {self.stop_after + 1})"
            if self.warn_after is not None and self.stop_after is not None
            else ""
        )
        return f"loop detector: {self.count} identical calls in a row, {did}{limits}"


@dataclass(slots=True)
class CallRecovery:
    """One tool call and what recovery made of it, as its events come.

    ``retries`` is the last retry dispatched (0: only the original call); ``decided_at`` the
    attempt the last recovery decision was about; ``producer`` the last attempt's, ``first`` the
    original call's; ``loop`` set when the loop detector refused the call.
    """

    turn: int
    call_id: str
    tool: str
    is_error: bool
    first: str | None
    producer: str | None
    retries: int = 0
    decision: str | None = None
    decided_at: int | None = None
    exhausted: bool = False
    loop: LoopCount | None = None

    @property
    def outcome(self) -> CallOutcome:
        """What recovery made of the call (see ``CALL_OUTCOMES``)."""
        if self.exhausted:
            return "exhausted"
        if self.decision is None:
            return "no_recovery" if self.is_error else "ok"
        if self.decision != "retry":
            return "gave_up"
        return "still_failing" if self.is_error else "recovered"

    @property
    def status(self) -> CallStatus:
        """Where the call is now: as ``outcome`` once settled; ``retrying`` while a retry is
        decided but not yet dispatched, ``failed`` while an attempt waits for a decision."""
        if self.exhausted:
            return "exhausted"
        if self.decision is not None and self.decided_at == self.retries:
            return "retrying" if self.decision == "retry" else "gave_up"
        return "failed" if self.is_error else "ok"


def loop_thresholds(settings: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """``(warn_after, stop_after)`` from a run's recorded ``settings["loop_detector"]``, if named."""
    found = _LOOP_SETTINGS.search(str(settings.get("loop_detector") or ""))
    return (int(found[1]), int(found[2])) if found else (None, None)


def strategy_of(settings: Mapping[str, Any]) -> str | None:
    """The recovery strategy a run's ``settings`` record (its repr), or None when none was configured."""
    value = settings.get("recovery")
    return value if isinstance(value, str) and value else None


class RecoveryFold:
    """One run's calls and what recovery made of them (a new ``start`` starts over).

    Fed by the primitives of ``ToolDispatched``, ``RecoveryDecided``, ``DetectorFired`` and
    ``HardErrorRaised``; each costs a few attribute writes (the live view calls it per event).
    """

    def __init__(self) -> None:
        self.start({})

    def start(self, settings: Mapping[str, Any]) -> None:
        self.strategy = strategy_of(settings)
        self.warn_after, self.stop_after = loop_thresholds(settings)
        self.calls: list[CallRecovery] = []
        self.loops: dict[int, LoopCount] = {}
        """The loop detector's last word per turn."""
        self._refusal: LoopCount | None = None

    def dispatched(
        self, turn: int, call_id: str, tool: str, attempt: int, is_error: bool, producer: str | None
    ) -> CallRecovery:
        calls = self.calls
        call = calls[-1] if calls else None
        if attempt == 0 or call is None or call.call_id != call_id or call.turn != turn:
            call = CallRecovery(turn, call_id, tool, is_error, producer, producer)
            if producer == "loop_refusal" and self._refusal is not None:
                call.loop, self._refusal = self._refusal, None
            calls.append(call)
        else:
            call.retries, call.is_error, call.producer = attempt, is_error, producer
        return call

    def decided(self, turn: int, call_id: str, attempt: int, max_attempts: int, decision: str) -> None:
        call = self.calls[-1] if self.calls else None
        if call is not None and call.call_id == call_id and call.turn == turn:
            call.decision, call.decided_at = decision, attempt
            if decision == "retry" and attempt >= max_attempts:
                call.exhausted = True

    def detected(self, turn: int, detector: str, action: str, count: int) -> None:
        if detector == "loop":
            loop = self.loops[turn] = LoopCount(count, action, self.warn_after, self.stop_after)
            self._refusal = loop if action == "refuse" else None

    def hard(self, producer: str | None) -> None:
        if producer == "tool_recovery_exhausted" and self.calls:
            self.calls[-1].exhausted = True


def turn_call(calls: Sequence[CallRecovery]) -> CallRecovery | None:
    """The call a turn's gauge shows: the one with the most retries, then one recovery ran on,
    then a failed one; the latest of equals."""
    best: CallRecovery | None = None
    rank: tuple[int, bool, bool] = (-1, False, False)
    for call in calls:
        mine = (call.retries, call.decision is not None, call.is_error)
        if mine >= rank:
            best, rank = call, mine
    return best


DECISIONS = tuple(["retry", "skip", "ask_user", "fail"])
RETRY_OUTCOMES = tuple(["recovered", "still_failing", "gave_up", "exhausted"])


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
        # str() of each value: a missing producer is pd.NA under either pandas' string categories
        for p, c in zip(
            map(str, t["producer"].astype(object)), map(str, t["channel"].astype(object)), strict=True
        )
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
            "last_decision": pd.Categorical([None] * len(t), categories=DECISIONS),
            "outcome": pd.Categorical(outcome, categories=RETRY_OUTCOMES),
        }
    ).reset_index(drop=True)
