"""``SweepConfig``: a small, declarative description of an engine, shipped to workers and saved.

A config names what an engine is made of in plain data (names, numbers, mappings), so that it
pickles, travels to a Dask worker and is written as JSON beside the results::

    SweepConfig("terse", scenario="mistyped_path", error_text={"read_file": "failed"})
    SweepConfig("careful", model={"fallible": {"mistakes": []}}, tools=["read_file", "list_dir"])

Every field left ``None`` keeps what the scenario (or, for a task, the engine) does by default;
``"off"`` turns a safety system off. ``build(config, seed, task)`` makes the engine of one run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loopnb.analysis._error_text import with_error_text
from loopnb.engine import (
    AnalyseAndCorrect,
    CircuitBreaker,
    Clock,
    ConvergenceDetector,
    Engine,
    FakeClock,
    LoopDetector,
    RecoveryStrategy,
    RetryWithBackoff,
    SystemClock,
    Tool,
)
from loopnb.engine._state import Observer
from loopnb.engine.models import FallibleModel, Model, model_from_spec
from loopnb.faults import Fault, inject, parse
from loopnb.faults._targets import as_fault

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""A config's name: it is a folder name (``config=NAME``) and part of every run id."""

OFF = "off"

_RECOVERY: dict[str, Callable[..., RecoveryStrategy]] = {
    "analyse_and_correct": AnalyseAndCorrect,
    "retry_with_backoff": RetryWithBackoff,
}


def _workspace_tools() -> dict[str, Callable[[], Tool]]:
    from loopnb.scenarios._workspace import make_list_dir, make_read_file

    return {"read_file": make_read_file, "list_dir": make_list_dir}


