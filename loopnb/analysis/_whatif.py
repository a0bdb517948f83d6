"""``what_if(recording, **changes)``: a recorded run replayed under another policy, to where it diverges.

The replay runs loopnb's engine with the recorded replies as the model (``scripted_from``), a
replay tool per recorded tool answering each call from the recording, and the recorded run's
policy rebuilt from its recording (``_whatif_policy``), with the changes on top. It runs twice:

1. unchanged (the *baseline*): the recording as the engine replays it. For loopnb's own runs it
   reads turn for turn what the recording holds; where it cannot (another framework's wording of
   a refusal, an ending only that framework makes), the turn is listed in ``unreproduced``;
2. changed, watched turn by turn against the baseline: at the first turn where the model would
   read anything else, the recorded reply that follows no longer answers what it would see, so
   the replay stops there (or ends there, when the new policy ends the run).

Both runs are on a ``FakeClock`` that follows the recording's timestamps: back-off, recovery
delays and breaker cooldowns take no time and elapse as they did. The one real wait is a
recorded timeout, which lasts the engine's timeout (the timeout middleware runs on the event
loop's time).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from loopnb.analysis._compare import Comparison, compare
from loopnb.analysis._scripted import run_events
from loopnb.analysis._tape import Tape
from loopnb.analysis._whatif_policy import checked_changes, replay_engine
from loopnb.analysis._whatif_report import Read, WhatIf, how, read_of, read_text, saved
from loopnb.engine import CancelToken, Engine, LoopError
from loopnb.engine._events import Event, RunFinished, TurnFinished, TurnStarted
from loopnb.engine._turns import Turn, TurnAssembler, turns_of
from loopnb.record import Recording

STOPPED = "what-if: stopped where the replay diverged"
"""The reason the replay's token is fired with when it stops at the divergence."""


def what_if(data: Any, *, run: str | None = None, to_end: bool = False, **changes: Any) -> Replayed:
    """Replay a recorded run under another policy until the first turn the model would read
    something else, and say what the change would have saved.

    Returns a ``Comparison`` of the recorded run (side ``recorded``) against the replay (side
    ``what if``), so the comparison's widget, page and totals show it; its ``what_if`` holds the
    what-if's own findings (a ``WhatIf``: the divergence turn, what the model read then and would
    read now, what the change saves or costs).

    Args:
        data: a ``Recording``, a ``Recorder`` or a run's events (a turns frame lacks each call's
            arguments and result, which a replay needs). Another framework's run replays too, its
            tools under the names it recorded, even names ``@tool`` refuses (``files.read``): a
            replay's tools never reach a model's API.
        run: the run to replay when ``data`` holds several.
        to_end: go on past the divergence, playing the recorded replies as though the model had
            asked the same whatever it read (a projection: ``WhatIf.projected``), to where the new
            policy ends the run or the recording runs out.
        **changes: ``Engine`` keyword arguments to run it with instead of the recorded ones
            (``loop_detector``, ``recovery``, ``convergence``, ``breakers``, ``max_turns``,
            ``timeout``, ``context``, ``done``, ``hooks``, ``suggestions``); ``tools`` swaps a
            tool's behaviour (a ``Tool`` or typed function run for real, a ``str`` every call
            succeeds with, a ``ToolError`` every call fails with); ``error_text`` gives a tool (or
            ``"tool_error"``: every tool) another error text, as ``SweepConfig.error_text`` does.
            Every other tool is answered from the recording, so the original tools need not be
            importable.

    Raises:
        TypeError: ``data`` is none of those, or a change is unknown or of the wrong kind (the
            error names it and what it takes).
        ValueError: ``data`` holds several runs and ``run`` names none of them, or a change names
            a tool the run did not have.
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        raise TypeError(
            "what_if() needs the run's events: a turns frame keeps each turn's tools and error text, not "
            "the calls' arguments or their results, which a replay answers from; pass the Recording or "
            "the Recorder (scripted_from() takes a turns frame, for the replies alone)"
        )
    if not isinstance(to_end, bool):
        raise TypeError(f"what_if(to_end=...): expected True or False; got {to_end!r:.60}")
    checked = checked_changes(changes)
    events = run_events(data, run, "what_if()")
    baseline = _replay(events, {}, None, "replay")
    changed = baseline
    if checked:
        expected = {t.turn: read_of(t) for t in baseline.turns}
        changed = _replay(events, checked, expected, "what-if", stop=not to_end)
    report = _report(data, events, baseline, changed, checked, projected=to_end)
    return Replayed(compare(report.original, report.replay, labels=LABELS), report)


LABELS = ("recorded", "what if")
"""The sides of a what-if's comparison."""


class Replayed(Comparison):
    """The comparison ``what_if`` returns: the recorded run against its replay, and ``what_if``,
    the what-if's findings (which its widget, picture and page show under the headline)."""

    def __init__(self, base: Comparison, what_if: WhatIf) -> None:
        super().__init__(base.sides, base.turns, base.totals, base.divergence)
        self.what_if = what_if
        """Where the new policy changes what the model reads, and what it saves (a ``WhatIf``)."""

    def __repr__(self) -> str:
        return f"{super().__repr__()}; {self.what_if!r}"


