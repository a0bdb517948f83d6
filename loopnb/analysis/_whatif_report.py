"""What a what-if reports: ``WhatIf`` (the findings), ``Savings``, and a turn's read in words.

``read_of`` is what the model was given and read back on a turn, as a value two turns are
compared by; ``read_text`` the same in words, for ``WhatIf.read_then`` and ``read_now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopnb.engine import Turn
from loopnb.engine._safety import call_key
from loopnb.record import Recording

Read = tuple[Any, ...]
"""A turn's read, as ``read_of`` gives it."""


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


def saved(original: list[Turn], replay: list[Turn]) -> Savings:
    """What ``replay`` saves against ``original`` (negative: what it costs)."""
    a, b = _totals(original), _totals(replay)
    tokens = [
        None if x is None and y is None else (x or 0) - (y or 0) for x, y in zip(a[3:], b[3:], strict=True)
    ]
    return Savings(a[0] - b[0], a[1] - b[1], a[2] - b[2], tokens[0], tokens[1])


@dataclass(frozen=True, eq=False)
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


def how(then: Turn | None, now: Turn) -> str:
    """The change of a turn in words: ``soft (tool_error) -> hard (loop_detected)``."""
    if then is None:
        return f"the recorded run had ended; the replay goes on ({now.channel})"
    a, b = (f"{t.channel}" + (f" ({t.producer})" if t.producer else "") for t in (then, now))
    if a != b:
        return f"{a} -> {b}"
    return f"{a} both, but the text the model reads differs"
