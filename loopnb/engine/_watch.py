"""The safety-system protocol, and the watches of one run.

A safety system is configuration an agent keeps (``SafetySystem``: a ``name`` and ``new_run()``); each
run gets a ``SafetyWatch`` of its own from it, so runs never leak into each other. The loop detector,
convergence and ``max_turns`` are three of them (``_safety``); ``Engine(safety=[...])`` adds a user's.
``RunSafety`` asks a run's watches at four points, in the order their systems are given (the loop
detector, ``max_turns``, convergence, then the user's):

- ``at_turn(turn)``: a turn begins, before the model is asked;
- ``before_call(call)``: a tool call is about to be dispatched (the first system to refuse it
  answers it: the ones after it are not asked);
- ``after_result(call, result)``: the dispatcher answered a call (a call refused before it is not
  dispatched);
- ``after_rejection(answer)``: the run's done-check rejected a final answer.

A hook answers ``None`` or a ``SafetySignal``, whose action says what happens (the texts are
``_texts``'; ``DetectorFired`` reports each of loopnb's own detectors acting):

============  ===================================================================================
``refuse``    before a call only: the call is not run; the model reads ``dispatch refused before
              execution: <text>`` as its result (``loop_refusal``)
``warn``      the model reads the text after this turn's results or its rejected answer
              (``convergence_warning``), and the run goes on
``stop``      the run ends: ``LoopDetected(text)``
``ask_user``  the run ends: ``UserInputRequired(text)``
============  ===================================================================================

A watch whose hook raises, or answers anything else, is broken: it is detached from the run with a
``LoopnbWarning`` and the run goes on, as with a broken observer (``KeyboardInterrupt`` is Ctrl-C
landing there: the run ends ``Cancelled``).

Every tool call would cost a question to each watch with per-call hooks, so a watch may say when it
has nothing to say. One that is not ``armed`` (the loop detector with no streak long enough to act on)
would answer ``None`` before any call; one that is ``idle`` (the loop detector with no failure in mind)
is not armed either, and learns nothing from a success. While no watch is armed the loop asks nothing
before a call (``RunSafety.armed``); while every watch is idle it asks ``after_result`` about failed
results only (``RunSafety.busy``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, get_args, runtime_checkable

from loopnb.engine._errors import LoopnbWarning, SoftProducer, exception_text, shown
from loopnb.engine._events import DetectorAction
from loopnb.engine._messages import Message, ToolCall, ToolResult
from loopnb.engine._state import RunState
from loopnb.engine._texts import refusal_text

_ACTIONS: tuple[str, ...] = get_args(DetectorAction)
HOOKS = ("at_turn", "before_call", "after_result", "after_rejection")
"""A watch's hooks, in the order a turn meets them."""


@dataclass(frozen=True, slots=True)
class SafetySignal:
    """What a safety system says at a hook: ``refuse`` a call, ``warn`` the model, ``stop`` the run, or
    ``ask_user`` (see ``SafetyWatch`` for what each does)."""

    action: DetectorAction
    text: str
    """What the model reads (``refuse``, ``warn``), or the hard error's message (``stop``, ``ask_user``)."""
    count: int = 1
    """How many times the system saw what it acted on (a detector event's ``count``)."""

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise ValueError(
                f"SafetySignal: action must be one of {', '.join(_ACTIONS)}; got {self.action!r}"
            )
        if not isinstance(self.text, str):
            raise TypeError(f"SafetySignal: text must be a str, got {type(self.text).__name__}")


