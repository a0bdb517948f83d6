"""Recovery: analyse a failed tool call, correct it, back off, retry, within a ceiling of 5.

Attempt 0 is the original call; attempts 1..5 are retries a strategy grants. The ceiling is
enforced twice: the strategy receives ``max_attempts=5``, and the driver (``drive``) refuses a 6th
retry whatever the strategy says, with ``ToolRecoveryExhausted(attempts=6)``: total calls.

When a strategy answers Skip, AskUser or Fail, the model receives attempt 0's result verbatim;
the strategy's analysis rides beside it as ``ToolResult.note`` and never rewrites it. A strategy
that raises (anything but ``KeyboardInterrupt``, which is Ctrl-C and ends the run as ``Cancelled``)
or answers something that is not a valid decision counts as Fail; so does a ``Retry`` whose delay
is not a finite number of seconds at most ``MAX_RETRY_DELAY``: nothing is slept, and the model
reads the original result.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from numbers import Real
from typing import Any, Protocol, TypeAlias, runtime_checkable

from loopnb.engine._errors import SoftProducer, ToolRecoveryExhausted, exception_text, shown
from loopnb.engine._messages import ToolCall, ToolResult, ToolSpec

MAX_RECOVERY_ATTEMPTS = 5
"""Retries granted after the original call; a 6th retry ends the run hard."""

MAX_RETRY_DELAY = 60.0
"""The longest back-off, in seconds, a ``Retry`` may ask for; a longer one is an invalid decision
(treated as Fail, nothing slept), as a delay that is not a finite number is."""

RECOVERABLE: frozenset[SoftProducer] = frozenset({"tool_error", "tool_panic", "timeout", "invalid_arguments"})
"""Failures of running a tool, which a strategy may retry. Refusals and pre-answers are not."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Call the tool again, with ``corrected_input`` as its arguments when given, after ``delay`` s.

    A negative ``delay`` means no wait; one that is not a finite number, or is longer than
    ``MAX_RETRY_DELAY`` (60 s), makes the decision invalid.
    """

    corrected_input: dict[str, Any] | None = None
    delay: float = 0.0
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Skip:
    """Give up on this call; the model reads the original failure."""

    note: str | None = None


@dataclass(frozen=True, slots=True)
class AskUser:
    """Give up on this call because it needs a human; the model reads the original failure."""

    note: str | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Give up on this call; the model reads the original failure."""

    note: str | None = None


Decision: TypeAlias = Retry | Skip | AskUser | Fail

_DECISION_NAMES = {Retry: "retry", Skip: "skip", AskUser: "ask_user", Fail: "fail"}


@dataclass(frozen=True, slots=True)
class Failure:
    """What a strategy is shown: the failed attempt, the original call and its result."""

    call: ToolCall
    result: ToolResult
    original_call: ToolCall
    original_result: ToolResult
    tool: ToolSpec | None
    producer: SoftProducer


@runtime_checkable
class RecoveryStrategy(Protocol):
    """Decides what to do after a failed attempt. Any object with this method will do."""

    def decide(self, failure: Failure, attempt: int, max_attempts: int) -> Decision: ...


DecisionListener = Callable[[Failure, int, Decision, bool], None]


async def drive(
    strategy: RecoveryStrategy,
    *,
    call: ToolCall,
    first: ToolResult,
    tool: ToolSpec | None,
    execute: Callable[[ToolCall, int], Awaitable[ToolResult]],
    sleep: Callable[[float], Awaitable[None]],
    on_decision: DecisionListener,
    before_retry: Callable[[], None],
) -> ToolResult:
    """Run the strategy's decisions after attempt 0 failed; return what the model will read.

    ``execute(call, attempt)`` performs one attempt. A decision that is not a ``Decision`` (or a
    strategy that raises) counts as ``Fail``: reported through ``on_decision`` with valid=False.
    """
    assert first.producer is not None
    current_call, result, attempt = call, first, 0
    while True:
        failure = Failure(current_call, result, call, first, tool, result.producer or first.producer)
        decision, valid = _ask(strategy, failure, attempt)
        on_decision(failure, attempt, decision, valid)
        if not isinstance(decision, Retry):
            return replace(first, producer="recovery_gave_up", note=decision.note, attempts=attempt + 1)
        if attempt >= MAX_RECOVERY_ATTEMPTS:
            raise ToolRecoveryExhausted(
                f"recovery of {call.name} asked for retry {attempt + 1} after {attempt + 1} calls; "
                f"the ceiling is {MAX_RECOVERY_ATTEMPTS} retries",
                attempts=attempt + 1,
            )
        if decision.delay > 0:
            await sleep(decision.delay)
        before_retry()
        attempt += 1
        if decision.corrected_input is not None:
            current_call = replace(current_call, arguments=decision.corrected_input)
        result = await execute(current_call, attempt)
        if not result.is_error:
            return replace(result, note=decision.note, attempts=attempt + 1)


