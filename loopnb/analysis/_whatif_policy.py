"""The replay engine of a recorded run: the run's own policy rebuilt from its recording, then changed.

What the recording says of the policy (``RunStarted.settings``, and the events) is rebuilt as far
as it can be: the loop and convergence detectors from their settings, the recovery strategy as
the decisions it made (``RecordedRecovery``), the tool breakers from the thresholds and cooldowns
their transitions show, the model chain's breaker likewise, the timeout, ``max_turns``, the context
budget, the done-check as the rejections it made, the hooks as the vetoes and the cancellation
they made. What cannot be rebuilt is said in ``notes``. ``CHANGES`` are the keyword arguments
``what_if`` takes on top; ``checked_changes`` refuses anything else, naming what is accepted.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopnb.analysis._error_text import with_error_text
from loopnb.analysis._replay_parts import (
    PacedModel,
    RecordedRecovery,
    RecordedTool,
    ReplayTool,
    Tracked,
    recorded_done,
    replay_hook,
    template_fields,
)
from loopnb.analysis._scripted import model_steps
from loopnb.analysis._tape import Tape
from loopnb.engine import (
    CircuitBreaker,
    ContextBudget,
    ConvergenceDetector,
    LoopDetector,
    ModelReply,
    ToolError,
)
from loopnb.engine._events import BreakerTransitioned, RecoveryDecided
from loopnb.engine._texts import registry_miss_text
from loopnb.engine._tools import Tool, usable_name
from loopnb.engine.models import FallbackChain, Model, ScriptedModel

CHANGES: dict[str, str] = {
    "loop_detector": "a LoopDetector, or None (off)",
    "recovery": "a recovery strategy (an object with decide(failure, attempt, max_attempts)), or None (off)",
    "convergence": "a ConvergenceDetector, or None (off)",
    "breakers": "a CircuitBreaker (a template for every tool), a dict of tool name -> CircuitBreaker, "
    "or None",
    "max_turns": "an int >= 1, or None",
    "timeout": "seconds > 0, or None",
    "context": "a ContextBudget, or None",
    "done": "a done-check done(reply_text), or None",
    "hooks": "a list of hooks hook(call, ctx), run after the replay's own",
    "suggestions": "True or False (the registry's 'Did you mean' hints)",
    "tools": "a dict of tool name -> a Tool, a typed function, a str (every call succeeds with it) or a "
    "ToolError (every call fails with it); or a list of Tools",
    "error_text": "a dict of tool name (or 'tool_error', for every tool) -> a template of the text the "
    "model reads for that tool's errors, with {error} (the tool's own text) and the call's arguments",
}
"""What ``what_if`` can change, and what each takes."""

TOOL_ERROR = "tool_error"


def checked_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """``changes``, each checked against what it may be; a ``TypeError`` or ``ValueError`` names the
    keyword, what it takes and what came."""
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in CHANGES:
            close = difflib.get_close_matches(key, CHANGES, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise TypeError(
                f"what_if(): {key!r} is not something a what-if can change; it takes "
                f"{', '.join(CHANGES)}.{hint}"
            )
        _check(key, value)
        out[key] = value
    return out


def _wrong(key: str, value: object) -> TypeError:
    return TypeError(f"what_if({key}=...): expected {CHANGES[key]}; got {type(value).__name__} {value!r:.80}")


def _check(key: str, value: Any) -> None:
    """Raise the ``TypeError`` that names what ``key`` takes, unless ``value`` is one of those."""
    if not _ACCEPTS[key](value):
        raise _wrong(key, value)


def _none_or(kind: type) -> Callable[[Any], bool]:
    return lambda value: value is None or isinstance(value, kind)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _takes_breakers(value: Any) -> bool:
    """None, one breaker (a template for every tool), or a breaker per tool name."""
    if value is None or isinstance(value, CircuitBreaker):
        return True
    return isinstance(value, Mapping) and all(isinstance(b, CircuitBreaker) for b in value.values())


def _takes_hooks(value: Any) -> bool:
    """A list of callables (a string is not a list of hooks)."""
    return not isinstance(value, str | bytes) and all(callable(h) for h in _iterable("hooks", value))


def _takes_tools(value: Any) -> bool:
    """Tools by name, or a list of Tools: each a Tool, a function, a text or a ToolError."""
    items = value.values() if isinstance(value, Mapping) else _iterable("tools", value)
    return not isinstance(value, str | bytes) and all(
        isinstance(t, Tool | str | ToolError) or callable(t) for t in items
    )


_ACCEPTS: dict[str, Callable[[Any], bool]] = {
    "loop_detector": _none_or(LoopDetector),
    "recovery": lambda value: value is None or callable(getattr(value, "decide", None)),
    "convergence": _none_or(ConvergenceDetector),
    "breakers": _takes_breakers,
    "max_turns": lambda value: value is None or (_number(value) and isinstance(value, int) and value >= 1),
    "timeout": lambda value: value is None or (_number(value) and value > 0),
    "context": _none_or(ContextBudget),
    "done": lambda value: value is None or callable(value),
    "hooks": _takes_hooks,
    "suggestions": lambda value: isinstance(value, bool),
    "tools": _takes_tools,
    "error_text": lambda value: (
        isinstance(value, Mapping) and all(isinstance(t, str) for t in value.values())
    ),
}
"""Whether a value is one each change takes (``CHANGES`` says it in words)."""
if _ACCEPTS.keys() != CHANGES.keys():  # a new change must say what it takes
    raise TypeError(f"what_if changes without a check: {sorted(CHANGES.keys() ^ _ACCEPTS.keys())}")


def _iterable(key: str, value: Any) -> list[Any]:
    try:
        return list(value)
    except TypeError:
        raise _wrong(key, value) from None


@dataclass
class Replay:
    """A replay engine's parts: ``Engine`` keyword arguments, the task, and what was not rebuilt."""

    kwargs: dict[str, Any]
    task: str
    notes: list[str] = field(default_factory=list)


