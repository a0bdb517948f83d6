"""Inspect AI logs read as loopnb turns: one run per sample (and per failed attempt it retried).

A turn is one ``ModelEvent`` of the sample's solvers (scorers' and tools' own model calls are not
the agent's turns) and the ``ToolEvent``s of its calls. What the model read of a failed call is
the ``ToolCallError``'s message; its ``type`` decides the producer:

=====================================  =====================  ==============================
Inspect                                 loopnb                 ``source_status``
=====================================  =====================  ==============================
``parsing``, tool not offered           soft not_advertised    ``inspect:parsing``
``parsing``, offered, "Tool x not       soft registry_miss     ``inspect:parsing``
found" at dispatch
``parsing`` of the arguments            soft invalid_arguments ``inspect:parsing``
``timeout``                             soft timeout           ``inspect:timeout``
``approval`` (an approver rejected)     soft hook_veto         ``inspect:approval``
any other type                          soft tool_error        ``inspect:<type>``
a tool that raised (``failed``, no      hard source_error      ``inspect:failed`` (crash)
``error``; the sample's error)
any other error that ended the sample   hard source_error      ``inspect:error``
``limit`` token / context / cost        hard context_exceeded  ``inspect:token_limit`` ...
``limit`` message / turn                hard loop_detected     (loopnb's ``max_turns``)
``limit`` time / working / operator     hard cancelled
``limit`` custom                        hard source_error
=====================================  =====================  ==============================

A call whose result the log kept nowhere (no event, no tool message) is ``inspect:missing``.

A value the reader cannot use (of another type, a token count that is not a whole number from 0
to 2**63 - 1, nested past Python's recursion limit) goes to ``Unread.skip`` naming the file, the
sample and where in it, and what was expected: an event that cannot be read is skipped and its
sample keeps the rest; a sample whose own fields cannot be read (or an ``.eval`` member that does
not unpack) is skipped whole. ``errors="raise"`` makes each a ``RecordingError``.
"""

from __future__ import annotations

import reprlib
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine._events import Event
from loopnb.foreign import _sniff
from loopnb.foreign._formats import Errors, ForeignFormat, Unread
from loopnb.foreign._inspect_sample import LIMITS, NAME, Bad, SampleReader, expect
from loopnb.foreign._transcript import too_deep
from loopnb.record import RecordingError, RecordingWarning
from loopnb.record._disagree import Mark

if TYPE_CHECKING:
    from loopnb.record import Recording

_TOOL_ERRORS = (
    *("parsing", "timeout", "unicode_decode", "permission", "file_not_found", "is_a_directory"),
    *("limit", "approval", "cancelled", "sandbox_unavailable", "unknown", "output_limit"),
)
"""``ToolCallError.type``'s values (``inspect_ai/tool/_tool_call.py``): each one given back to
the model as a tool result."""

MARKS: dict[str, Mark] = {
    "ok": "ok",
    **dict.fromkeys(_TOOL_ERRORS, "retry"),
    "missing": "missing",
    "failed": "crash",
    "error": "ended",
    **{f"{kind}_limit": "ended" for kind in LIMITS},
}
"""Every ``source_status`` this reader writes (after ``inspect:``) and what it means: Inspect
keeps a tool error the model read (a ``ToolCallError``) apart from one that ended the sample."""