def _ask(strategy: RecoveryStrategy, failure: Failure, attempt: int) -> tuple[Decision, bool]:
    try:
        decision = strategy.decide(failure, attempt, MAX_RECOVERY_ATTEMPTS)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit, GeneratorExit, a CancelledError of its own: a plain call
        return Fail(note=f"recovery strategy raised {type(exc).__name__}: {exception_text(exc)}"), False
    if type(decision) not in _DECISION_NAMES:
        return Fail(note=f"recovery strategy answered {shown(decision)}, which is not a decision"), False
    try:
        return _checked(decision), True
    except ValueError as exc:
        return Fail(note=f"recovery strategy answered an invalid {type(decision).__name__}: {exc}"), False


def _checked(decision: Decision) -> Decision:
    """The decision with its fields checked (and normalised); ValueError names the one that is wrong.

    The driver sleeps on ``delay``, sends ``corrected_input`` as arguments and shows ``note`` to the
    reader of the run: a strategy's bad value must not crash the run or hang it forever.
    """
    note: object = decision.note  # typed, but a strategy's dataclass checks nothing at run time
    if note is not None and not isinstance(note, str):
        raise ValueError(f"note must be a str or None, got {type(note).__name__} {shown(note, 60)}")
    if not isinstance(decision, Retry):
        return decision
    delay: object = decision.delay
    args: object = decision.corrected_input
    if isinstance(delay, bool) or not isinstance(delay, Real) or not _finite(delay):
        raise ValueError(f"delay must be a finite number of seconds, got {shown(delay, 60)}")
    if float(delay) > MAX_RETRY_DELAY:
        raise ValueError(
            f"delay must be at most MAX_RETRY_DELAY={MAX_RETRY_DELAY:g} seconds, got {float(delay):.6g}"
        )
    if args is not None and (not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args)):
        raise ValueError(
            f"corrected_input must be a dict of argument names to values, or None; got {shown(args, 60)}"
        )
    return Retry(None if args is None else dict(args), float(delay), decision.note)


def _finite(value: Real) -> bool:
    """``math.isfinite``, False for a number too large for a float (``10**400``)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def decision_name(decision: Decision) -> str:
    """``retry`` / ``skip`` / ``ask_user`` / ``fail``."""
    return _DECISION_NAMES[type(decision)]


class RetryWithBackoff:
    """Retry transient failures (timeouts, panics by default) with exponential back-off.

    Retries while ``attempt < min(retries, max_attempts)``, waiting ``base * factor**attempt``
    seconds (at most ``max_delay``); then Fail.
    """

    def __init__(
        self,
        *,
        retries: int = 3,
        base: float = 0.5,
        factor: float = 2.0,
        max_delay: float = 30.0,
        on: Iterable[SoftProducer] = ("timeout", "tool_panic"),
    ) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"RetryWithBackoff: retries must be an int >= 0, got {retries!r}")
        self.retries = retries
        self.base = _seconds("base", base, 0.0)
        self.factor = _seconds("factor", factor, 1.0)
        self.max_delay = _seconds("max_delay", max_delay, 0.0)
        self.on = frozenset(on)
        unknown = sorted(str(p) for p in self.on - RECOVERABLE)
        if unknown:
            raise ValueError(
                f"RetryWithBackoff: on names {', '.join(map(repr, unknown))}, which recovery never "
                f"sees; recoverable failures are {', '.join(sorted(RECOVERABLE))}"
            )

    def decide(self, failure: Failure, attempt: int, max_attempts: int) -> Decision:
        if failure.producer not in self.on:
            return Fail(note=f"{failure.producer} is not a transient failure; not retried")
        if attempt >= min(self.retries, max_attempts):
            return Fail(note=f"still failing after {attempt} retries")
        try:
            delay = min(self.max_delay, self.base * self.factor**attempt)
        except OverflowError:  # a large factor: the back-off is far past its cap
            delay = self.max_delay
        return Retry(delay=delay, note=f"transient {failure.producer}; retry {attempt + 1} after {delay:g}s")

    def __repr__(self) -> str:
        return f"RetryWithBackoff(retries={self.retries}, base={self.base}, factor={self.factor})"


def _seconds(name: str, value: object, least: float) -> float:
    """A finite number >= ``least``, as a float; a ValueError naming the setting otherwise."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < least:
        raise ValueError(f"RetryWithBackoff: {name} must be a finite number >= {least:g}, got {value!r}")
    return float(value)


