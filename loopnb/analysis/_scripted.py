"""``scripted_from(recording)``: a recorded run's model replies as a ``ScriptedModel``.

A recording becomes a regression test: the replies come back in order, each exactly as recorded
(text, tool calls with their ids and arguments, model name, usage), and each model failure the
engine recorded (``ModelFailed``) comes back as the ``ModelUnavailable`` it was, with its text and
status. ``run_events`` picks one run's events out of whatever a caller was given; ``what_if``
shares it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loopnb.engine import LoopnbWarning, ModelReply, ModelUnavailable, ToolCall, Usage
from loopnb.engine._events import EVENT_TYPES, Event, ModelFailed, ModelReplied, RunStarted
from loopnb.engine.models._scripted import ScriptedModel, Step

if TYPE_CHECKING:
    import pandas as pd

EXHAUSTED = re.compile(r"script exhausted after (\d+) steps")
"""What a ``ScriptedModel`` raises past its last step (asking again can never help)."""

Played = ModelReply | ModelUnavailable
"""One recorded step of a model: a reply, or the failure it raised."""

ACCEPTS = "a Recording, a Recorder, a turns DataFrame of one run, or a run's events"


def scripted_from(data: Any, *, run: str | None = None, model: str | None = None) -> ScriptedModel:
    """The recorded run's model replies, in order, as a ``ScriptedModel``.

    Each reply is the recorded ``ModelReply`` (same call ids, arguments, texts, model names and
    usage); each model failure is the ``ModelUnavailable`` the engine recorded (its text and
    status; a spent script's own "script exhausted" is left for the new script to raise). Run
    through an ``Engine`` with the real tools, the replies replay the run: a regression test.

    Args:
        data: a ``Recording``, a ``Recorder``, a run's events (a scenario's ``outcome.events``) or
            a turns frame of one run. A turns frame holds each reply's text, its tools' names, the
            model and usage, but not the calls' arguments or ids nor the model failures: the
            calls come back with no arguments, and a ``LoopnbWarning`` says so.
        run: the run to take when ``data`` holds several (the error lists them).
        model: only this model's replies and failures (a run on a ``FallbackChain``: one script
            per model, ``FallbackChain([scripted_from(rec, model=m) for m in models])``).

    Returns:
        A ``ScriptedModel`` named after the run's model (``model`` when given; ``"scripted"`` when
        the run used several models or named none).

    Raises:
        TypeError: ``data`` is none of those.
        ValueError: ``data`` holds several runs and ``run`` names none of them, or ``model`` is
            not one the run used.
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return _from_turns(data, run, model)
    events = run_events(data, run, "scripted_from()")
    steps = model_steps(events, model)
    return ScriptedModel([step for _, _, step in steps], name=model or _model_name(events))


def run_events(data: Any, run: str | None, caller: str) -> list[Event]:
    """The events of one run of ``data`` (a ``Recording``, a ``Recorder`` or events), in order."""
    events = _events_of(data, caller)
    ids = list(dict.fromkeys(e.run_id for e in events))
    if not ids:
        raise ValueError(f"{caller}: the recording holds no run (no event)")
    if run is None:
        if len(ids) > 1:
            raise ValueError(
                f"{caller}: the recording holds {len(ids)} runs ({_listed(ids)}); pick one with run=..."
            )
        run = ids[0]
    elif run not in ids:
        raise ValueError(f"{caller}: the recording has no run {run!r}; its runs are {_listed(ids)}")
    mine = [e for e in events if e.run_id == run]
    if not isinstance(mine[0], RunStarted):
        raise ValueError(
            f"{caller}: run {run!r} has no run_started event first; the recording lacks its start"
        )
    return mine


def _events_of(data: Any, caller: str) -> list[Event]:
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        items = list(data)
        if all(isinstance(e, EVENT_TYPES) for e in items):
            return items
        raise TypeError(f"{caller} takes {ACCEPTS}; got a sequence holding something that is not an event")
    objects = getattr(data, "event_objects", None)
    if isinstance(objects, list):
        return objects
    raise TypeError(f"{caller} takes {ACCEPTS}; got {type(data).__name__}")


def _listed(ids: list[str]) -> str:
    return ", ".join(map(repr, ids[:12])) + (", ..." if len(ids) > 12 else "")


