"""The tape: one recorded run indexed for a replay, and where the replay is in it.

A replay plays the recorded replies in order, so its turn ``n`` plays recorded turn ``n``'s reply;
the tape keeps that turn (set by the replay model as it answers), the call being dispatched (set by
the replay hook) and its attempt (set as recovery retries it). The replay's parts (its tools, hook,
recovery and done-check, in ``_replay_parts``) look up what the recording holds for that position:
the attempt's result, the veto, the decision, the rejection. The replay's clock follows the
recording's timestamps, so cooldowns and back-offs elapse as they did and nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopnb.engine import FakeClock, ToolCall, ToolResult, Turn, turns_of
from loopnb.engine._events import (
    CompletionRejected,
    Event,
    HardErrorRaised,
    RecoveryDecided,
    RunStarted,
    ToolDispatched,
)
from loopnb.engine._safety import call_key
from loopnb.engine._texts import REJECTED, VETO

RAN: frozenset[str | None] = frozenset({None, "tool_error", "tool_panic", "timeout"})
"""Producers of a result the tool itself made (it ran): the rest are the engine's refusals."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One recorded dispatch attempt: the call it sent (with any correction), and its result."""

    turn: int
    call: ToolCall
    dispatched: ToolDispatched

    @property
    def result(self) -> ToolResult:
        return self.dispatched.result


