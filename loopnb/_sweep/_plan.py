"""What a sweep runs: its configs, seeds and batches, from what ``loopnb.sweep`` was given.

``plan(...)`` turns scenario names or a task, seeds and configs into a ``Plan``: every config
resolved to a scenario (or the task), checked by building its engine once here, before anything
is shipped to a worker. The plan is written as ``OUT/_sweep.json`` (the leading ``_`` keeps it
out of ``pyarrow.dataset`` and of every ``*.parquet`` glob); a resumed sweep must plan the same.
Like every file loopnb writes, the plan is redacted (a key in the task or in a config's
``error_text`` is written ``[REDACTED]``, as in the batch files), so a resume compares plans as
written: two sweeps that differ only in a secret are one sweep, whose results read the same.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loopnb._sweep._batch import Batch
from loopnb._sweep._config import SweepConfig, build
from loopnb.record import DEFAULT_REDACTOR

PLAN_FILE = "_sweep.json"
FORMAT = "loopnb.sweep"
MAX_BATCH = 2000
"""Runs per batch at most when loopnb chooses: big enough that a 10-million-turn sweep is some
hundreds of files (DuckDB reads it nearly as fast as one table), small enough that a killed
worker loses seconds of work."""

_SNAKE = re.compile(r"[a-z][a-z0-9_]*")

Seeds = int | Iterable[int]
Configs = Sequence[SweepConfig] | Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Plan:
    """Every config of a sweep, its seeds, its task, and the runs per batch."""

    name: str
    task: str | None
    configs: tuple[SweepConfig, ...]
    seeds: tuple[int, ...]
    batch: int | None
    """Runs per batch; ``None`` until loopnb chooses, knowing the cluster (``choose_batch``)."""

    def batches(self, out: str) -> list[Batch]:
        """Every batch, config by config, seeds in order."""
        n = self.batch
        assert n is not None, "the batch size is chosen before the batches are made"
        return [
            Batch(out, self.name, config, self.task, i, self.seeds[start : start + n])
            for config in self.configs
            for i, start in enumerate(range(0, len(self.seeds), n))
        ]

    @property
    def runs(self) -> int:
        return len(self.configs) * len(self.seeds)

    def to_json(self) -> dict[str, Any]:
        """The plan as it is written (and compared on resume): redacted."""
        data: dict[str, Any] = _redacted(
            {
                "format": FORMAT,
                "version": 1,
                "name": self.name,
                "task": self.task,
                "configs": [c.to_json() for c in self.configs],
                "seeds": _seeds_json(self.seeds),
                "batch": self.batch,
            }
        )
        return data


def _redacted(data: Any) -> Any:
    """JSON data with every secret replaced by the redactor every recording is written with."""
    return json.loads(DEFAULT_REDACTOR(json.dumps(data, default=str)))


def _seeds_json(seeds: tuple[int, ...]) -> Any:
    """A contiguous range as ``{"range": [start, stop]}`` (a million seeds stay small), else the list."""
    if seeds and seeds == tuple(range(seeds[0], seeds[0] + len(seeds))):
        return {"range": [seeds[0], seeds[0] + len(seeds)]}
    return list(seeds)


def seeds_of_json(value: Any) -> tuple[int, ...]:
    if isinstance(value, dict):
        start, stop = value["range"]
        return tuple(range(start, stop))
    return tuple(value)


def plan(
    task_or_scenarios: str | Iterable[str] | None,
    *,
    seeds: Seeds,
    configs: Configs | None,
    batch: int | None,
) -> Plan:
    """The plan of a sweep; a ``ValueError`` (or ``TypeError``) naming what is wrong with the input."""
    task, scenarios = _task_or_scenarios(task_or_scenarios)
    chosen = _configs(task, scenarios, configs)
    seed_list = _seeds(seeds)
    for config in chosen:
        build(config, seed_list[0], task, [])  # a config that cannot make an engine fails here, once
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise ValueError(f"sweep: batch must be a number of runs >= 1 or None, got {batch!r}")
    return Plan(_name(chosen, task, seed_list), task, tuple(chosen), seed_list, batch)


def choose_batch(p: Plan, workers: int) -> Plan:
    """``p`` with the runs per batch loopnb chooses for ``workers``: some 8 batches a worker (the
    last ones balance the load), at most ``MAX_BATCH`` runs, at most one config's seeds."""
    if p.batch is not None:
        return p
    n = max(1, min(MAX_BATCH, math.ceil(p.runs / (8 * max(1, workers))), len(p.seeds)))
    return replace(p, batch=n)


def _task_or_scenarios(value: str | Iterable[str] | None) -> tuple[str | None, list[str]]:
    from loopnb.scenarios import SCENARIOS

    if value is None:
        return None, []
    if isinstance(value, str):
        if value in SCENARIOS:
            return None, [value]
        if not _SNAKE.fullmatch(value):
            return value, []  # a task: words, spaces, punctuation
        values: list[Any] = [value]
    else:
        values = list(value)
    for name in values:
        if not isinstance(name, str):
            raise TypeError(f"sweep: scenario names are strings, got {name!r}")
        _check_scenario(name)
    if not values:
        raise ValueError("sweep: no scenarios given")
    return None, list(dict.fromkeys(values))


