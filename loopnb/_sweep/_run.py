"""``loopnb.sweep``: every config over every seed, on Dask distributed, into a Parquet dataset.

The client plans the batches (``_plan``), skips those already written when resuming, and submits
the rest; workers run them and write one file each (``_batch``); a finished sweep of many files
is compacted into a few (``_compact``). ``cluster=None`` starts a
``LocalCluster`` of processes (one thread each) on this machine and closes it afterwards; an
address or a ``distributed.Client`` uses that cluster as it is (its workers must see ``out``: a
shared file system). Ctrl-C (a kernel interrupt) cancels what is still queued, closes a cluster
the sweep started and leaves every batch written so far in place, for ``resume=True``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from loopnb._sweep._batch import Batch, batch_files, partition, run_batch, written
from loopnb._sweep._compact import COMPACT_AFTER, compact, remove_merged
from loopnb._sweep._lock import holding
from loopnb._sweep._plan import PLAN_FILE, Configs, Plan, Seeds, check_resumable, choose_batch, plan
from loopnb._sweep._results import Sweep
from loopnb.engine import LoopnbWarning

Progress = bool | Callable[[int, int, dict[str, Any]], object] | None
"""``None``/``True``: a bar (``tqdm.auto``: a widget in a notebook); ``False``: nothing; a callable:
``progress(done, total, figures)`` after each batch (``figures``: the batch's runs, turns, seconds)."""


def sweep(
    task_or_scenarios: str | Iterable[str] | None = None,
    *,
    seeds: Seeds = 1,
    configs: Configs | None = None,
    cluster: Any = None,
    out: str | Path | None = None,
    resume: bool = False,
    batch: int | None = None,
    progress: Progress = None,
    workers: int | None = None,
) -> Sweep:
    """Run every config over every seed on Dask distributed; the results are a Parquet dataset.

    Args:
        task_or_scenarios: built-in scenario names (``["mistyped_path", "stubborn_loop"]``, or one
            name), or a task for configs that give a model and tools; ``None`` when every config
            names its scenario.
        seeds: a count (``200`` is seeds 0..199) or the seeds themselves.
        configs: ``SweepConfig`` objects (or ``{name: {field: value}}``); with several scenarios each
            config runs on each, named ``SCENARIO.CONFIG``. ``None``: each scenario as it is.
        cluster: ``None`` starts a ``LocalCluster`` of ``workers`` processes (default: one per core);
            ``"tcp://host:8786"`` or a ``distributed.Client`` uses an existing cluster.
        out: the results' folder (default ``sweeps/NAME``): ``config=NAME/part-*.parquet`` and the plan.
            A finished sweep of more than 64 batch files is compacted into a few (``Sweep.compact``).
        resume: finish a sweep begun in ``out``, skipping the batches already written.
        batch: runs per batch (per Dask task); ``None`` chooses for the cluster's size (written in
            the plan, kept on resume).
        progress: see ``Progress``.
        workers: how many worker processes a ``LocalCluster`` started here has.

    Returns:
        A ``Sweep`` over ``out``: ``.turns`` (with ``config`` and ``seed`` columns), ``.audit()``.

    Raises:
        ValueError: an unknown scenario, a config that cannot build its engine, an ``out`` that
            holds another sweep (or this one, without ``resume=True``), an ``out`` another sweep
            is writing to now (one sweep at a time in a folder: ``OUT/_sweep.lock``).
        RecordingError: the disk of ``out`` is full (the error names the folder).
        Exception: whatever a config's own code raised in a worker (an engine that cannot be
            built for one seed, a scenario's builder), with a note naming the config and the seed.
        ImportError: dask or distributed is missing (``pip install 'loopnb[sweep]'``).

    A sweep that stops on an error keeps every batch written before it; once the cause is fixed
    (space freed, the config mended), the same call with ``resume=True`` finishes it.
    """
    distributed = _distributed()
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"sweep: workers must be an int >= 1 or None, got {workers!r}")
    if workers is not None and cluster is not None:
        raise ValueError("sweep: workers= sizes a LocalCluster started here; with cluster= it has no effect")
    n_workers = workers or os.cpu_count() or 1
    draft = plan(task_or_scenarios, seeds=seeds, configs=configs, batch=batch)
    root = Path(out if out is not None else Path("sweeps") / draft.name).absolute()
    figures: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(holding(root))  # one sweep at a time in a folder, taken before it is checked
        chosen = check_resumable(root, draft, resume=resume, batch_given=batch is not None)
        client = None
        if chosen.batch is None:  # chosen for the cluster's size: connect first
            client = stack.enter_context(_client(distributed, cluster, n_workers))
            chosen = choose_batch(chosen, _size(client))
        _write_plan(root, chosen)
        batches = chosen.batches(str(root))
        done = written(root, [c.name for c in chosen.configs])
        todo = [b for b in batches if (b.config.name, b.index) not in done]
        if todo:
            if client is None:
                client = stack.enter_context(_client(distributed, cluster, n_workers))
            _run(client, distributed, todo, len(batches), progress, figures)
        names = [c.name for c in chosen.configs]
        for name in names:
            remove_merged(partition(root, name))  # what a compaction stopped before removing
        if sum(len(batch_files(partition(root, c))) for c in names) > COMPACT_AFTER:
            compact(root, names)  # finished: its many small files become a few large ones
    return Sweep(root, figures=figures)