def replay_engine(tape: Tape, changes: Mapping[str, Any], cancel: Callable[[str], None]) -> Replay:
    """The recorded run's engine as far as the recording tells it, with ``changes`` applied;
    ``cancel`` fires the replay's cancel token."""
    tape.cancel = cancel
    settings = tape.started.settings
    notes: list[str] = []
    ours = "max_recovery_attempts" in settings  # a run of loopnb's engine, not read from elsewhere
    timeout = changes.get("timeout", settings.get("timeout"))
    kwargs: dict[str, Any] = {
        "model": _models(tape, ours),
        "system": tape.started.system,
        "clock": tape.clock,
        "loop_detector": _detector(LoopDetector, settings.get("loop_detector"), notes),
        "convergence": _detector(ConvergenceDetector, settings.get("convergence"), notes),
        "max_turns": settings.get("max_turns"),
        "timeout": settings.get("timeout"),
        "suggestions": _suggestions(tape),
    }
    if settings.get("max_tokens") is not None:
        kwargs["context"] = ContextBudget(max_tokens=int(settings["max_tokens"]))
        notes.append("the context budget is rebuilt with its max_tokens and the default token counter")
    recorded = settings.get("recovery") is not None or any(
        isinstance(e, RecoveryDecided) for e in tape.events
    )
    if recorded:
        kwargs["recovery"] = RecordedRecovery(tape, settings.get("recovery"))
    if settings.get("done_check") or tape.rejections:
        kwargs["done"] = recorded_done(tape)
    for key in ("loop_detector", "convergence", "max_turns", "timeout", "context", "done", "suggestions"):
        if key in changes:
            kwargs[key] = changes[key]
    strategy = changes.get("recovery", kwargs.get("recovery"))
    kwargs["recovery"] = None if strategy is None else Tracked(strategy, tape)
    kwargs["hooks"] = [replay_hook(tape), *changes.get("hooks", ())]
    tools = _tools(tape, changes, timeout)
    kwargs["tools"] = tools
    names = [t.name for t in tools]
    kwargs["advertise"] = [*tape.started.advertised, *(n for n in names if n not in tape.started.advertised)]
    kwargs["breakers"] = changes["breakers"] if "breakers" in changes else _tool_breakers(tape, names, notes)
    return Replay(kwargs, tape.started.task, notes)


_REPR = re.compile(r"(\w+)\((.*)\)", re.S)