def _check_scenario(name: str) -> None:
    from loopnb.scenarios import get

    try:
        get(name)
    except KeyError as exc:
        raise ValueError(f"sweep: {exc.args[0]}") from None


def _configs(task: str | None, scenarios: list[str], configs: Configs | None) -> list[SweepConfig]:
    if configs is None:
        if not scenarios:
            raise ValueError(
                "sweep: a task needs configs saying which model and tools run it, e.g. "
                "configs=[SweepConfig('fallible', model='fallible', tools=['read_file'])]"
            )
        return [SweepConfig(name, scenario=name) for name in scenarios]
    given = _given(configs)
    if not given:
        raise ValueError("sweep: configs is empty")
    out: list[SweepConfig] = []
    for config in given:
        if config.scenario is not None:
            _check_scenario(config.scenario)
            if scenarios:
                raise ValueError(
                    f"sweep: config {config.name} names scenario {config.scenario!r} and the sweep is "
                    f"over scenarios {', '.join(scenarios)}; name the scenario in one place only"
                )
            out.append(config)
        elif len(scenarios) == 1:
            out.append(config.with_scenario(scenarios[0]))
        elif scenarios:
            out.extend(config.with_scenario(s, f"{s}.{config.name}") for s in scenarios)
        elif task is None:
            raise ValueError(f"sweep: config {config.name} names no scenario and the sweep has no task")
        else:
            out.append(config)
    names = [c.name for c in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"sweep: config names must be unique; {', '.join(repeated)} is given twice")
    return out


def _given(configs: Configs) -> list[SweepConfig]:
    if isinstance(configs, Mapping):
        return [SweepConfig(name, **dict(fields)) for name, fields in configs.items()]
    if isinstance(configs, SweepConfig):
        return [configs]
    items = list(configs)
    for item in items:
        if not isinstance(item, SweepConfig):
            raise TypeError(f"sweep: configs holds {item!r:.60}; expected SweepConfig objects")
    return items


def _seeds(seeds: object) -> tuple[int, ...]:
    if isinstance(seeds, bool):
        raise TypeError(f"sweep: seeds must be a count or an iterable of ints, got {seeds!r}")
    if isinstance(seeds, numbers.Integral):
        if seeds < 1:
            raise ValueError(f"sweep: seeds=N needs N >= 1, got {seeds}")
        return tuple(range(int(seeds)))
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Iterable):
        raise TypeError(f"sweep: seeds must be a count or an iterable of ints, got {seeds!r:.60}")
    values = tuple(seeds)
    bad = [s for s in values if isinstance(s, bool) or not isinstance(s, numbers.Integral)]
    if bad:
        raise TypeError(f"sweep: seeds must be ints, got {bad[0]!r}")
    if not values:
        raise ValueError("sweep: seeds is empty")
    if len(set(values)) != len(values):
        raise ValueError("sweep: a seed is given twice (each config runs once per seed)")
    return tuple(int(s) for s in values)


def _name(configs: Sequence[SweepConfig], task: str | None, seeds: tuple[int, ...]) -> str:
    """A folder name for the sweep: its configs, and a digest of what it runs as written (the same
    sweep asked again gets the same folder, so ``resume=True`` finds it; nothing written is
    derived from a secret)."""
    names = [c.name for c in configs]
    head = "-".join(names) if len("-".join(names)) <= 40 else f"{names[0]}-and-{len(names) - 1}-more"
    digest = json.dumps(
        _redacted([task, [c.to_json() for c in configs], _seeds_json(seeds)]), sort_keys=True, default=str
    )
    return f"{head}-{hashlib.sha256(digest.encode()).hexdigest()[:8]}"


def written_plan(out: Path) -> dict[str, Any] | None:
    """The plan a folder holds (``None`` when it holds none)."""
    path = out / PLAN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a sweep's plan ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a sweep's plan (no format {FORMAT!r})")
    return data


_KEYS = ("task", "configs", "seeds", "batch")


def _same(old: dict[str, Any], new: dict[str, Any], batch_given: bool) -> bool:
    return all(old.get(k) == new[k] for k in _KEYS if k != "batch" or batch_given)


def check_resumable(out: Path, new: Plan, *, resume: bool, batch_given: bool) -> Plan:
    """The plan to run in ``out``: ``new``, or (resuming) the written one when they agree."""
    old = written_plan(out)
    if old is None:
        if resume or not any(out.glob("config=*/part-*.parquet")):
            return new
        raise ValueError(f"sweep: {out} holds sweep results but no {PLAN_FILE}; choose another out")
    started = any(out.glob("config=*/part-*.parquet"))
    if not resume and (started or not _same(old, new.to_json(), batch_given)):
        raise ValueError(
            f"sweep: {out} already holds a sweep ({old.get('name')}); pass resume=True to finish it "
            "(batches already written are skipped), or choose another out"
        )
    mine = new.to_json()
    if not batch_given:
        mine["batch"] = old.get("batch")
    for key in _KEYS:
        if old.get(key) != mine[key]:
            raise ValueError(
                f"sweep: cannot resume {out}: its {key} differ from this call's "
                f"({json.dumps(old.get(key))[:120]} written, {json.dumps(mine[key])[:120]} now)"
            )
    batch = mine["batch"]
    return Plan(
        str(old.get("name", new.name)),
        new.task,
        new.configs,
        new.seeds,
        None if batch is None else int(batch),
    )