def _size(client: Any) -> int:
    """How many workers the cluster has now (at least 1)."""
    try:
        return max(1, len(client.scheduler_info()["workers"]))
    except (KeyError, TypeError, OSError):
        return 1


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("sweeps run on Dask distributed: pip install 'loopnb[sweep]'") from exc
    return distributed


def _write_plan(root: Path, chosen: Plan) -> None:
    from loopnb.record._files import replacing

    with replacing(root / PLAN_FILE) as tmp:
        tmp.write_text(json.dumps(chosen.to_json(), indent=1) + "\n", encoding="utf-8")


@contextlib.contextmanager
def _client(distributed: Any, cluster: Any, workers: int) -> Iterator[Any]:
    """A client of the cluster asked for; what was started here is closed here."""
    if isinstance(cluster, distributed.Client):
        yield cluster
        return
    started = None
    if cluster is None:
        started = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # its HTTP server: any free local port
            silence_logs=logging.ERROR,
        )
        target: Any = started
    elif isinstance(cluster, str) or hasattr(cluster, "scheduler_address"):
        target = cluster
    else:
        raise TypeError(
            "sweep: cluster must be None (a LocalCluster here), a scheduler address such as "
            f"'tcp://host:8786', a distributed.Client or a cluster object; got {cluster!r:.60}"
        )
    try:
        client = distributed.Client(target, set_as_default=False)
    except BaseException:
        if started is not None:
            started.close()
        raise
    try:
        yield client
    finally:
        client.close()
        if started is not None:
            started.close()


def _run(
    client: Any,
    distributed: Any,
    todo: list[Batch],
    total: int,
    progress: Progress,
    figures: list[dict[str, Any]],
) -> None:
    """Submit ``todo`` and wait for every batch, showing progress; a failure or an interrupt
    cancels the batches still queued (those written stay written)."""
    token = secrets.token_hex(4)
    futures = [client.submit(run_batch, b, key=f"{b.key}-{token}", pure=False) for b in todo]
    of = {f.key: b for f, b in zip(futures, todo, strict=True)}
    done = total - len(todo)
    bar = _bar(progress, total, done)
    report = progress if callable(progress) else None
    try:
        for future in distributed.as_completed(futures, loop=client.loop):
            try:
                result = future.result()
            except Exception as exc:
                b = of[future.key]
                exc.add_note(f"in sweep batch {b.index} of config {b.config.name} (seeds {_span(b.seeds)})")
                raise
            figures.append(result)
            done += 1
            if bar is not None:
                bar.update(1)
            if report is not None:
                report = _reported(report, done, total, result)
    except BaseException:
        client.cancel(futures, force=True)
        raise
    finally:
        if bar is not None:
            bar.close()


def _span(seeds: tuple[int, ...]) -> str:
    return f"{seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])


def _bar(progress: Progress, total: int, initial: int) -> Any:
    if progress is False or callable(progress):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with the extra
        return None
    return tqdm(total=total, initial=initial, unit="batch", desc="sweep")


def _reported(
    report: Callable[[int, int, dict[str, Any]], object], done: int, total: int, result: dict[str, Any]
) -> Callable[[int, int, dict[str, Any]], object] | None:
    """Call the progress callable; one that raises is dropped with a warning (the sweep goes on),
    except for an interrupt, which ends the sweep as Ctrl-C does."""
    try:
        report(done, total, dict(result))
    except Exception as exc:
        warnings.warn(
            f"sweep: progress callable {report!r} raised {type(exc).__name__}: {exc}; it was detached",
            LoopnbWarning,
            stacklevel=4,
        )
        return None
    return report