@dataclass
class Tape:
    """One recorded run, indexed, and the replay's position in it."""

    events: list[Event]
    started: RunStarted = field(init=False)
    turns: list[Turn] = field(init=False)
    clock: FakeClock = field(init=False)
    turn: int = 0
    """The recorded turn whose reply the replay is playing."""
    call: ToolCall | None = None
    """The call being dispatched (as the model made it)."""
    attempt: int = 0
    arguments: dict[str, Any] | None = None
    """The arguments the current attempt sends (a retry's correction included)."""
    cancel: Callable[[str], None] = field(default=lambda reason: None, repr=False)
    """Fires the replay's cancel token (where the recorded run was cancelled)."""

    def __post_init__(self) -> None:
        first = self.events[0]
        assert isinstance(first, RunStarted)
        self.started = first
        self.turns = turns_of(self.events)
        self.clock = FakeClock(0.0, wall=first.at)
        self._attempts: dict[tuple[int, str, int], Attempt] = {}
        self._by_key: dict[str, list[Attempt]] = {}
        self.decisions: dict[tuple[int, str, int], RecoveryDecided] = {}
        self.vetoes: dict[tuple[int, str], str] = {}
        self.rejections: dict[int, str] = {}
        for turn in self.turns:
            self._index(turn)
        for event in self.events:
            if isinstance(event, RecoveryDecided):
                self.decisions[(event.turn, event.call_id, event.attempt)] = event
            elif isinstance(event, CompletionRejected):
                self.rejections[event.turn] = event.reason
        self.cancel_at = self._cancel_point()

    def _index(self, turn: Turn) -> None:
        for d in turn.dispatched:
            sent = turn.sent(d)
            if sent is None:
                continue
            attempt = Attempt(turn.turn, sent, d)
            self._attempts[(turn.turn, d.result.call_id, d.attempt)] = attempt
            producer = d.result.producer
            if (d.executed and producer in RAN) or producer == "invalid_arguments":
                self._by_key.setdefault(call_key(sent), []).append(attempt)
            elif producer == "hook_veto" and d.result.content.startswith(VETO):
                self.vetoes[(turn.turn, d.result.call_id)] = d.result.content[len(VETO) :]
        for error in turn.soft_errors:
            if error.producer == "completion_rejected" and error.call_id is None:
                text = error.text
                self.rejections.setdefault(
                    turn.turn, text[len(REJECTED) :] if text.startswith(REJECTED) else text
                )

    def _cancel_point(self) -> tuple[int, str | None, int, str] | None:
        """Where the run was cancelled: ``(turn, call id, attempt, message)``, the call id ``None``
        when it was cancelled before the model answered; ``None`` when it was not cancelled."""
        hard = next((e for e in self.events if isinstance(e, HardErrorRaised)), None)
        if hard is None or hard.producer != "cancelled":
            return None
        turn = next((t for t in self.turns if t.turn == hard.turn), None)
        if turn is None or not turn.calls:
            return (hard.turn, None, 0, hard.message)
        done = {(d.result.call_id, d.attempt) for d in turn.dispatched}
        for call in turn.calls:
            retried = [
                d.attempt + 1 for d in turn.decisions if d.call_id == call.id and d.decision == "retry"
            ]
            for attempt in (0, *retried):
                if (call.id, attempt) not in done:
                    return (hard.turn, call.id, attempt, hard.message)
        return (hard.turn + 1, None, 0, hard.message)

    # -- the position -------------------------------------------------------------------------

    def begin(self, call: ToolCall) -> None:
        """The dispatcher reached ``call`` (its hooks run): attempt 0."""
        self.call, self.attempt, self.arguments = call, 0, None

    def retrying(self, attempt: int) -> None:
        """Recovery retries the current call: its next attempt is ``attempt``."""
        self.attempt = attempt

    def cancel_if_here(self, call_id: str | None = None) -> None:
        """Fire the cancel token when the recorded run was cancelled at this point: before the
        current attempt, or (``call_id`` given: the reply's first call) before any dispatch."""
        point = self.cancel_at
        if point is None:
            return
        turn, at_call, attempt, message = point
        if call_id is not None:
            here = (turn, at_call, attempt) == (self.turn, call_id, 0)
        else:
            now = (self.turn, self.call.id, self.attempt) if self.call is not None else None
            here = (turn, at_call, attempt) == now
        if here:
            self.cancel(message)

    def recorded(self, name: str, arguments: dict[str, Any]) -> Attempt | None:
        """What the recording holds for the current attempt of ``name(arguments)``: that very
        attempt when it sent the same call, else the same call (tool and arguments) as recorded
        nearest before this turn, else the first recorded after it; ``None`` when the recording
        never ran it."""
        key = call_key(ToolCall(name, arguments))
        if self.call is not None:
            mine = self._attempts.get((self.turn, self.call.id, self.attempt))
            ran = mine is not None and (
                mine.dispatched.executed or mine.result.producer == "invalid_arguments"
            )
            if mine is not None and ran and call_key(mine.call) == key:
                return mine
        same = self._by_key.get(key, [])
        before = [a for a in same if a.turn <= self.turn]
        if before:
            return before[-1]
        return same[0] if same else None

    def exact(self, attempt: Attempt) -> bool:
        """Whether ``attempt`` is the current attempt itself (not the same call made elsewhere)."""
        return (
            self.call is not None
            and attempt.turn == self.turn
            and attempt.result.call_id == self.call.id
            and attempt.dispatched.attempt == self.attempt
        )

    def decision(self, call_id: str, attempt: int) -> RecoveryDecided | None:
        return self.decisions.get((self.turn, call_id, attempt))

    def dispatched(self, call_id: str, attempt: int) -> ToolDispatched | None:
        found = self._attempts.get((self.turn, call_id, attempt))
        return found.dispatched if found is not None else None

    # -- the clock ----------------------------------------------------------------------------

    def advance_to(self, at: float) -> None:
        """Move the replay's clock forward to the recorded time ``at`` (never back)."""
        ahead = at - self.clock.time()
        if ahead > 0:
            self.clock.advance(ahead)

    # -- what the recording says of the run ---------------------------------------------------

    def ran(self) -> list[str]:
        """Names of the tools that ran in the recording, in order of first run."""
        names: dict[str, None] = {}
        for attempts in self._by_key.values():
            for a in attempts:
                if a.dispatched.executed and a.result.producer in RAN:
                    names[a.result.name or a.call.name] = None
        return list(names)

    def results_of(self, name: str, producer: str) -> list[ToolResult]:
        """Every recorded result of tool ``name`` with ``producer``."""
        return [
            a.result
            for attempts in self._by_key.values()
            for a in attempts
            if a.call.name == name and a.result.producer == producer
        ]
