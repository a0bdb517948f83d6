"""``Sweep``: a sweep's results folder read as frames, while it is written or after.

The folder is a hive-partitioned Parquet dataset (``config=NAME/part-*.parquet``, each file a
loopnb recording of one batch, or of several once compacted: ``_compact``) and its plan
(``_sweep.json``). ``turns`` reads every batch written
so far through ``pyarrow.dataset`` into the recorder's own turns frame, with ``config`` and
``seed`` in front; ``events`` reads the events each file keeps; ``audit()`` is ``loopnb.audit``
over them, and ``query(sql)`` is ``loopnb.query`` over the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb._sweep._batch import batch_files, partition, run_id, written
from loopnb._sweep._plan import PLAN_FILE, seeds_of_json, written_plan

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.analysis import Audit


class Sweep:
    """The results of ``loopnb.sweep``: every run of every config and seed, as frames.

    ``Sweep(path)`` opens a sweep's folder (also one still being written: what is written so far).
    """

    def __init__(self, path: str | Path, *, figures: list[dict[str, Any]] | None = None) -> None:
        self.path = Path(path)
        found = written_plan(self.path)
        if found is None:
            raise ValueError(f"{self.path}: not a sweep's folder (no {PLAN_FILE})")
        self.plan: dict[str, Any] = found
        self.configs: list[str] = [c["name"] for c in found["configs"]]
        self.seeds: tuple[int, ...] = seeds_of_json(found["seeds"])
        self.batch: int = int(found["batch"])
        self._figures = list(figures or [])
        self._cache: dict[str, tuple[tuple[Any, ...], Any]] = {}

    @property
    def name(self) -> str:
        return str(self.plan.get("name", self.path.name))

    def files(self) -> list[Path]:
        """The batch files written so far (a compacted file holds several batches), config by
        config in the plan's order, batch by batch."""
        n = -(-len(self.seeds) // self.batch)
        return [p for c in self.configs for first, _, p in batch_files(partition(self.path, c)) if first < n]

    def missing(self) -> list[tuple[str, int]]:
        """The ``(config, batch)`` of every batch not written yet."""
        n = -(-len(self.seeds) // self.batch)
        done = written(self.path, self.configs)
        return [(c, i) for c in self.configs for i in range(n) if (c, i) not in done]

    def compact(self) -> None:
        """Merge each config's batch files into a few large ones, so that a query reads the sweep
        about as fast as one table (``loopnb.sweep`` does it itself when a sweep of many files
        finishes). Every run, config and seed is kept; a resumed sweep goes on from the merged
        files. Holds the folder's lock: refused (``ValueError``) while a sweep writes to it.

        Raises:
            ValueError: a sweep is writing to the folder now.
            RecordingError: a batch file is not a whole recording (nothing is replaced then).
        """
        from loopnb._sweep._compact import compact
        from loopnb._sweep._lock import holding

        with holding(self.path):
            compact(self.path, self.configs)

    @property
    def complete(self) -> bool:
        return not self.missing()

    def _cached(self, name: str, build: Any) -> Any:
        files = self.files()
        key = tuple((p.name, p.parent.name, p.stat().st_mtime_ns) for p in files)
        hit = self._cache.get(name)
        if hit is None or hit[0] != key:
            hit = self._cache[name] = (key, build(files))
        return hit[1].copy(deep=False)

    @property
    def turns(self) -> pd.DataFrame:
        """One row per turn of every run written so far: ``config``, ``seed``, then the columns of
        ``TURNS`` (``loopnb schema``); each run has its own ``run_id`` (``CONFIG-SEED``)."""
        return self._cached("turns", self._read_turns)  # type: ignore[no-any-return]

    @property
    def events(self) -> pd.DataFrame:
        """One row per event of every run written so far: ``config``, ``seed``, then ``EVENTS``."""
        return self._cached("events", self._read_events)  # type: ignore[no-any-return]

    def _read_turns(self, files: list[Path]) -> pd.DataFrame:
        import pyarrow.dataset as ds

        from loopnb.record._arrow import pyarrow, to_frame
        from loopnb.record._frames import turn_frame
        from loopnb.record._schema import TURN_COLUMNS, TURNS

        pa, _ = pyarrow()
        if not files:
            return self._keyed(turn_frame([]), [], [])
        hive = ds.partitioning(pa.schema([("config", pa.string())]), flavor="hive")
        data = ds.dataset(
            [str(p) for p in files], format="parquet", partitioning=hive, partition_base_dir=str(self.path)
        )
        table = data.to_table(columns=["config", "seed", *TURN_COLUMNS])
        configs = table.column("config").to_pylist()
        seeds = table.column("seed").to_pylist()
        return self._keyed(to_frame(table.drop_columns(["config", "seed"]), TURNS), configs, seeds)

    def _read_events(self, files: list[Path]) -> pd.DataFrame:
        from loopnb.record._frames import event_table
        from loopnb.record._parquet import read_parquet

        events = [e for p in files for e in read_parquet(p).event_objects]
        frame = event_table(events)
        of = {run_id(c, s): (c, s) for c in self.configs for s in self.seeds}
        keys = [of.get(r, (None, None)) for r in frame["run_id"].tolist()] if len(frame) else []
        return self._keyed(frame, [k[0] for k in keys], [k[1] for k in keys])

    def _keyed(self, frame: pd.DataFrame, configs: list[Any], seeds: list[Any]) -> pd.DataFrame:
        import pandas as pd

        frame.insert(0, "seed", pd.Series(seeds, index=frame.index, dtype="Int64"))
        config = pd.Categorical(configs, categories=self.configs)
        frame.insert(0, "config", pd.Series(config, index=frame.index))
        return frame

    def audit(self, config: str | None = None, *, events: bool = True) -> Audit:
        """``loopnb.audit`` of every run (or of one config's runs); with ``events`` (the default),
        per-call detail comes from the events."""
        from loopnb.analysis import Audit

        if config is not None and config not in self.configs:
            raise ValueError(
                f"sweep {self.name}: no config named {config!r}; its configs are {', '.join(self.configs)}"
            )
        turns = self.turns
        ev = self.events if events else None
        if config is not None:
            turns = turns[turns["config"] == config]
            ev = None if ev is None else ev[ev["config"] == config]
        from loopnb._sweep._config import on_fake_clock

        # simulated time (a FakeClock's back-off and cooldowns) is not latency
        fake = [c["name"] for c in self.plan["configs"] if on_fake_clock(c)]
        simulated = [run_id(c, s) for c in fake if config in (None, c) for s in self.seeds]
        return Audit(
            turns.drop(columns=["config", "seed"]),
            None if ev is None else ev.drop(columns=["config", "seed"]),
            simulated=simulated,
        )

    def by_config(self) -> pd.DataFrame:
        """Per config: ``runs``, ``turns``, ``soft_turns``, runs ``ended_ok`` and ``ended_hard``, soft
        streaks (``episodes``), how many the model ``recovered`` from on its own, and ``recovery_rate``
        (recovered / episodes, 0 to 1; missing without episodes): self-recovery, turn by turn. Next
        to it, per call: the tools' ``soft_errors``, how many were followed later in the run by a
        success of the same tool (``errors_recovered``) and that share, ``tool_recovery_rate``
        (``Audit.recovery_rate``'s measure; missing without soft errors), and ``false_successes``:
        runs that ended with an answer past a tool error never got over (``Audit.false_success``)."""
        import pandas as pd

        from loopnb.analysis import Audit

        turns = self.turns
        calls = self._per_call()
        rows = []
        for config in self.configs:
            t = turns[turns["config"] == config]
            hard_runs = t.loc[t["channel"] == "hard", "run_id"].nunique()
            episodes = Audit(t.drop(columns=["config", "seed"])).recovery_episodes() if len(t) else None
            n_episodes = 0 if episodes is None else len(episodes)
            recovered = 0 if episodes is None else int((episodes["outcome"] == "recovered").sum())
            rows.append(
                {
                    "config": config,
                    "runs": t["run_id"].nunique(),
                    "turns": len(t),
                    "soft_turns": int((t["channel"] == "soft").sum()),
                    "ended_ok": t["run_id"].nunique() - hard_runs,
                    "ended_hard": hard_runs,
                    "episodes": n_episodes,
                    "recovered": recovered,
                    "recovery_rate": recovered / n_episodes if n_episodes else None,
                    **calls.get(config, {"soft_errors": 0, "errors_recovered": 0, "false_successes": 0}),
                }
            )
        frame = pd.DataFrame(rows)
        counts = ("runs", "turns", "soft_turns", "ended_ok", "ended_hard", "episodes", "recovered")
        for name in (*counts, "soft_errors", "errors_recovered", "false_successes"):
            frame[name] = frame[name].astype("Int64")
        frame["recovery_rate"] = frame["recovery_rate"].astype("Float64")
        errors = frame["soft_errors"].to_numpy(float)
        share = frame["errors_recovered"].to_numpy(float) / errors.clip(min=1)
        frame["tool_recovery_rate"] = pd.array(
            [r if e else None for r, e in zip(share, errors, strict=True)], "Float64"
        )
        per_call = ["soft_errors", "errors_recovered", "tool_recovery_rate", "false_successes"]
        frame = frame[[*(c for c in frame.columns if c not in per_call), *per_call]]
        frame["config"] = pd.Categorical(frame["config"], categories=self.configs)
        return frame

    def _per_call(self) -> dict[str, dict[str, int]]:
        """Per config: its tools' soft errors, how many were got past, and its false successes."""
        from loopnb.analysis._recovery_rate import false_success, soft_errors

        events = self.events
        keys = ["config", "run_id"]
        errors = soft_errors(events, keys)
        false = false_success(events, keys)
        out: dict[str, dict[str, int]] = {}
        for config in self.configs:
            mine = errors[errors["config"] == config]
            out[config] = {
                "soft_errors": len(mine),
                "errors_recovered": int(mine["recovered"].sum()),
                "false_successes": int(false.loc[false["config"] == config, "run_id"].nunique()),
            }
        return out

    @property
    def figures(self) -> pd.DataFrame:
        """What each batch this call ran took: ``config``, ``batch``, ``runs``, ``turns``,
        ``run_seconds``, ``write_seconds`` and the worker's ``pid`` (in the order they finished)."""
        import pandas as pd

        columns = ["config", "batch", "runs", "turns", "run_seconds", "write_seconds", "pid"]
        return pd.DataFrame(self._figures, columns=columns)

    def query(self, sql: str) -> pd.DataFrame:
        """``loopnb.query(sql, self.path)``: DuckDB SQL over this sweep's ``turns`` and ``events``."""
        from loopnb._sweep._query import query

        return query(sql, self.path)

    def __repr__(self) -> str:
        n = len(self.configs) * -(-len(self.seeds) // self.batch)
        return (
            f"Sweep({self.name!r}: {len(self.configs)} configs x {len(self.seeds)} seeds, "
            f"{n - len(self.missing())}/{n} batches written, at {str(self.path)!r})"
        )
