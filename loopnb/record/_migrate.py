"""Reading recordings of an earlier format version: each line brought to the current events.

Version 1 wrote some facts twice: every ``turn_finished`` line repeated the turn's reply, its
results and feedback, its model and start time, and every ``tool_dispatched`` line repeated its
call. Version 2 writes each fact once. A version-1 line becomes a version-2 event by leaving the
copies out; the one fact a copy held alone is kept: the reply with the ids the engine gave its
calls (version 1's ``model_replied`` has the model's own, possibly repeated, ids). A version-1
``run_finished`` names its error's class; version 2 also carries its producer. Version 2's
``run_started`` names every breaker, and a ``turn_finished`` lists only those not closed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopnb.engine import LoopError


def _v1_breakers(events: list[dict[str, Any]], run_id: object) -> list[str]:
    """The breakers of a version-1 run: named in every turn's end (all of them, closed or not)."""
    names: dict[str, None] = {}
    for e in events:
        if (
            e.get("kind") == "turn_finished"
            and e.get("run_id") == run_id
            and isinstance(e.get("breakers"), dict)
        ):
            names.update(dict.fromkeys(e["breakers"]))
    return list(names)


V1_COPIES: dict[str, tuple[str, ...]] = {
    "turn_finished": (
        "started_at",
        "model",
        "reply",
        "results",
        "feedback",
        "recovery_attempts",
        "error_text",
    ),
    "tool_dispatched": ("call",),
}
"""Per event kind, the fields version 1 wrote that repeat an earlier event."""

_PRODUCERS = {cls.__name__: cls.producer for cls in LoopError.__subclasses__()}


def _turn_key(e: dict[str, Any]) -> tuple[object, object] | None:
    """An event's ``(run_id, turn)``, or ``None`` when either is of a type no event has (a list, an
    object): such a line is left as it is, and validation then names it."""
    key = (e.get("run_id"), e.get("turn"))
    return key if all(v is None or isinstance(v, str | int) for v in key) else None


def from_v1(raw: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Version-1 events (parsed JSON objects) as version-2 ones, in order. A field of the wrong
    type is carried over untouched, for validation to report with its line."""
    events = list(raw)
    replies = {
        key: e["reply"]
        for e in events
        if e.get("kind") == "turn_finished"
        and isinstance(e.get("reply"), dict)
        and (key := _turn_key(e)) is not None
    }
    out = []
    for e in events:
        kind = e.get("kind")
        if not isinstance(kind, str):
            out.append(e)
            continue
        if kind in V1_COPIES:
            e = {k: v for k, v in e.items() if k not in V1_COPIES[kind]}
            if kind == "turn_finished" and isinstance(e.get("breakers"), dict):
                e["breakers"] = {k: v for k, v in e["breakers"].items() if v != "closed"}
        elif kind == "model_replied":
            key = _turn_key(e)
            reply = e.get("reply") if key is None else replies.get(key, e.get("reply"))
            if isinstance(reply, dict):
                reply = {**reply, "model": e.get("model", reply.get("model"))}
            e = {k: v for k, v in e.items() if k != "model"} | {"reply": reply}
        elif kind == "run_started" and "breakers" not in e:
            e = {**e, "breakers": _v1_breakers(events, e.get("run_id"))}
        elif kind == "run_finished" and "producer" not in e:
            error = e.get("error")
            e = {**e, "producer": _PRODUCERS.get(error) if isinstance(error, str) else None}
        out.append(e)
    return out