@dataclass(frozen=True)
class Played:
    """One replay: its events (cut at the divergence), its turns, where it diverged, its notes."""

    events: list[Event]
    turns: list[Turn]
    diverged: int | None
    notes: tuple[str, ...]
    ran_out: int | None = None
    """The turn the replay reached past the recording's last (no recorded reply answers it)."""

    @property
    def ended(self) -> str | None:
        """``ok`` or the hard producer the replay ended with; ``None`` when it stopped."""
        end = next((e for e in self.events if isinstance(e, RunFinished)), None)
        if end is None:
            return None
        return "ok" if end.outcome == "ok" else end.producer


def _replay(
    events: list[Event],
    changes: dict[str, Any],
    expected: dict[int, Read] | None,
    tag: str,
    *,
    stop: bool = True,
) -> Played:
    """Run the replay engine to the end of the recording, or (``expected`` given, and ``stop``) to
    the first turn that reads otherwise than ``expected``."""
    tape = Tape(events)
    token = CancelToken()
    replay = replay_engine(tape, changes, token.cancel)
    seen: list[Event] = []
    assembler = TurnAssembler()
    diverged: list[int] = []
    last = len(tape.turns)
    before_reply = tape.cancel_at if tape.cancel_at is not None and tape.cancel_at[1] is None else None

    def observe(event: Event) -> None:
        seen.append(event)
        if isinstance(event, TurnStarted):
            if event.turn > last:
                token.cancel(STOPPED)  # past the recording: no recorded reply answers this turn
            elif before_reply is not None and event.turn == before_reply[0]:
                token.cancel(before_reply[3])  # the recorded run was cancelled before the model answered
        turn = assembler.add(event)
        if (
            turn is not None
            and expected is not None
            and not diverged
            and read_of(turn) != expected.get(turn.turn)
        ):
            diverged.append(turn.turn)
            if stop:
                token.cancel(STOPPED)

    engine = Engine(observers=[observe], **replay.kwargs)
    run_id = f"{tape.started.run_id}+{tag}"
    with contextlib.suppress(LoopError):  # a hard ending is part of the replay (its events say which)
        engine.run(replay.task, cancel=token, run_id=run_id)
    played = seen
    if diverged and stop:
        played = _cut(seen, diverged[0])
    elif any(isinstance(e, TurnStarted) and e.turn > last for e in seen):
        played = _cut(seen, last)
    ran_out = last + 1 if len(played) < len(seen) and not (diverged and stop) else None
    return Played(played, turns_of(played), diverged[0] if diverged else None, tuple(replay.notes), ran_out)


def _cut(events: list[Event], turn: int) -> list[Event]:
    """The events up to the end of ``turn``: what came after (the stop) is not part of the replay,
    unless the run itself ended on that turn."""
    ends = [i for i, e in enumerate(events) if isinstance(e, TurnFinished) and e.turn == turn]
    if not ends:
        return events
    end = ends[-1]
    if any(isinstance(e, TurnStarted) for e in events[end + 1 :]):
        return events[: end + 1]
    return events


def _ran_out(played: Played, original: dict[int, Turn]) -> int | None:
    """The turn the replay went past the recorded replies: cut there, or ended because every
    script was spent where the recording did not end so."""
    if played.ran_out is not None:
        return played.ran_out
    last = played.turns[-1] if played.turns else None
    if last is None or last.producer != "fallback_exhausted" or last.hard is None:
        return None
    recorded = original.get(last.turn)
    spent = "script exhausted after" in last.hard.message
    return last.turn if spent and (recorded is None or recorded.producer != "fallback_exhausted") else None


def _report(
    data: Any,
    events: list[Event],
    baseline: Played,
    changed: Played,
    changes: dict[str, Any],
    *,
    projected: bool,
) -> WhatIf:
    original = turns_of(events)
    by_turn = {t.turn: t for t in original}
    unreproduced = {
        t.turn for t in baseline.turns if t.turn not in by_turn or read_of(by_turn[t.turn]) != read_of(t)
    }
    unreproduced |= {t.turn for t in original if t.turn > len(baseline.turns)}
    d = changed.diverged
    now = next((t for t in changed.turns if t.turn == d), None)
    ran_out = _ran_out(changed, by_turn)
    ended = None if ran_out is not None else changed.ended
    meta = getattr(data, "meta", None)
    source = meta.get("source") if isinstance(meta, dict) else None
    shown = {k: repr(v) for k, v in changes.items()}
    return WhatIf(
        changes=shown,
        turn=d,
        read_then=read_text(by_turn.get(d)) if d is not None else None,
        read_now=read_text(now),
        how=None if now is None else how(by_turn.get(now.turn), now),
        ended=ended,
        saved=saved(original, changed.turns) if ended is not None else None,
        projected=projected and d is not None,
        ran_out=ran_out,
        unreproduced=tuple(sorted(unreproduced)),
        notes=tuple(dict.fromkeys([*baseline.notes, *changed.notes])),
        original=Recording.from_events(events, meta={"source": source or {"format": "loopnb"}}),
        replay=Recording.from_events(changed.events, meta={"what_if": shown}),
        baseline=Recording.from_events(baseline.events, meta={"what_if": {}}),
    )
