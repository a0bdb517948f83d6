"""loopnb's own safety systems: the loop detector, the convergence detector and ``max_turns``.

Each is a ``SafetySystem`` (``_watch``: the protocol): configuration, whose ``new_run()`` hands out
the per-run state (a *watch*), so one engine can run many times without runs leaking into each
other. Each watch answers the hooks it needs with a ``SafetySignal``; the engine acts on it.
"""

from __future__ import annotations

import difflib
import itertools
import json
import sys
from collections import OrderedDict, deque
from collections.abc import Hashable
from typing import Literal

from loopnb.engine._errors import shown
from loopnb.engine._events import DetectorName
from loopnb.engine._messages import ToolCall, ToolResult
from loopnb.engine._texts import convergence_text, detection_text, max_turns_text
from loopnb.engine._tools import parse_arguments
from loopnb.engine._watch import SafetySignal, SafetyWatch


def _positive_int(owner: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{owner}: {name} must be >= 1, got {value}")
    return value


def call_key(call: ToolCall) -> str:
    """Tool name plus canonical arguments: two calls with equal keys are the same call.

    Canonical as JSON sees them: key order and spacing do not count, nor does a number's
    spelling (``1`` and ``1.0`` are one JSON number), and arguments sent as a JSON string are
    the object they parse to, as the dispatcher reads them. ``true`` is not ``1``, and strings
    are compared exactly (no Unicode normalisation: a tool may well tell them apart). A value JSON
    cannot hold counts by its repr, and one whose repr raises as ``<unprintable X>``: two calls
    sending such a value the same way are the same call, so the detector still sees them repeat.
    Nothing an argument's ``__repr__``, ``__eq__`` or ``__hash__`` raises escapes, but
    ``KeyboardInterrupt`` (Ctrl-C landing there: the run ends as ``Cancelled``).
    """
    args = call.arguments
    if isinstance(args, str):
        args = parse_arguments(call.name, args)
        if isinstance(args, str):  # not a JSON object: the raw text is the key
            return f"{call.name}({call.arguments})"
    try:
        canon = json.dumps(_numbers(args), sort_keys=True, separators=(",", ":"), default=_in_full)
    except KeyboardInterrupt:
        raise
    except BaseException:  # a key JSON cannot sort, nesting too deep, a huge int: each pair by its repr
        try:
            pairs = sorted((_in_full(k), _in_full(v)) for k, v in args.items())
            canon = "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"
        except KeyboardInterrupt:
            raise
        except BaseException:  # a dict of its own whose items() raises: this call is like no other
            canon = f"<{type(args).__name__} {id(args):#x}>"
    return f"{call.name}({canon})"


def _in_full(value: object) -> str:
    """``repr(value)`` uncut, or ``<unprintable X>`` when it raises."""
    return shown(value, sys.maxsize)


def _numbers(value: object) -> object:
    """``value`` with every whole float (``1.0``, ``-0.0``) spelled as the int it equals."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class LoopDetector:
    """Identical calls returning identical failures, counted per call key.

    With the defaults, failures 1-3 of one call run, identical calls 4-5 are refused before
    execution (soft), and the 6th ends the run with ``LoopDetected``. A success of that call, or a
    different failure text, resets its count.
    """

    name: DetectorName = "loop"

    def __init__(self, *, warn_after: int = 3, stop_after: int = 5) -> None:
        self.warn_after = _positive_int("LoopDetector", "warn_after", warn_after)
        self.stop_after = _positive_int("LoopDetector", "stop_after", stop_after)
        if stop_after < warn_after:
            raise ValueError(f"LoopDetector: stop_after ({stop_after}) must be >= warn_after ({warn_after})")

    def new_run(self) -> LoopWatch:
        return LoopWatch(self)

    def __repr__(self) -> str:
        return f"LoopDetector(warn_after={self.warn_after}, stop_after={self.stop_after})"


FORGET_AFTER = 1000
"""A failing call not seen again within this many calls is forgotten (DESIGN.md): a long run that
fails many different ways keeps the detector's memory bounded. A loop repeats within a few calls."""

_FORGET_EVERY = 64
"""How often (in calls) the forgetting is done: a call is forgotten within ``FORGET_AFTER + 64``."""

_ATOMS = (str, int, type(None))
"""Argument values ``lookup_key`` keeps as they are (by ``type(v)``: ``True`` is not an ``int``
here, and JSON tells ``true`` from ``1``)."""


def lookup_key(call: ToolCall) -> Hashable:
    """A hashable that two calls share exactly when their ``call_key`` is the same.

    The common call (an object, or JSON text of one, whose names are text and whose values are
    text, null or whole numbers) is one flat tuple, its name then each argument's name and value in
    the order of the names, a whole float spelled as the int it equals, as ``call_key`` spells it:
    no JSON text is built. Any other call falls back to ``call_key``. The two kinds never meet (a
    tuple is never equal to a string), and which kind a call gets depends only on what ``call_key``
    compares: a text equals only a text, a whole number is a whole number however spelled, and
    anything else goes the long way on both sides.
    """
    args = call.arguments
    if type(args) is str:
        args = parse_arguments(call.name, args)
    if type(args) is not dict:
        return call_key(call)
    if len(args) == 1:  # the commonest call, one argument of text or a whole number: as below
        ((k, v),) = args.items()
        if type(k) is str and type(v) in _ATOMS:
            return (call.name, k, v)
    items = []
    for k, v in args.items():
        if type(k) is not str:
            return call_key(call)
        kind = type(v)
        if kind is float:
            if not v.is_integer():
                return call_key(call)
            v = int(v)
        elif kind not in _ATOMS:
            return call_key(call)
        items.append((k, v))
    if len(items) > 1:
        items.sort()
    return (call.name, *itertools.chain.from_iterable(items))


class LoopWatch(SafetyWatch):
    """One run's streaks: call -> (the failure text, how many identical calls in a row, when last
    seen), oldest first, so that a call not seen for ``FORGET_AFTER`` calls is dropped cheaply.

    Only a streak of ``warn_after`` or more can get a call refused or stopped: ``long_streaks``
    counts those, and while there is none the watch is not ``armed``, so the engine does not ask
    ``before_call``; the call's key is built once, after it. Calls are counted (for forgetting) as
    their results come in, while the watch is not ``idle``.
    """

    __slots__ = ("calls", "detector", "last_call", "last_key", "long_streaks", "streaks")

    def __init__(self, detector: LoopDetector) -> None:
        self.detector = detector
        self.streaks: OrderedDict[Hashable, tuple[str, int, int]] = OrderedDict()
        self.calls = 0
        self.long_streaks = 0
        self.last_call: ToolCall | None = None  # the call ``before_call`` built ``last_key`` for
        self.last_key: Hashable = None

    @property
    def idle(self) -> bool:
        """No failing call in mind: nothing to refuse, and a success changes nothing."""
        return not self.streaks

    @property
    def armed(self) -> bool:
        """Some streak is long enough to refuse or stop its call's next repeat."""
        return self.long_streaks > 0

    def before_call(self, call: ToolCall) -> SafetySignal | None:
        """Refuse or stop a call that keeps failing the same way."""
        if not self.long_streaks:  # no streak is long enough to act on, whatever this call's key
            return None
        key = self.last_key = lookup_key(call)  # for the question after it, too
        self.last_call = call
        streaks = self.streaks
        streak = streaks.get(key)
        if streak is None:
            return None
        text, count, _ = streak
        repeats = count + 1  # this call is one of them: the 6th ends the run, as the README says
        if count >= self.detector.stop_after:
            return SafetySignal("stop", detection_text(call_key(call), repeats, text), repeats)
        if count >= self.detector.warn_after:  # armed it was, and stays
            streaks[key] = (text, repeats, self.calls)
            streaks.move_to_end(key)
            return SafetySignal("refuse", detection_text(call_key(call), repeats, text), repeats)
        return None

    def after_result(self, call: ToolCall, result: ToolResult) -> None:
        """Extend, restart or clear the call's streak."""
        streaks = self.streaks
        if not streaks and not result.is_error:
            return
        self.calls += 1
        if not self.calls % _FORGET_EVERY:
            self._forget()
        key = self.last_key if self.last_call is call else lookup_key(call)
        if not result.is_error:
            gone = streaks.pop(key, None)
            if gone is not None and gone[1] >= self.detector.warn_after:
                self.long_streaks -= 1
            return
        warn_after, streak = self.detector.warn_after, streaks.get(key)
        if streak is None:  # a new key goes in last, where the most recent belong
            streaks[key] = (result.content, 1, self.calls)
            self.long_streaks += warn_after <= 1
            return
        count = streak[1] + 1 if streak[0] == result.content else 1
        self.long_streaks += (count >= warn_after) - (streak[1] >= warn_after)
        streaks[key] = (result.content, count, self.calls)
        streaks.move_to_end(key)

    def _forget(self) -> None:
        """Drop the failing calls not seen in the last ``FORGET_AFTER`` calls (oldest first)."""
        streaks, oldest, stale = self.streaks, self.calls - FORGET_AFTER, 0
        for _, _, seen in streaks.values():
            if seen >= oldest:
                break
            stale += 1
        warn_after = self.detector.warn_after
        for _ in range(stale):
            self.long_streaks -= streaks.popitem(last=False)[1][1] >= warn_after


class ConvergenceDetector:
    """Near-identical rejected answers over a window trigger an action.

    A run with a done-check (``Engine(done=...)``) can reject a final reply and let the model try
    again; a model that keeps answering nearly the same thing is converging, not progressing.
    ``window`` replies whose pairwise similarity (difflib's ratio, on the texts with case and runs
    of whitespace folded: shouting or reflowing an answer does not make it new) is at least
    ``threshold`` trigger ``action``: ``"stop"`` -> ``LoopDetected``, ``"ask_user"`` -> ``UserInputRequired``,
    ``"warn"`` -> a soft note to the model, and the run goes on. ``"warn"`` never ends a run: a
    model that keeps repeating itself to a done-check that keeps rejecting is warned again every
    ``window`` replies, for ever, so pair it with ``Engine(max_turns=...)``.
    """

    name: DetectorName = "convergence"

    def __init__(
        self,
        *,
        threshold: float = 0.9,
        window: int = 3,
        action: Literal["stop", "ask_user", "warn"] = "stop",
    ) -> None:
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 < threshold <= 1.0
        ):
            raise ValueError(f"ConvergenceDetector: threshold must be in (0, 1], got {threshold!r}")
        self.window = _positive_int("ConvergenceDetector", "window", window)
        if window < 2:
            raise ValueError(f"ConvergenceDetector: window must be >= 2 replies, got {window}")
        if action not in ("stop", "ask_user", "warn"):
            raise ValueError(
                f"ConvergenceDetector: action must be 'stop', 'ask_user' or 'warn', got {action!r}"
            )
        self.threshold = float(threshold)
        self.action: Literal["stop", "ask_user", "warn"] = action

    def new_run(self) -> ConvergenceWatch:
        return ConvergenceWatch(self)

    def __repr__(self) -> str:
        return (
            f"ConvergenceDetector(threshold={self.threshold}, window={self.window}, action={self.action!r})"
        )


