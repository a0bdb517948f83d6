"""``Scenario``: a deterministic teaching run, its declared ending, and what it returned.

A scenario builds a fresh engine each time (nothing leaks between runs), runs its task, and
returns an ``Outcome`` whether the run ended ok or hard: ``outcome.run`` is the ``RunResult`` or
the salvaged run a ``LoopError`` carried, ``outcome.error`` the error itself (``None`` when ok),
and ``outcome.events`` every event the run emitted. ``outcome.as_expected`` compares the ending
and the soft producers seen with what the scenario declares.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from loopnb.engine import (
    CancelToken,
    Clock,
    Engine,
    FakeClock,
    Message,
    RunResult,
    SystemClock,
    ToolResult,
    Turn,
    turns_of,
)
from loopnb.engine._errors import HardProducer, LoopError, SoftProducer
from loopnb.engine._events import Event, RunStarted
from loopnb.engine._state import Observer
from loopnb.faults import Fault, inject

Ending = Literal["ok"] | HardProducer
"""How a run ends: ``"ok"`` (a final reply) or the producer of the hard error that ended it."""


@dataclass(frozen=True, slots=True)
class Build:
    """What a scenario's builder receives: the engine's clock and the model's seed."""

    clock: Clock
    seed: int


Builder = Callable[[Build], dict[str, Any]]
"""``builder(build) -> Engine keyword arguments`` (``model`` and ``tools`` at least)."""


@dataclass(frozen=True)
class Scenario:
    """A built-in teaching run.

    Attributes:
        name: the registry key, snake_case (``mistyped_path``).
        title: one line for listings.
        teaches: the principle the run makes visible, in a sentence or two.
        task: what the model is asked.
        ending: ``"ok"`` or the hard producer the run is declared to end with.
        soft: the soft producers the run is declared to show (exactly these).
        builder: makes the engine's keyword arguments; called afresh for every engine.
        seed: the default seed of the scenario's ``FallibleModel`` (ignored by scripted ones).
        fake_clock: whether the scenario runs on a ``FakeClock`` by default (cooldowns, back-off).
    """

    name: str
    title: str
    teaches: str
    task: str
    ending: Ending
    soft: frozenset[SoftProducer]
    builder: Builder = field(repr=False)
    seed: int = 0
    fake_clock: bool = False

    def engine(
        self,
        *,
        clock: Clock | None = None,
        observers: Iterable[Observer] = (),
        seed: int | None = None,
        faults: Mapping[str, Fault | str] | None = None,
        **overrides: Any,
    ) -> Engine:
        """A fresh engine for this scenario; ``overrides`` replace any of its Engine arguments.

        ``faults`` (``{tool_name: fault}``, a fault or its label) are injected into the scenario's
        tools (``loopnb.inject``, seeded with the run's seed, on the run's clock).
        """
        _check_seed(self.name, seed)
        clock = clock if clock is not None else (FakeClock() if self.fake_clock else None)
        build = Build(clock=clock or SystemClock(), seed=self.seed if seed is None else seed)
        kwargs = {**self.builder(build), **overrides}
        kwargs.setdefault("clock", build.clock)
        if faults:
            kwargs["tools"] = inject(
                list(kwargs.get("tools", ())), faults, seed=build.seed, clock=kwargs["clock"]
            )
        kwargs["observers"] = [*kwargs.get("observers", ()), *observers]
        return Engine(**kwargs)

    def run(
        self,
        *,
        clock: Clock | None = None,
        observers: Iterable[Observer] = (),
        seed: int | None = None,
        cancel: CancelToken | None = None,
        faults: Mapping[str, Fault | str] | None = None,
        **overrides: Any,
    ) -> Outcome:
        """Run the scenario once; a hard ending is returned (``outcome.error``), not raised.
        ``faults`` are injected into its tools (see ``engine``)."""
        events: list[Event] = []
        observing = [events.append, *observers]
        engine = self.engine(clock=clock, observers=observing, seed=seed, faults=faults, **overrides)
        try:
            result = engine.run(self.task, cancel=cancel)
        except LoopError as err:
            assert err.run is not None, "the engine attaches the salvaged run to every LoopError"
            return Outcome(self, err.run, err, tuple(events))
        return Outcome(self, result, None, tuple(events))

    def describe(self) -> str:
        """Name, title and the declared ending, for listings."""
        return f"{self.name}: {self.title} (ends {self.ending})"


def _check_seed(scenario: str, seed: object) -> None:
    """Refuse a seed that is not an int (a bool is not one) or ``None``, from untyped callers too."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise TypeError(f"scenario {scenario}: seed must be an int or None, got {seed!r}")


@dataclass(frozen=True)
class Outcome:
    """What a scenario run returned, ok or hard."""

    scenario: Scenario
    run: RunResult
    error: LoopError | None
    events: tuple[Event, ...] = field(repr=False)

    @property
    def ending(self) -> Ending:
        return "ok" if self.error is None else self.error.producer

    @property
    def output(self) -> str | None:
        return self.run.output

    @property
    def turns(self) -> list[Turn]:
        """Every turn, including the hard one a run ended on."""
        return turns_of(self.events)

    @property
    def soft(self) -> frozenset[SoftProducer]:
        """The soft producers the model read during the run."""
        seen: set[SoftProducer] = set()
        for turn in self.turns:
            read: list[ToolResult | Message] = [*turn.results, *turn.feedback]
            seen.update(item.producer for item in read if item.is_error and item.producer)
        return frozenset(seen)

    @property
    def model_names(self) -> tuple[str, ...]:
        started = next((e for e in self.events if isinstance(e, RunStarted)), None)
        return started.models if started else ()

    @property
    def as_expected(self) -> bool:
        """The declared ending, and exactly the declared soft producers."""
        return self.ending == self.scenario.ending and self.soft == self.scenario.soft

    def mismatch(self) -> str | None:
        """What differs from the declaration, in words (``None`` when as expected)."""
        problems = []
        if self.ending != self.scenario.ending:
            problems.append(f"ended {self.ending}, declared {self.scenario.ending}")
        if self.soft != self.scenario.soft:
            problems.append(f"soft producers {sorted(self.soft)}, declared {sorted(self.scenario.soft)}")
        return "; ".join(problems) or None