@dataclass(frozen=True)
class SweepConfig:
    """One engine of a sweep, described in plain data.

    Attributes:
        name: the config's name: letters, digits, ``_``, ``.``, ``-`` (a folder name, ``config=NAME``).
        scenario: a built-in scenario to run (``loopnb.scenarios.names()``); ``None`` runs the
            sweep's task with ``model`` and ``tools``.
        model: ``None`` (the scenario's own model), a spec (``"fallible"``, ``"openai:gpt-4o-mini"``)
            or ``{"fallible": {...}}`` with ``FallibleModel`` options; a fallible model gets the run's seed.
        tools: for a task: workspace tools by name (``"read_file"``, ``"list_dir"``) or ``Tool``
            objects (shipped to the workers by cloudpickle, written by name).
        recovery: ``"off"``, ``"analyse_and_correct"``, ``"retry_with_backoff"``, or
            ``{name: {options}}``.
        loop_detector: ``"off"`` or ``LoopDetector`` options (``{"warn_after": 2}``).
        convergence: ``"off"`` or ``ConvergenceDetector`` options.
        breakers: ``"off"`` or tool name (``"*"`` for every tool) -> ``CircuitBreaker`` options.
        max_turns: the engine's ``max_turns``.
        timeout: the engine's tool ``timeout``, in seconds.
        error_text: tool name -> the text the model reads instead of the tool's own error text: a
            template with ``{error}`` (the tool's text) and the call's arguments (``{path}``).
        fake_clock: run on a ``FakeClock`` (back-off and cooldowns take no time); ``None`` keeps the
            scenario's choice (a task runs on the system clock).
        faults: tool name -> a fault (``loopnb.faults.error("busy").first(2)``) or its label,
            injected into that tool of every run (``loopnb.inject``, seeded with the run's seed, on
            the run's clock); kept and written as labels, so a grid of faults is a list of configs.
    """

    name: str
    scenario: str | None = None
    model: str | Mapping[str, Mapping[str, Any]] | None = None
    tools: Sequence[str | Tool] = ()
    recovery: str | Mapping[str, Mapping[str, Any]] | None = None
    loop_detector: str | Mapping[str, Any] | None = None
    convergence: str | Mapping[str, Any] | None = None
    breakers: str | Mapping[str, Mapping[str, Any]] | None = None
    max_turns: int | None = None
    timeout: float | None = None
    error_text: Mapping[str, str] = field(default_factory=dict)
    fake_clock: bool | None = None
    faults: Mapping[str, Fault | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ValueError(
                f"SweepConfig: name must be 1-100 letters, digits, '_', '.' or '-' (it names a folder), "
                f"got {self.name!r}"
            )
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "error_text", dict(self.error_text))
        try:  # a label is parsed (never evaluated) here, so a bad one fails before any run
            labels = {str(tool): as_fault(f, f"SweepConfig {self.name}: faults[{tool!r}]").label
                      for tool, f in dict(self.faults).items()}  # fmt: skip
        except ValueError as exc:
            raise ValueError(f"SweepConfig {self.name}: {exc}") from None
        object.__setattr__(self, "faults", labels)
        for tool in self.tools:
            if not isinstance(tool, str | Tool):
                raise TypeError(
                    f"SweepConfig {self.name}: tools take names or Tool objects, got {tool!r:.60}"
                )
        for tool, text in self.error_text.items():
            if not isinstance(text, str):
                raise TypeError(f"SweepConfig {self.name}: error_text[{tool!r}] must be a str, got {text!r}")
        for key in ("loop_detector", "convergence", "breakers", "recovery"):
            value = getattr(self, key)
            if isinstance(value, str) and value != OFF and not (key == "recovery" and value in _RECOVERY):
                known = ", ".join([repr(OFF), *(map(repr, _RECOVERY) if key == "recovery" else ())])
                raise ValueError(f"SweepConfig {self.name}: {key} {value!r} is not one of {known}")

    def with_scenario(self, scenario: str, name: str | None = None) -> SweepConfig:
        """This config applied to ``scenario`` (renamed ``name`` when given)."""
        return replace(self, scenario=scenario, name=name or self.name)

    def to_json(self) -> dict[str, Any]:
        """The config as JSON data (tools by name)."""
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["tools"] = [t if isinstance(t, str) else t.name for t in self.tools]
        plain: dict[str, Any] = _plain(data)
        return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def on_fake_clock(config: Mapping[str, Any]) -> bool:
    """Whether the runs of a config (as ``SweepConfig.to_json`` writes it) run on a ``FakeClock``:
    its own ``fake_clock``, else its scenario's choice; a task runs on the system clock."""
    from loopnb.scenarios import get

    if config.get("fake_clock") is not None:
        return bool(config["fake_clock"])
    return config.get("scenario") is not None and get(str(config["scenario"])).fake_clock


def build(
    config: SweepConfig, seed: int, task: str | None, observers: Sequence[Observer]
) -> tuple[Engine, str]:
    """The engine of one run of ``config`` with ``seed``, and the task it is given."""
    from loopnb.scenarios import get
    from loopnb.scenarios._scenario import Build

    if config.scenario is not None:
        scenario = get(config.scenario)
        clock: Clock = FakeClock() if on_fake_clock(config.to_json()) else SystemClock()
        kwargs = scenario.builder(Build(clock=clock, seed=seed))
        kwargs.setdefault("clock", clock)
        task = scenario.task
    else:
        if task is None:
            raise ValueError(f"SweepConfig {config.name}: names no scenario, and the sweep has no task")
        clock = FakeClock() if config.fake_clock else SystemClock()
        kwargs = {"clock": clock, "tools": _tools(config)}
        if config.model is None:
            raise ValueError(f"SweepConfig {config.name}: a task needs a model (e.g. model='fallible')")
    if config.model is not None:
        kwargs["model"] = _model(config, seed)
    _apply(config, kwargs, seed)
    kwargs["observers"] = [*kwargs.get("observers", ()), *observers]
    return Engine(**kwargs), task


def _tools(config: SweepConfig) -> list[Tool]:
    known = _workspace_tools()
    tools = []
    for item in config.tools:
        if isinstance(item, Tool):
            tools.append(item)
        elif item in known:
            tools.append(known[item]())
        else:
            raise ValueError(
                f"SweepConfig {config.name}: no workspace tool named {item!r}; the workspace has "
                f"{', '.join(known)} (or pass Tool objects)"
            )
    return tools


