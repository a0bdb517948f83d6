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

from loopnb.engine._cancel import CancelToken
from loopnb.engine._engine import Engine
from loopnb.engine._errors import LoopError
from loopnb.engine._events import Event, RunFinished, TurnFinished, TurnStarted
from loopnb.engine._safety import call_key
from loopnb.engine._turns import Turn, TurnAssembler, turns_of
from loopnb.record._compare import Comparison, compare
from loopnb.record._recording import Recording
from loopnb.record._scripted import run_events
from loopnb.record._tape import Tape
from loopnb.record._whatif_policy import checked_changes, replay_engine

STOPPED = "what-if: stopped where the replay diverged"
"""The reason the replay's token is fired with when it stops at the divergence."""

Read = tuple[Any, ...]


def what_if(data: Any, *, run: str | None = None, to_end: bool = False, **changes: Any) -> Replayed:
    """Replay a recorded run under another policy until the first turn the model would read
    something else, and say what the change would have saved.

    Returns a ``Comparison`` of the recorded run (side ``recorded``) against the replay (side
    ``what if``), so the comparison's widget, page and totals show it; its ``what_if`` holds the
    what-if's own findings (a ``WhatIf``: the divergence turn, what the model read then and would
    read now, what the change saves or costs).

    Args:
        data: a ``Recording``, a ``Recorder`` or a run's events (a turns frame lacks each call's
            arguments and result, which a replay needs).
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
    the what-if's findings."""

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


def read_of(turn: Turn) -> Read:
    """What the model was given on ``turn`` and read back: its reply, each result (text, error,
    producer, note), the engine's feedback, the hard ending, the channel and producer."""
    reply = turn.reply
    said = None if reply is None else (reply.text, tuple((c.id, call_key(c)) for c in reply.tool_calls))
    results = tuple((r.call_id, r.name, r.content, r.is_error, r.producer, r.note) for r in turn.results)
    feedback = tuple((m.content, m.producer) for m in turn.feedback)
    hard = None if turn.hard is None else (turn.hard.producer, turn.hard.message)
    return (said, results, feedback, hard, turn.channel, turn.producer)


def read_text(turn: Turn | None) -> str | None:
    """What the model read on ``turn``, one line per result or message (``None``: no such turn)."""
    if turn is None:
        return None
    if turn.hard is not None:
        return f"the run ended hard ({turn.hard.producer}): {turn.hard.message}"
    lines = []
    for r in turn.results:
        said = f"error ({r.producer})" if r.is_error else "ok"
        lines.append(f"{r.name} -> {said}: {r.content}" + (f" [note: {r.note}]" if r.note else ""))
    lines += [f"{m.producer}: {m.content}" for m in turn.feedback]
    if not lines:
        return "its final reply was accepted" if turn.reply is not None and not turn.calls else "nothing"
    return "\n".join(lines)


@dataclass(frozen=True)
class Savings:
    """What the new policy saves against the recorded run (negative: what it costs): turns, tool
    calls the model made, tool executions (recovery's retries included) and tokens (``None`` when
    no turn reported usage)."""

    turns: int
    calls: int
    executions: int
    input_tokens: int | None
    output_tokens: int | None

    def text(self) -> str:
        """``3 turns, 3 calls, 1 tool execution, 553 tokens``."""
        counts = [(self.turns, "turn"), (self.calls, "call"), (self.executions, "tool execution")]
        if self.input_tokens is not None or self.output_tokens is not None:
            counts.append(((self.input_tokens or 0) + (self.output_tokens or 0), "token"))
        return ", ".join(f"{n} {what}{'' if abs(n) == 1 else 's'}" for n, what in counts)


def _totals(turns: list[Turn]) -> tuple[int, int, int, int | None, int | None]:
    usage = [t.reply.usage for t in turns if t.reply is not None and t.reply.usage is not None]
    return (
        len(turns),
        sum(len(t.calls) for t in turns),
        sum(1 for t in turns for d in t.dispatched if d.executed),
        sum(u.input_tokens for u in usage) if usage else None,
        sum(u.output_tokens for u in usage) if usage else None,
    )


def _saved(original: list[Turn], replay: list[Turn]) -> Savings:
    a, b = _totals(original), _totals(replay)
    tokens = [
        None if x is None and y is None else (x or 0) - (y or 0) for x, y in zip(a[3:], b[3:], strict=True)
    ]
    return Savings(a[0] - b[0], a[1] - b[1], a[2] - b[2], tokens[0], tokens[1])