class SafetyWatch:
    """One run of a safety system: its state, and the hooks the engine asks.

    Each hook answers ``None`` (nothing to say) or a ``SafetySignal``: ``refuse`` (before a call only:
    the call is not run and the model reads ``dispatch refused before execution: <text>`` as its
    result), ``warn`` (the model reads the text after this turn's results, and the run goes on),
    ``stop`` (``LoopDetected``) or ``ask_user`` (``UserInputRequired``). Override the hooks a system
    needs: the engine calls only those. A hook that raises detaches its watch from the run, with a
    ``LoopnbWarning``.
    """

    __slots__ = ()

    @property
    def idle(self) -> bool:
        """True while ``before_call`` would answer ``None`` and a successful result would change
        nothing (the loop detector, with no failing call in mind): the engine may then skip both.
        ``False`` unless a watch overrides it; the engine reads it after each round of hooks."""
        return False

    @property
    def armed(self) -> bool:
        """False while ``before_call`` would answer ``None`` whatever the call (the loop detector,
        with no streak long enough to act on): the engine then does not ask it, though it may still
        ask ``after_result``. ``True`` unless a watch overrides it; read, like ``idle``, after each
        round of hooks but ``before_call``'s (an idle watch is not asked whatever this says)."""
        return True

    def at_turn(self, turn: int) -> SafetySignal | None:
        """Turn ``turn`` (1, 2, ...) begins, before the model is asked."""
        return None

    def before_call(self, call: ToolCall) -> SafetySignal | None:
        """The model's ``call`` is about to be dispatched."""
        return None

    def after_result(self, call: ToolCall, result: ToolResult) -> SafetySignal | None:
        """The dispatcher answered ``call`` with ``result`` (after any recovery retries)."""
        return None

    def after_rejection(self, answer: str) -> SafetySignal | None:
        """The run's done-check (``Engine(done=...)``) rejected the final ``answer``."""
        return None


@runtime_checkable
class SafetySystem(Protocol):
    """A safety system: configuration an agent keeps, with a fresh ``SafetyWatch`` for each run.

    The loop detector, ``ConvergenceDetector`` and ``max_turns`` are three; pass your own as
    ``Engine(safety=[...])``. ``name`` says which system acted (loopnb's own detectors are ``loop``,
    ``convergence`` and ``max_turns``).
    """

    @property
    def name(self) -> str: ...

    def new_run(self) -> SafetyWatch: ...


Hook = Callable[..., Any]
Asked = tuple[tuple[str, SafetySystem, str, Hook], ...]
"""The hooks of one kind a run asks: each with its system's name, the system and the hook's kind."""


