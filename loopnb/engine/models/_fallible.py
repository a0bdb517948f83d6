"""``FallibleModel``: the embedded default, a simulated model that guesses and reads its errors.

It behaves like a real model working through an unfamiliar interface: on a first try it slips
(misspells a path, guesses an argument shape, calls a tool that does not exist), then it reads
the text of the soft error it gets back and adapts. It is stateless: every reply is decided from
the transcript and the advertised tools alone, with randomness seeded by
``(seed, turn, call, purpose)``, so the same run replays identically.

How it reads an error (first rule that matches; ``stubbornness`` p ignores even a good text with
probability p and repeats the call):

============================================  ================================================
text                                          what it does next
============================================  ================================================
``dispatch refused before execution``         stops repeating: gives up on the step
``blocked by policy`` / ``temporarily         routes around: skips the step and says so in the
unavailable``                                 final answer
``timed out``                                 tries once more, then gives up on the step
``tool 'x' is not available``                 the closest advertised name (difflib)
``Tool not found: x. Available: ...``         the suggestion ``Did you mean 'y'?``, else the
                                              closest name in the Available list
``Did you mean 'z'?`` (any other text)        replaces the value it sent with ``z``
invalid arguments naming a field              fixes that field from the tool's JSON schema
                                              (outside an ``enum``: the closest choice)
a text naming a value it sent                 puts back the value it meant (the slip)
a text listing values close to one it sent    takes the closest (``files: src/main.rs, ...``)
a text naming a value it sent (as meant)      gives up: what it meant does not exist
``Tool "x" panicked``                         tries once more, then gives up on the step
anything else (``error``, ``failed``)         cannot tell what to fix: repeats the same call
============================================  ================================================

Repeating is what makes the loop detector visible: the model reads its failure politely and
changes nothing.

Its call ids read ``{name}-{turn}-{step}``, so that after compaction has dropped older turns it
carries on from its latest visible reply, like a real model, instead of starting its plan over.

Its parts live beside it: the slips in ``mistakes``, the corrections it draws from an error text
in ``corrections``, the plan it derives from a task in ``plans``, its argument checks in ``checks``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loopnb.engine._messages import Message, ModelReply, ToolCall, ToolResult, ToolSpec, Transcript
from loopnb.engine._texts import REFUSAL, VETO
from loopnb.engine.models import _mistakes as slips
from loopnb.engine.models._checks import (
    checked_mistakes,
    checked_name,
    checked_plan,
    checked_probability,
    checked_seed,
)
from loopnb.engine.models._corrections import fix
from loopnb.engine.models._mistakes import Mistake
from loopnb.engine.models._plans import derive_plan

Answer = str | Callable[[list[str]], str]
"""A final reply: a fixed text, or a function of the tool outputs the model read (in order)."""

_MAX_CORRECTIONS = 4  # per step; repeats are not counted (bounding those is the detector's job)

_REFUSED = REFUSAL
_ROUTE_AROUND = (VETO, "temporarily unavailable")  # a veto; an open breaker, or any service's own words
_REANSWER = ("{answer}", "{answer}", "To confirm: {answer}", "As I said, {answer}")


@dataclass(slots=True)
class _Step:
    """Where the model stands on one planned call, rebuilt from the transcript each turn."""

    index: int
    next_call: ToolCall | None = None  # None: the first try is still to be made
    corrections: int = 0
    timeouts: int = 0
    panics: int = 0


@dataclass(slots=True)
class _Reading:
    """What the model gathered from the transcript: its place in the plan and what it learned."""

    step: _Step
    turn: int = 0
    answers: int = 0
    outputs: list[str] = field(default_factory=list)
    learned: list[tuple[ToolCall, str]] = field(default_factory=list)
    skipped: list[tuple[ToolCall, str]] = field(default_factory=list)
    read_upto: int = 0  # transcript items read

    def copy(self) -> _Reading:
        return _Reading(
            replace(self.step),
            self.turn,
            self.answers,
            list(self.outputs),
            list(self.learned),
            list(self.skipped),
            self.read_upto,
        )


@dataclass(frozen=True, slots=True)
class _Bookmark:
    """Where the last reading stopped, so the next turn reads only what is new.

    A pure speed-up (linear runs, not quadratic): it is used only when the new transcript
    extends the one it was taken from (same first and last items at the same places, same
    tools), and resuming from it gives exactly what re-reading from the start would.
    """

    tools: tuple[ToolSpec, ...]
    first: object
    last: object
    reading: _Reading


class FallibleModel:
    """A seeded, deterministic model that makes a real model's mistakes and reads its errors.

    Args:
        plan: the calls it intends to make, one per turn; with none it derives a modest plan from
            the task (path-like or quoted tokens, each fed to a tool with one required string
            parameter).
        answer: the final reply, or a callable building it from the tool outputs it read. With
            none it quotes what it learned. Steps it gave up on are always mentioned.
        seed: the seed of every choice it makes.
        mistakes: the kinds of slip it picks from on a first try (``()`` for a careful model).
        stubbornness: the probability it ignores even a helpful error text and repeats the call.
        mistake_rate: the probability a first try slips at all.
        name: the model's name in events and recordings.
    """

    def __init__(
        self,
        plan: Iterable[ToolCall] | None = None,
        *,
        answer: Answer | None = None,
        seed: int = 0,
        mistakes: Iterable[Mistake] = slips.MISTAKES,
        stubbornness: float = 0.0,
        mistake_rate: float = 1.0,
        name: str = "fallible",
    ) -> None:
        self.plan = None if plan is None else checked_plan(plan)
        self.mistakes: tuple[Mistake, ...] = checked_mistakes(mistakes)
        if answer is not None and not (isinstance(answer, str) or callable(answer)):
            raise TypeError(
                f"FallibleModel: answer must be a str or a callable(outputs) -> str, got {answer!r}"
            )
        self.answer = answer
        self.seed: int = checked_seed(seed)
        self.stubbornness = checked_probability("stubbornness", stubbornness)
        self.mistake_rate = checked_probability("mistake_rate", mistake_rate)
        self.name: str = checked_name(name)
        self._bookmark: _Bookmark | None = None

    def __repr__(self) -> str:
        plan = "derived" if self.plan is None else f"{len(self.plan)} calls"
        return f"FallibleModel(plan={plan}, seed={self.seed}, mistakes={self.mistakes}, name={self.name!r})"

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        return self.reply(messages, tools)

    def reply(
        self, messages: Sequence[Message | ModelReply | ToolResult], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        """Decide the next reply from the transcript and the advertised tools (pure, sync)."""
        specs = {spec.name: spec for spec in tools}
        plan = self.plan if self.plan is not None else derive_plan(_task(messages), tools)
        reading = self._read(messages, plan, specs)
        if reading.answers or reading.step.index >= len(plan):
            text = self._final(reading)
            if reading.answers:
                variant = self._rng(reading.turn, "reanswer").choice(_REANSWER)
                text = variant.format(answer=text)
            return ModelReply(text=text, model=self.name)
        step = reading.step
        call = step.next_call or self._first_try(plan[step.index], specs, reading.turn)
        call = ToolCall(call.name, call.arguments, id=f"{self.name}-{reading.turn}-{step.index}")
        return ModelReply(tool_calls=(call,), model=self.name)

    # -- reading the transcript -------------------------------------------------------------

    def _read(
        self,
        messages: Sequence[Message | ModelReply | ToolResult],
        plan: list[ToolCall],
        specs: dict[str, ToolSpec],
    ) -> _Reading:
        items = messages  # indexed, never copied: a turn costs what is new, not the whole run
        reading = self._resume(items, specs)
        for i in range(reading.read_upto, len(items)):
            item = items[i]
            if not isinstance(item, ModelReply):
                continue
            self._pick_up(reading, item, len(plan))
            reading.turn += 1
            if not item.tool_calls:
                reading.answers += 1
                continue
            results = _results_after(items, i + 1)
            call = item.tool_calls[0]
            result = next((r for r in results if r.call_id and r.call_id == call.id), None)
            if result is None and results:
                result = results[0]
            if result is not None and reading.step.index < len(plan):
                self._take(reading, plan[reading.step.index], call, result, specs)
        reading.read_upto = len(items)
        if items:
            tools = tuple(specs.values())
            self._bookmark = _Bookmark(tools, items[0], items[-1], reading.copy())
        return reading

    def _pick_up(self, reading: _Reading, reply: ModelReply, steps: int) -> None:
        """Pick up where its own reply says it was, when older turns were compacted away.

        Its call ids read ``{name}-{turn}-{step}``: a reply from a later turn than the transcript
        shows means turns were dropped, and the model carries on from that reply's step (a real
        model reads its latest turns the same way) instead of starting its plan over.
        """
        mark = _own_mark(reply, self.name)
        if mark is None or mark[0] <= reading.turn:
            return
        turn, step = mark
        reading.turn = turn
        if reading.step.index < step < steps:
            reading.step = _Step(step)

    def _resume(self, items: Sequence[Any], specs: dict[str, ToolSpec]) -> _Reading:
        mark = self._bookmark  # read once: another thread may replace it meanwhile
        if mark is not None:
            n = mark.reading.read_upto
            if (
                0 < n <= len(items)
                and items[0] is mark.first
                and items[n - 1] is mark.last
                and mark.tools == tuple(specs.values())
            ):
                return mark.reading.copy()
        return _Reading(step=_Step(0))

    def _take(
        self,
        reading: _Reading,
        intended: ToolCall,
        call: ToolCall,
        result: ToolResult,
        specs: dict[str, ToolSpec],
    ) -> None:
        step = reading.step
        if not result.is_error:
            reading.outputs.append(result.content)
            reading.learned.append((call, result.content))
            reading.step = _Step(step.index + 1)
            return
        decision = self._react(step, intended, call, result.content, specs, reading.turn)
        if isinstance(decision, str):
            reading.skipped.append((intended, decision))
            reading.step = _Step(step.index + 1)
        else:
            if not _same(decision, call):
                step.corrections += 1
            step.next_call = decision

    # -- adapting to an error text ----------------------------------------------------------

    def _react(
        self,
        step: _Step,
        intended: ToolCall,
        call: ToolCall,
        text: str,
        specs: dict[str, ToolSpec],
        turn: int,
    ) -> ToolCall | str:
        """The next call for this step after reading ``text``, or a reason to give up on it."""
        if self.stubbornness and self._rng(turn, "stubborn").random() < self.stubbornness:
            return call
        if _REFUSED in text or any(phrase in text for phrase in _ROUTE_AROUND):
            return text
        if "timed out" in text:
            step.timeouts += 1
            return call if step.timeouts < 2 else text
        fixed = fix(intended, call, text, specs)
        if fixed is None and text.startswith("Tool ") and "panicked" in text:
            step.panics += 1
            return call if step.panics < 2 else text
        if fixed is None:
            return call  # nothing actionable: it cannot tell what to change
        if isinstance(fixed, ToolCall) and step.corrections >= _MAX_CORRECTIONS:
            return text
        return fixed

    # -- first tries and final answers ------------------------------------------------------

    def _first_try(self, intended: ToolCall, specs: dict[str, ToolSpec], turn: int) -> ToolCall:
        rng = self._rng(turn, "mistake", intended.name)
        if not self.mistakes or rng.random() >= self.mistake_rate:
            return intended
        kinds = list(self.mistakes)
        rng.shuffle(kinds)
        for kind in kinds:
            if kind == "typo":
                slipped = slips.mistype(intended, rng)
            elif kind == "shape":
                slipped = slips.misshape(intended, specs.get(intended.name), rng)
            else:
                slipped = slips.hallucinate(intended, specs, rng)
            if slipped is not None:
                return slipped
        return intended

    def _final(self, reading: _Reading) -> str:
        if isinstance(self.answer, str):
            text = self.answer
        elif self.answer is not None:
            text = self.answer(list(reading.outputs))
        elif reading.learned:
            text = " ".join(
                f"{_describe(call)} returned: {_clip(output).rstrip('.')}."
                for call, output in reading.learned
            )
        else:
            text = "I found nothing I could use for this task."
        notes = [f"I could not {_describe(c)}: {_clip(reason)}" for c, reason in reading.skipped]
        return " ".join([text, *notes]) if notes else text

    def _rng(self, turn: int, purpose: str, extra: str = "") -> random.Random:
        return random.Random(f"{self.seed}:{turn}:{purpose}:{extra}")


def _same(a: ToolCall, b: ToolCall) -> bool:
    return a.name == b.name and a.arguments == b.arguments


def _own_mark(reply: ModelReply, name: str) -> tuple[int, int] | None:
    """The (turn, step) its own id on the reply's first call records, if it is one of its own."""
    if not reply.tool_calls or not reply.tool_calls[0].id.startswith(f"{name}-"):
        return None
    turn, sep, step = reply.tool_calls[0].id.removeprefix(f"{name}-").partition("-")
    if not (sep and turn.isdecimal() and step.isdecimal()):
        return None
    return int(turn), int(step)


def _task(messages: Sequence[Message | ModelReply | ToolResult]) -> str:
    return next((m.content for m in messages if isinstance(m, Message) and m.role == "user"), "")


def _results_after(items: Sequence[Any], start: int) -> list[ToolResult]:
    results = []
    for i in range(start, len(items)):
        item = items[i]
        if not isinstance(item, ToolResult):
            break
        results.append(item)
    return results


def _describe(call: ToolCall) -> str:
    args = call.arguments if isinstance(call.arguments, dict) else {}
    shown = ", ".join(str(v) for v in args.values())
    return f"{call.name}({shown})"


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