def _model(config: SweepConfig, seed: int) -> Model:
    spec = config.model
    if isinstance(spec, str):
        if spec.strip().lower() == "fallible":
            return FallibleModel(seed=seed)
        return model_from_spec(spec)
    if isinstance(spec, Mapping) and len(spec) == 1 and "fallible" in spec:
        options = dict(spec["fallible"])
        return FallibleModel(seed=options.pop("seed", seed), **options)
    raise ValueError(
        f"SweepConfig {config.name}: model must be a spec ('fallible', 'openai:<model>', ...) or "
        f"{{'fallible': {{options}}}}, got {spec!r}"
    )


def _options(config: SweepConfig, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"SweepConfig {config.name}: {key} must be 'off' or a mapping, got {value!r}")
    return dict(value)


def _apply(config: SweepConfig, kwargs: dict[str, Any], seed: int) -> None:
    """Put the config's engine settings into ``kwargs`` (an Engine's keyword arguments)."""
    if config.recovery is not None:
        kwargs["recovery"] = _recovery(config)
    if config.loop_detector is not None:
        ld = config.loop_detector
        kwargs["loop_detector"] = None if ld == OFF else LoopDetector(**_options(config, "loop_detector", ld))
    if config.convergence is not None:
        cv = config.convergence
        kwargs["convergence"] = (
            None if cv == OFF else ConvergenceDetector(**_options(config, "convergence", cv))
        )
    if config.breakers is not None:
        kwargs["breakers"] = _breakers(config, kwargs)
    if config.max_turns is not None:
        kwargs["max_turns"] = config.max_turns
    if config.timeout is not None:
        kwargs["timeout"] = config.timeout
    if config.error_text:
        kwargs["tools"] = _rewritten(config, list(kwargs.get("tools", ())))
    if config.faults:
        faults = {tool: parse(str(label)) for tool, label in config.faults.items()}
        kwargs["tools"] = inject(list(kwargs.get("tools", ())), faults, seed=seed, clock=kwargs["clock"])


def _recovery(config: SweepConfig) -> RecoveryStrategy | None:
    spec = config.recovery
    if spec == OFF:
        return None
    name, options = (spec, {}) if isinstance(spec, str) else _one(config, "recovery", spec)
    if name not in _RECOVERY:
        raise ValueError(f"SweepConfig {config.name}: recovery {name!r} is not one of {', '.join(_RECOVERY)}")
    return _RECOVERY[name](**options)


def _one(config: SweepConfig, key: str, spec: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise TypeError(
            f"SweepConfig {config.name}: {key} must be a name or {{name: {{options}}}}, got {spec!r}"
        )
    ((name, options),) = spec.items()
    return name, _options(config, key, options)


def _breakers(
    config: SweepConfig, kwargs: dict[str, Any]
) -> dict[str, CircuitBreaker] | CircuitBreaker | None:
    spec = config.breakers
    if spec == OFF:
        return None
    table = _options(config, "breakers", spec)
    if "*" in table:
        return CircuitBreaker(**_options(config, "breakers['*']", table["*"]))
    return {name: CircuitBreaker(**_options(config, f"breakers[{name!r}]", o)) for name, o in table.items()}


def _rewritten(
    config: SweepConfig, tools: list[Tool | Callable[..., Any]]
) -> list[Tool | Callable[..., Any]]:
    by_name = {t.name if isinstance(t, Tool) else getattr(t, "__name__", ""): t for t in tools}
    unknown = sorted(set(config.error_text) - set(by_name))
    if unknown:
        raise ValueError(
            f"SweepConfig {config.name}: error_text names {', '.join(unknown)}, which the engine does not "
            f"have; its tools are {', '.join(by_name) or '(none)'}"
        )
    out: list[Tool | Callable[..., Any]] = []
    for name, item in by_name.items():
        template = config.error_text.get(name)
        tool = item if isinstance(item, Tool) else Tool(item)
        out.append(tool if template is None else with_error_text(tool, template, config.name))
    return out