class ConvergenceWatch(SafetyWatch):
    """One run's recent rejected replies."""

    __slots__ = ("detector", "recent")

    def __init__(self, detector: ConvergenceDetector) -> None:
        self.detector = detector
        self.recent: deque[str] = deque(maxlen=detector.window)

    def after_rejection(self, answer: str) -> SafetySignal | None:
        """Add a rejected answer; a signal when the whole window has converged."""
        self.recent.append(" ".join(answer.split()).casefold())
        if len(self.recent) < self.detector.window:
            return None
        replies = list(self.recent)
        threshold = self.detector.threshold
        lowest = min(_similarity(a, b, threshold) for i, a in enumerate(replies) for b in replies[i + 1 :])
        if lowest < self.detector.threshold:
            return None
        self.recent.clear()
        n = len(replies)
        text = convergence_text(n, lowest, self.detector.threshold)
        return SafetySignal(self.detector.action, text, n)


class MaxTurns:
    """A user's turn ceiling (``Engine(max_turns=n)``): turn ``n + 1`` ends the run with ``LoopDetected``
    before the model is asked. loopnb's addition to the spec, which has no default turn ceiling."""

    name: DetectorName = "max_turns"

    def __init__(self, limit: int) -> None:
        self.limit = _positive_int("MaxTurns", "limit", limit)

    def new_run(self) -> MaxTurnsWatch:
        return MaxTurnsWatch(self.limit)

    def __repr__(self) -> str:
        return f"MaxTurns({self.limit})"


class MaxTurnsWatch(SafetyWatch):
    """One run's turn count, against the ceiling."""

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def at_turn(self, turn: int) -> SafetySignal | None:
        if turn > self.limit:
            return SafetySignal("stop", max_turns_text(self.limit), turn)
        return None


def _similarity(a: str, b: str, threshold: float) -> float:
    """difflib's ratio, skipping the full comparison when a cheap upper bound is already too low."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    bound = matcher.real_quick_ratio()
    if bound < threshold:
        return bound
    return matcher.ratio()