@dataclass(frozen=True)
class WhatIf:
    """What a what-if found: where the new policy changes what the model reads, and its effect.

    Attributes:
        changes: each change, as given (its repr).
        turn: the first turn where the model would read something else (counted from 1), or
            ``None`` when the new policy changes nothing the model reads.
        read_then: what the model read on that turn in the recording (``None``: it had ended).
        read_now: what it would read under the new policy.
        how: the change in words (channel and producer then and now).
        ended: how the replay ended: ``ok`` or the hard producer (the new policy ends the run
            there), or ``None`` when it stopped at the divergence, where the recorded replies no
            longer answer what the model would see (or, projected, ran out).
        saved: turns, calls, tool executions and tokens the new policy saves against the recording
            (negative: what it costs); ``None`` when the replay did not end (what the model would
            have done next is not in the recording).
        projected: the replay went on past the divergence as though the model had asked the same
            (``what_if(..., to_end=True)``): ``ended`` and ``saved`` rest on that assumption.
        ran_out: the turn at which the replay went past the recorded replies, if it did (the new
            policy lets the run go on longer than the recording shows).
        unreproduced: turns the unchanged replay reads otherwise than recorded (another
            framework's wording of a refusal, an ending only it makes); the what-if is measured
            against the unchanged replay, so these are not the change's doing.
        notes: what of the recorded policy could not be rebuilt exactly.
        original, replay, baseline: the recorded run, the changed replay and the unchanged one,
            as recordings.
    """

    changes: dict[str, str]
    turn: int | None
    read_then: str | None
    read_now: str | None
    how: str | None
    ended: str | None
    saved: Savings | None
    projected: bool
    ran_out: int | None
    unreproduced: tuple[int, ...]
    notes: tuple[str, ...]
    original: Recording
    replay: Recording
    baseline: Recording

    def text(self) -> str:
        """The what-if in a few lines of words."""
        changed = ", ".join(f"{k}={v}" for k, v in self.changes.items()) or "nothing changed"
        lines = [f"what if {changed}:"]
        if self.turn is None:
            lines.append("  the model would read exactly what it read: the run goes as recorded")
        else:
            lines.append(f"  turn {self.turn}: {self.how}")
            lines.append(f"  read then: {_one_line(self.read_then)}")
            lines.append(f"  read now:  {_one_line(self.read_now)}")
        if self.projected and self.turn is not None:
            lines.append("  projected past it, as though the model had asked the same:")
        if self.ran_out is not None:
            lines.append(
                f"  at turn {self.ran_out} the run goes past the recorded replies: it would run longer"
            )
        elif self.saved is not None:
            end = "ends ok" if self.ended == "ok" else f"ends hard ({self.ended})"
            if self.turn is None:
                lines.append(f"  it {end}, as recorded: saves {self.saved.text()}")
            else:
                last = len(self.replay.turns)
                lines.append(f"  the run {end} at turn {last}: saves {self.saved.text()}")
        else:
            lines.append("  the replay stops there: what the model would do next is not in the recording")
        if self.unreproduced:
            shown = ", ".join(map(str, self.unreproduced))
            lines.append(f"  (the unchanged replay reads turn(s) {shown} otherwise than recorded)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        at = "no divergence" if self.turn is None else f"diverges at turn {self.turn}"
        saved = "" if self.saved is None else f", saves {self.saved.text()}"
        return f"WhatIf({', '.join(self.changes) or 'unchanged'}: {at}{saved})"


def _one_line(text: str | None) -> str:
    if text is None:
        return "(the run had ended)"
    flat = " | ".join(text.splitlines())
    return flat if len(flat) <= 160 else flat[:157] + "..."


def _how(then: Turn | None, now: Turn) -> str:
    if then is None:
        return f"the recorded run had ended; the replay goes on ({now.channel})"
    a, b = (f"{t.channel}" + (f" ({t.producer})" if t.producer else "") for t in (then, now))
    if a != b:
        return f"{a} -> {b}"
    return f"{a} both, but the text the model reads differs"


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
        how=None if now is None else _how(by_turn.get(now.turn), now),
        ended=ended,
        saved=_saved(original, changed.turns) if ended is not None else None,
        projected=projected and d is not None,
        ran_out=ran_out,
        unreproduced=tuple(sorted(unreproduced)),
        notes=tuple(dict.fromkeys([*baseline.notes, *changed.notes])),
        original=Recording.from_events(events, meta={"source": source or {"format": "loopnb"}}),
        replay=Recording.from_events(changed.events, meta={"what_if": shown}),
        baseline=Recording.from_events(baseline.events, meta={"what_if": {}}),
    )