class RunSafety:
    """One run's watches, asked at each hook, and their signals turned into what they mean."""

    __slots__ = (
        "after",
        "armed",
        "before",
        "busy",
        "notes",
        "per_call",
        "refuse",
        "rejected",
        "state",
        "turn",
        "watches",
    )

    def __init__(
        self,
        systems: Iterable[SafetySystem],
        state: RunState,
        refuse: Callable[[ToolCall, RunState, str, SoftProducer], ToolResult],
    ) -> None:
        self.state = state
        self.refuse = refuse
        """Answers a call refused before dispatch (the dispatcher's, so every refusal is reported alike)."""
        self.notes: list[Message] = []
        """This turn's warnings, for the model to read after its results."""
        self.watches: list[tuple[SafetySystem, str, SafetyWatch]] = []
        for system in systems:
            try:
                name: object = system.name  # a str, unless the system breaks the protocol
                watch = system.new_run()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                _warn(system, "new_run", f"raised {type(exc).__name__}: {exception_text(exc)}")
                continue
            if isinstance(name, str):
                self.watches.append((system, name, watch))
            else:
                _warn(system, "name", f"is {shown(name)}, not a str")
        self._gather()

    def _gather(self) -> None:
        """Each kind of hook the watches define, in the order of their systems."""
        asked: tuple[list[tuple[str, SafetySystem, str, Hook]], ...] = ([], [], [], [])  # as HOOKS
        per_call: list[tuple[SafetySystem, SafetyWatch]] = []
        for system, name, watch in self.watches:
            cls: type = type(watch)
            kinds = _kinds(cls)
            for kind in kinds:
                hook = HOOKS[kind]
                asked[kind].append((name, system, hook, getattr(watch, hook)))
            if _BEFORE in kinds or _AFTER in kinds:
                per_call.append((system, watch))
        self.turn: Asked = tuple(asked[0])
        self.before: Asked = tuple(asked[_BEFORE])
        self.after: Asked = tuple(asked[_AFTER])
        self.rejected: Asked = tuple(asked[3])
        self.per_call = per_call
        self._settle()

    def _settle(self) -> None:
        """``busy``: whether some watch with per-call hooks is not ``idle`` (else nothing is asked
        before a call, and only failed results after one); ``armed``: whether some watch that is not
        idle is ``armed`` (else nothing is asked before a call). A watch not made from ``SafetyWatch``
        is never idle and always armed; anything but ``True`` and ``False`` counts as neither."""
        busy = armed = False
        for system, watch in self.per_call:
            said = "idle"
            try:
                if getattr(watch, "idle", False) is True:
                    continue
                busy, said = True, "armed"
                if getattr(watch, "armed", True) is not False:
                    armed = True
                    break
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                self._detach(system, said, f"raised {type(exc).__name__}: {exception_text(exc)}")
                return  # detaching settled the rest
        self.busy, self.armed = busy, armed

    def ask(self, hooks: Asked, call: ToolCall | None, *args: Any) -> ToolResult | None:
        """Ask ``hooks`` (one kind: ``self.turn``, ``self.before``, ...) with ``args`` and act on each
        signal; ``call`` is the call a ``before_call`` hook may refuse, and its refusal comes back
        (the hooks after it are not asked). A hook that raises has its watch detached and says
        nothing. Asked on every tool call: the hook is called here, not through a helper."""
        refusal = None
        for name, system, kind, hook in hooks:
            try:
                signal = hook(*args)
            except KeyboardInterrupt:  # Ctrl-C landing in the hook: the run ends as Cancelled
                raise
            except BaseException as exc:  # a broken watch is detached, and the run goes on (SystemExit too)
                self._detach(system, kind, f"raised {type(exc).__name__}: {exception_text(exc)}")
                continue
            if signal is None:
                continue
            signal = self._checked(system, kind, signal)
            if signal is not None and (refusal := self.act(name, signal, call)) is not None:
                break
        if refusal is None and self.per_call and hooks is not self.before:
            self._settle()  # a watch asked before a call was busy, and may become idle only after it
        return refusal

    def _checked(self, system: SafetySystem, kind: str, signal: object) -> SafetySignal | None:
        """``signal`` when it is one ``kind`` may give (``refuse`` is ``before_call``'s alone); else
        the watch is detached and ``None``."""
        if not isinstance(signal, SafetySignal):
            self._detach(system, kind, f"answered {shown(signal)}, not a SafetySignal or None")
        elif signal.action == "refuse" and kind != "before_call":
            self._detach(system, kind, "answered refuse, which only before_call may (a call to refuse)")
        else:
            return signal
        return None

    def take_notes(self) -> list[Message]:
        """This turn's warnings, for the model to read (and no longer held here)."""
        notes, self.notes = self.notes, []
        return notes

    def act(self, name: str, signal: SafetySignal, call: ToolCall | None) -> ToolResult | None:
        """What a system's signal means: the refusal of ``call``, a note for the model, or the hard
        error that ends the run (``LoopDetected`` for ``stop``, ``UserInputRequired`` for ``ask_user``)."""
        state, action, text = self.state, signal.action, signal.text
        if action == "stop":
            state.stop(name, text, signal.count)
        if action == "ask_user":
            state.ask_user(name, text, signal.count)
        state.signal(name, action, text, signal.count)
        if action == "refuse" and call is not None:  # the call is not dispatched: the model reads why
            return self.refuse(call, state, refusal_text(text), "loop_refusal")
        self.notes.append(Message(role="user", content=text, is_error=True, producer="convergence_warning"))
        return None

    def _detach(self, system: SafetySystem, kind: str, what: str) -> None:
        self.watches = [watch for watch in self.watches if watch[0] is not system]
        self._gather()
        _warn(system, kind, what)


_BEFORE, _AFTER = HOOKS.index("before_call"), HOOKS.index("after_result")


@functools.lru_cache(maxsize=256)  # asked once a run, per watch: a class's hooks do not change
def _kinds(cls: type) -> tuple[int, ...]:
    """The hooks (their places in ``HOOKS``) a watch class has of its own: ``SafetyWatch``'s say nothing."""
    return tuple(
        i
        for i, hook in enumerate(HOOKS)
        if (method := getattr(cls, hook, None)) is not getattr(SafetyWatch, hook) and callable(method)
    )


def _warn(system: SafetySystem, where: str, what: str) -> None:
    warnings.warn(
        f"loopnb: safety system {_name(system)}: {where} {what}; it was detached from this run and "
        "the run goes on",
        LoopnbWarning,
        stacklevel=2,
    )


def _name(system: SafetySystem) -> str:
    """The system's ``name`` (quoted), or its repr when it has no name that is a str."""
    try:
        name = system.name
    except Exception:
        name = None
    return repr(name) if isinstance(name, str) else shown(system)