Candidates = Mapping[str, Iterable[str] | Callable[[], Iterable[str]]]

_DID_YOU_MEAN = re.compile(r"[Dd]id you mean '([^']+)'\?")


class AnalyseAndCorrect:
    """Analyse the failure and retry with a corrected input, or give up with the analysis as a note.

    Corrections it knows: a value the error text suggests (``Did you mean 'x'?``); a string value
    the error names that is close to one of ``candidates[arg]`` (e.g. existing paths: a typo fix);
    arguments coerced to the tool's schema (a one-item list to its item, a number sent as a string,
    a misnamed key to the missing one). The correction goes into the retry's input only.
    """

    def __init__(self, candidates: Candidates | None = None, *, cutoff: float = 0.75) -> None:
        self.candidates = dict(candidates or {})
        self.cutoff = cutoff

    def decide(self, failure: Failure, attempt: int, max_attempts: int) -> Decision:
        if attempt >= max_attempts:
            return Fail(note=f"analysis: no fix worked within {max_attempts} retries")
        args = failure.call.arguments
        if not isinstance(args, dict):
            return Fail(note="analysis: the arguments are not a JSON object; nothing to correct")
        fixed = self._correct(failure, dict(args))
        if fixed is None or fixed[0] == args:
            return Fail(note=f"analysis: no correction found for {failure.producer}")
        corrected, why = fixed
        return Retry(corrected_input=corrected, note=f"analysis: {why}")

    def _correct(self, failure: Failure, args: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        text = failure.result.content
        hint = _DID_YOU_MEAN.search(text)
        for key, value in args.items():
            if isinstance(value, str) and value and value in text:
                if hint:
                    return {**args, key: hint.group(1)}, f"{key}={value!r} -> {hint.group(1)!r} (suggested)"
                known = self._known(key)
                best = difflib.get_close_matches(value, known, n=1, cutoff=self.cutoff)
                if best and best[0] != value:
                    return {**args, key: best[0]}, f"{key}={value!r} looks like a typo of {best[0]!r}"
        if failure.producer == "invalid_arguments" and failure.tool is not None:
            return _coerce(args, failure.tool.parameters)
        return None

    def _known(self, key: str) -> list[str]:
        source = self.candidates.get(key)
        if source is None:
            return []
        values = source() if callable(source) else source
        return [str(v) for v in values]

    def __repr__(self) -> str:
        return f"AnalyseAndCorrect(candidates={sorted(self.candidates)})"


def _coerce(args: dict[str, Any], schema: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    props: dict[str, Any] = schema.get("properties", {})
    fixed, why = dict(args), []
    missing = [k for k in schema.get("required", []) if k not in fixed]
    for key in [k for k in fixed if k not in props]:
        target = difflib.get_close_matches(key, missing, n=1, cutoff=0.0) if missing else []
        if target:
            fixed[target[0]] = fixed.pop(key)
            missing.remove(target[0])
            why.append(f"renamed {key!r} to {target[0]!r}")
    for key, prop in props.items():
        if key not in fixed:
            continue
        kind, value = prop.get("type"), fixed[key]
        if kind == "string" and isinstance(value, list) and len(value) == 1:
            fixed[key] = str(value[0])
            why.append(f"{key}: one-item list -> its item")
        elif kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
            fixed[key] = str(value)
            why.append(f"{key}: number -> string")
        elif kind in ("integer", "number") and isinstance(value, str):
            try:
                fixed[key] = int(value) if kind == "integer" else float(value)
                why.append(f"{key}: string -> {kind}")
            except ValueError:
                pass
    return (fixed, "; ".join(why)) if why else None