def _field(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...``, or ``None`` where a level is missing or not an object."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _order(log: dict[str, Any], wheres: list[str], unread: Unread) -> list[tuple[dict[str, Any], str]]:
    """The samples in dataset order, epoch by epoch (an .eval zip holds them as they finished)."""
    samples = log.get("samples")
    if not isinstance(samples, list):
        raise RecordingError(f"samples: expected a list, found {type(samples).__name__}", path=unread.path)
    pairs = list(zip(samples, wheres or [f"samples[{i}]" for i in range(len(samples))], strict=True))
    for sample, where in pairs:
        if not isinstance(sample, dict):
            unread.skip(where, f"expected a sample object, found {type(sample).__name__}")
    ids = _field(log, "eval", "dataset", "sample_ids")
    rank = {str(s): i for i, s in enumerate(ids if isinstance(ids, list) else [])}

    def key(pair: tuple[dict[str, Any], str]) -> tuple[int, int]:
        epoch = pair[0].get("epoch")
        return (epoch if isinstance(epoch, int) else 0, rank.get(str(pair[0].get("id")), len(rank)))

    return sorted(((s, w) for s, w in pairs if isinstance(s, dict)), key=key)


def _log_events(
    log: dict[str, Any], wheres: list[str], unread: Unread, seen: set[str], twice: list[str]
) -> list[Event]:
    spec = log.get("eval")
    if not isinstance(spec, dict):
        raise RecordingError("no 'eval' object: expected an Inspect AI log (EvalLog)", path=unread.path)
    events: list[Event] = []
    for sample, where in _order(log, wheres, unread):
        sid, epoch = (reprlib.repr(sample.get(key)) for key in ("id", "epoch"))  # either may be hostile
        label = f"{where} (sample {sid}, epoch {epoch})"
        try:
            events += _sample_events(sample, spec, seen, twice, label, unread)
        except (Bad, RecursionError) as exc:
            why = too_deep("a value") if isinstance(exc, RecursionError) else str(exc)
            unread.skip(label, why, error=RecordingError(f"{label}, {why}", path=unread.path))
    return events


def _sample_events(
    sample: dict[str, Any], spec: dict[str, Any], seen: set[str], twice: list[str], label: str, unread: Unread
) -> list[Event]:
    """The events of one sample: its run, and a run per failed attempt the eval retried."""
    sid, epoch = sample.get("id"), sample.get("epoch")
    run_id = str(sample.get("uuid") or f"{sid}/epoch{epoch}")
    if run_id in seen:
        twice.append(f"sample {sid!r} epoch {epoch} (run {run_id})")
        return []
    seen.add(run_id)
    settings = {"task": spec.get("task"), "sample_id": sid, "epoch": epoch, "eval_id": spec.get("eval_id")}
    events: list[Event] = []
    reader = SampleReader(sample, spec, run_id, settings, label, unread)
    for i, retry in enumerate(expect(sample.get("error_retries") or [], list, "error_retries")):
        if isinstance(retry, dict) and retry.get("events"):
            again = {**settings, "attempt": i + 1}
            attempt = SampleReader(sample, spec, f"{run_id}/attempt{i + 1}", again, label, unread)
            at = f"error_retries[{i}].events"
            events += attempt.events(expect(retry["events"], list, at), error=retry, limit=None)
    evs = expect(sample.get("events") or [], list, "events")
    return events + reader.events(evs, error=sample.get("error"), limit=sample.get("limit"))


def _recording(logs: Iterable[tuple[dict[str, Any], list[str]]], unread: Unread) -> Recording:
    try:
        return _read_logs(logs, unread)
    except RecursionError as exc:  # a sample's own is caught where it can be named
        raise RecordingError(
            f"{too_deep('a value of the log')}; expected an Inspect AI log", path=unread.path
        ) from exc


def _read_logs(logs: Iterable[tuple[dict[str, Any], list[str]]], unread: Unread) -> Recording:
    from loopnb.record import Recording

    path = unread.path
    events: list[Event] = []
    first: dict[str, Any] | None = None
    seen: set[str] = set()  # the runs read: a sample given twice is read once
    twice: list[str] = []
    for log, wheres in logs:
        if not log.get("samples"):
            if unread.items:
                raise unread.nothing_read("samples")
            why = f"status {log.get('status')!r}" + (
                ", written without samples" if log.get("status") == "success" else ""
            )
            raise RecordingError(f"the Inspect AI log holds no samples ({why})", path=path)
        first = first or log
        events += _log_events(log, wheres, unread, seen, twice)
    if not events and unread.items:
        raise unread.nothing_read("samples")
    if twice:
        shown = ", ".join(twice[:3]) + (f" and {len(twice) - 3} more" if len(twice) > 3 else "")
        where = path or "from_inspect"
        warnings.warn(f"{where}: {shown} given twice, read once", RecordingWarning, stacklevel=4)
    version = _field(first, "eval", "packages", "inspect_ai")
    meta = {
        "source": {"format": NAME, "version": None if version is None else str(version)},
        "unread": unread.meta(),
        "inspect": {
            "log_version": _field(first, "version"),
            "status": _field(first, "status"),
            **{key: _field(first, "eval", key) for key in ("task", "eval_id", "model")},
        },
    }
    return Recording.from_events(events, meta=meta, path=path)


def _file_log(path: Path, unread: Unread) -> tuple[dict[str, Any], list[str]]:
    from loopnb.foreign._inspect_files import read_eval_log, read_json_log

    with path.open("rb") as f:
        zipped = f.read(4) == b"PK\x03\x04"
    return read_eval_log(path, unread) if zipped else read_json_log(path)


def read(path: Path, unread: Unread | None = None) -> Recording:
    """The runs of an Inspect AI log file (``.eval`` or ``.json``), one per sample. An
    item that cannot be read goes to ``unread`` (by default, skipped with a warning)."""
    unread = unread or Unread("warn", path)
    return _recording([_file_log(path, unread)], unread)


def from_inspect(log: Any, *, errors: Errors = "warn") -> Recording:
    """The runs of an Inspect AI ``EvalLog`` in memory (or its ``model_dump()``, or a list of
    either), one per sample; a log returned without its samples is read from its file.
    ``errors="warn"`` skips a sample or event that cannot be read with a ``RecordingWarning``
    (``meta["unread"]`` lists it); ``"raise"`` raises ``RecordingError``."""
    unread = Unread(errors)
    logs = list(log) if isinstance(log, list | tuple) else [log]
    dumped: list[tuple[dict[str, Any], list[str]]] = []
    for one in logs:
        if isinstance(one, dict):
            dumped.append((one, []))
        elif not hasattr(one, "model_dump"):
            raise TypeError(
                "from_inspect: expected an EvalLog, its model_dump() dict or a list of them, "
                f"got {type(one).__name__}"
            )
        elif getattr(one, "samples", None) is None and getattr(one, "location", None):
            dumped.append(_file_log(Path(one.location), unread))
        else:
            dumped.append((one.model_dump(mode="json"), []))
    return _recording(dumped, unread)


FORMAT = ForeignFormat(
    NAME,
    "an Inspect AI log (.eval or .json)",
    (".eval", ".json"),
    sniff=_sniff.inspect,
    reader=read,
    in_memory=from_inspect,
    marks=MARKS,
)
"""The format this module reads: ``loopnb.formats()`` finds it here."""