def _detector(kind: Callable[..., Any], shown: object, notes: list[str]) -> Any:
    """The detector a run's settings show (``LoopDetector(warn_after=3, stop_after=5)``), or None."""
    if shown is None:
        return None
    name = getattr(kind, "__name__", "")
    match = _REPR.fullmatch(str(shown))
    if match is not None and match.group(1) == name:
        try:
            call = ast.parse(f"f({match.group(2)})", mode="eval").body
            assert isinstance(call, ast.Call) and not call.args
            return kind(**{k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
        except (SyntaxError, ValueError, TypeError, AssertionError):
            pass
    notes.append(
        f"the settings show the detector as {shown!r}, which is not a {name}'s: it runs with the defaults"
    )
    return kind()


def _suggestions(tape: Tape) -> bool:
    """Whether the recorded registry offered 'Did you mean' hints (on unless its misses say not)."""
    names = list(tape.started.tools)
    for turn in tape.turns:
        for result in turn.results:
            if result.producer == "registry_miss":
                bare = registry_miss_text(result.name, names, suggestions=False)
                hinted = registry_miss_text(result.name, names, suggestions=True)
                if result.content == bare and bare != hinted:
                    return False
    return True


class _Shortest(random.Random):
    """The jitter that gives a fallback chain's back-off its shortest wait (half the full one).

    A replay's waits must never outlast the recorded ones: each recorded request then finds the
    clock at or before its recorded time, and the paced model moves it there exactly, whatever
    jitter the recorded run drew.
    """

    def random(self) -> float:
        return 1.0 - 2.0**-53  # the largest float random() can return


def _models(tape: Tape, ours: bool) -> Model:
    """The recorded replies as the model: one paced script per model of a loopnb run's fallback
    chain (each behind a breaker like the recorded chain's), else one script of them all."""
    names = list(tape.started.models)
    template = _breaker(tape, "model", None) or CircuitBreaker(failure_threshold=3, cooldown=30.0)
    if ours and len(names) > 1:
        scripts: list[Model] = []
        for name in names:
            steps = model_steps(tape.events, name)
            scripts.append(PacedModel(ScriptedModel([s for _, _, s in steps], name=name), steps, tape))
        return FallbackChain(scripts, breaker=template, rng=_Shortest())
    steps = model_steps(tape.events)
    replied = [s.model for _, _, s in steps if isinstance(s, ModelReply) and s.model]
    name = (names[0] if names else None) or (replied[0] if replied else "recorded")
    script = ScriptedModel([s for _, _, s in steps], name=name)
    return FallbackChain([PacedModel(script, steps, tape)], breaker=template, rng=_Shortest())


def _breaker(tape: Tape, scope: str, target: str | None) -> CircuitBreaker | None:
    """A breaker with the threshold and cooldown the first opening of one (of ``target``, or any
    of ``scope``) shows, or ``None`` when none opened."""
    for event in tape.events:
        if (
            isinstance(event, BreakerTransitioned)
            and event.scope == scope
            and (target is None or event.target == target)
            and event.previous == "closed"
            and event.state == "open"
        ):
            return CircuitBreaker(failure_threshold=max(event.failures, 1), cooldown=event.cooldown)
    return None


def _tool_breakers(tape: Tape, names: list[str], notes: list[str]) -> dict[str, CircuitBreaker] | None:
    guarded = [n for n in tape.started.settings.get("tool_breakers", []) if n in names]
    out: dict[str, CircuitBreaker] = {}
    for name in guarded:
        breaker = _breaker(tape, "tool", name)
        if breaker is None:
            least = _longest_failing_streak(tape, name) + 1
            breaker = CircuitBreaker(failure_threshold=max(3, least), cooldown=30.0)
            notes.append(
                f"{name}'s breaker never opened in the recording, which does not hold its threshold: it is "
                f"rebuilt with failure_threshold={breaker.failure_threshold}, enough to stay closed"
            )
        out[name] = breaker
    return out or None


def _longest_failing_streak(tape: Tape, name: str) -> int:
    longest = streak = 0
    for turn in tape.turns:
        for result in turn.results:
            if result.name != name:
                continue
            streak = streak + 1 if result.producer in ("tool_error", "tool_panic", "timeout") else 0
            longest = max(longest, streak)
    return longest


def _tools(tape: Tape, changes: Mapping[str, Any], timeout: float | None) -> list[Tool]:
    """A replay tool for each tool the run had (and each that ran in it), the swapped ones in place."""
    names = list(dict.fromkeys([*tape.started.tools, *tape.ran()]))
    swapped = _swapped(changes.get("tools", {}))
    called = {c.name for t in tape.turns for c in t.calls}
    unknown = sorted(set(swapped) - set(names) - set(tape.started.advertised) - called)
    if unknown:
        raise ValueError(
            f"what_if(tools=...): {', '.join(map(repr, unknown))} is not a tool of the recorded run; its "
            f"tools are {', '.join(names) or '(none)'}"
        )
    texts: dict[str, str] = dict(changes.get("error_text", {}))
    real = {n for n, t in swapped.items() if isinstance(t, Tool)}
    _check_templates(tape, texts, [*names, *(n for n in swapped if n not in names)], real)
    tools: list[Tool] = []
    for name in [*names, *(n for n in swapped if n not in names)]:
        template = texts.get(name, texts.get(TOOL_ERROR))
        given = swapped.get(name)
        if isinstance(given, Tool):
            tools.append(given if template is None else _with_text(given, template, name))
        else:
            tools.append(ReplayTool(name, tape, timeout=timeout, error_text=template, answer=given))
    return tools


def _swapped(given: Any) -> dict[str, Tool | str | ToolError]:
    out: dict[str, Tool | str | ToolError] = {}
    items = given.items() if isinstance(given, Mapping) else ((getattr(t, "name", None), t) for t in given)
    for name, value in items:
        if isinstance(value, str | ToolError):
            out[str(name)] = value
        elif isinstance(value, Tool):
            out[str(name)] = (
                value
                if value.name == name
                else RecordedTool(value.fn, name=str(name), description=value.description)
            )
        elif callable(value):
            if name is None:
                raise TypeError(
                    f"what_if(tools=...): a list takes Tools; got {value!r:.60} (pass a dict of name -> "
                    "function)"
                )
            out[str(name)] = RecordedTool(value, name=str(name))
        else:
            raise _wrong("tools", value)
    return out


def _check_templates(tape: Tape, texts: dict[str, str], names: list[str], real: set[str]) -> None:
    unknown = sorted(set(texts) - set(names) - {TOOL_ERROR})
    if unknown:
        raise ValueError(
            f"what_if(error_text=...): {', '.join(map(repr, unknown))} is neither a tool of the recorded run "
            f"nor {TOOL_ERROR!r}; its tools are {', '.join(names) or '(none)'} (the engine words its other "
            "producers' texts itself: a what-if cannot change those)"
        )
    for key, template in texts.items():
        if key in real:
            continue  # checked against the given tool's own arguments
        tools = names if key == TOOL_ERROR else [key]
        allowed = {"error"} | {
            k
            for t in tape.turns
            for c in t.calls
            if c.name in tools and isinstance(c.arguments, dict)
            for k in c.arguments
        }
        extra = template_fields(template) - allowed
        if extra:
            raise ValueError(
                f"what_if(error_text={{{key!r}: ...}}) uses {', '.join(sorted(extra))}; a template may use "
                f"{', '.join(sorted(allowed))}"
            )


def _with_text(tool: Tool, template: str, key: str) -> Tool:
    """``tool`` whose errors read ``template``: the sweep's ``error_text``, on a real tool."""
    allowed = {"error", *tool.args_model.model_fields}
    extra = template_fields(template) - allowed
    if extra:
        raise ValueError(
            f"what_if(error_text={{{key!r}: ...}}) uses {', '.join(sorted(extra))}; for the tool given as "
            f"tools={{{tool.name!r}: ...}} a template may use {', '.join(sorted(allowed))}"
        )
    if usable_name(tool.name):
        return with_error_text(tool, template, "what_if")
    # with_error_text makes a plain Tool, which takes only the names a model's API takes: wrap the
    # function under a name it takes, then give the wrapped function back the recorded name
    wrapped = with_error_text(Tool(tool.fn, name="recorded", description=tool.description), template)
    return RecordedTool(wrapped.fn, name=tool.name, description=tool.description)