def model_steps(events: list[Event], model: str | None = None) -> list[tuple[int, float, Played]]:
    """``(turn, at, step)`` for each reply and model failure of the run (of ``model`` only, when
    given), in order: what a ``ScriptedModel`` needs, with when and in which turn it came."""
    used = _models(events)
    if model is not None and model not in used:
        raise ValueError(
            f"scripted_from(): the run used no model {model!r}; it used {', '.join(used) or '(none)'}"
        )
    steps: list[tuple[int, float, Played]] = []
    for event in events:
        if isinstance(event, ModelReplied) and (model is None or event.reply.model == model):
            steps.append((event.turn, event.at, event.reply))
        elif isinstance(event, ModelFailed) and (model is None or event.model == model):
            steps.append((event.turn, event.at, failure(event)))
    last = steps[-1][2] if steps else None
    if isinstance(last, ModelUnavailable):  # a spent script: the new one, as long, says so itself
        spent = EXHAUSTED.fullmatch(last.message)
        if spent is not None and int(spent.group(1)) == len(steps) - 1:
            steps.pop()
    return steps


def failure(event: ModelFailed) -> ModelUnavailable:
    """The failure a ``ModelFailed`` records, as the exception a model raises: its text and status
    (``retry_after`` infinite for a spent script, which no retry can fix)."""
    spent = EXHAUSTED.fullmatch(event.error) is not None
    return ModelUnavailable(event.error, status=event.status, retry_after=math.inf if spent else None)


def _models(events: list[Event]) -> list[str]:
    names: dict[str, None] = {}
    started = events[0]
    if isinstance(started, RunStarted):
        names.update(dict.fromkeys(started.models))
    for event in events:
        if isinstance(event, ModelReplied) and event.reply.model:
            names[event.reply.model] = None
        elif isinstance(event, ModelFailed):
            names[event.model] = None
    return list(names)


def _model_name(events: list[Event]) -> str:
    used = [
        name
        for name in dict.fromkeys(
            e.reply.model if isinstance(e, ModelReplied) else e.model
            for e in events
            if isinstance(e, ModelReplied | ModelFailed)
        )
        if name
    ]
    if len(used) == 1:
        return used[0]
    started = events[0]
    if not used and isinstance(started, RunStarted) and len(started.models) == 1:
        return started.models[0]
    return "scripted"


def _from_turns(turns: pd.DataFrame, run: str | None, model: str | None) -> ScriptedModel:
    """Replies rebuilt from a turns frame: text, tool names, model and usage; no arguments."""
    missing = [c for c in _COLUMNS if c not in turns.columns]
    if missing:
        raise ValueError(
            f"scripted_from(): the turns frame is missing columns {', '.join(missing)}; expected a turns "
            "frame (Recorder.turns, load(path).turns)"
        )
    frame = turns
    ids = list(dict.fromkeys(frame["run_id"].dropna().astype(str).tolist()))
    if run is None and len(ids) > 1:
        raise ValueError(
            f"scripted_from(): the turns frame holds {len(ids)} runs ({_listed(ids)}); pick one with run=..."
        )
    if run is not None:
        if run not in ids:
            raise ValueError(
                f"scripted_from(): the turns frame has no run {run!r}; its runs are {_listed(ids)}"
            )
        frame = frame[frame["run_id"].astype(str) == run]
    frame = frame.sort_values("turn", kind="stable")
    steps: list[Step] = []
    names: dict[str, None] = {}
    lost = 0
    for row in frame.to_dict("records"):
        replied = _text(row.get("model"))
        if model is not None and replied != model:
            continue
        tools = _text(row.get("tools"))
        text = _text(row.get("reply_text"))
        if tools is None and text is None and row.get("channel") == "hard":
            continue  # the run ended before the model answered this turn
        calls = tuple(ToolCall(name, {}) for name in tools.split(", ")) if tools else ()
        lost += len(calls)
        steps.append(ModelReply(text=text, tool_calls=calls, model=replied, usage=_usage(row)))
        if replied:
            names[replied] = None
    if lost:
        warnings.warn(
            f"scripted_from(): a turns frame holds the tools' names but not the calls' arguments or ids, "
            f"nor the model failures: {lost} call(s) are rebuilt with no arguments; pass the Recording "
            "(its events hold them) to replay the calls as they were made",
            LoopnbWarning,
            stacklevel=3,
        )
    name = model or (next(iter(names)) if len(names) == 1 else "scripted")
    return ScriptedModel(steps, name=name)


_COLUMNS = ("run_id", "turn", "channel", "tools", "reply_text", "model")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _usage(row: dict[Any, Any]) -> Usage | None:
    counts = [row.get("input_tokens"), row.get("output_tokens")]
    if all(not isinstance(c, int) for c in counts):
        return None
    given = [c if isinstance(c, int) else 0 for c in counts]
    return Usage(input_tokens=given[0], output_tokens=given[1])
