"""The recorder's memory: every event it observed, as its fields' values in one flat list.

Holding the events themselves kept about ten objects a turn in front of CPython's cyclic garbage
collector, which walks every one of them again at each full collection: at 100,000 turns that was
most of the recorder's cost. The store keeps instead, per event, its class and then the values of
its fields, in the class's order (``[TurnStarted, 7, "run-1", 1.5, 2, ModelReplied, 8, ...]``):
strings, numbers, ``None``, tuples of strings and dicts of them, which the collector does not
track, and the two objects an event shares with the run (a ``ModelReplied``'s reply and a
``ToolDispatched``'s result, which the run's own ``RunResult.messages`` hold too), never copied.
Adding an event is one C-level read of its fields and one ``extend``; an event of a class without a
layout here (a subclass) is kept as itself.

A streaming recorder's events are in its file, so for the ones written it keeps only what the
frames read: in place of the reply, ``(text, model, input_tokens, output_tokens, tool names)``, and
in place of the result, its fields (``digest``). Every value is kept as observed, so the events put
back together (``Layout.build``) equal the ones observed, and the frames read what the model read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from loopnb.engine._events import EVENT_TYPES, Event, ModelReplied, ToolDispatched
from loopnb.engine._messages import ModelReply, ToolCall, ToolResult, Usage

COMMON = ("seq", "run_id", "at")
"""The fields every event class begins with, in this order (checked below)."""


@dataclass(frozen=True, slots=True, eq=False)
class Layout:
    """How one event class is kept: its fields but ``kind`` (a constant of the class), in order."""

    cls: type
    names: tuple[str, ...]
    read: Callable[[Any], tuple[Any, ...]]
    """An event's class and then its fields' values, read in C (``attrgetter``)."""
    width: int
    """How many places of the store one event takes: its class, then its values."""

    def at(self, name: str) -> int:
        """Where field ``name`` is, counted from the event's first place (its class)."""
        return 1 + self.names.index(name)

    def build(self, values: Sequence[Any]) -> Event:
        """The event of these values (in the order of ``names``)."""
        event: Event = self.cls(**dict(zip(self.names, values, strict=True)))
        return event


def _layout(cls: type) -> Layout:
    names = tuple(f.name for f in fields(cls) if f.name != "kind")
    if names[: len(COMMON)] != COMMON:
        raise TypeError(f"{cls.__name__} must begin with the fields {', '.join(COMMON)}")
    return Layout(cls, names, attrgetter("__class__", *names), 1 + len(names))


LAYOUTS: dict[type, Layout] = {cls: _layout(cls) for cls in EVENT_TYPES}
PACK: dict[type, Callable[[Any], tuple[Any, ...]]] = {cls: layout.read for cls, layout in LAYOUTS.items()}
"""The hot path: ``store.extend(PACK[type(event)](event))``; a ``KeyError`` means ``keep(event)``."""
KEPT = None
"""The class place of an event kept as itself: ``KEPT, seq, run_id, at, event``."""
_kept_common = attrgetter(*COMMON)
WIDTH: dict[type | None, int] = {cls: layout.width for cls, layout in LAYOUTS.items()}
WIDTH[KEPT] = 2 + len(COMMON)
BY_KIND: dict[str, type] = {str(cls.__dataclass_fields__["kind"].default): cls for cls in EVENT_TYPES}

_REPLY = LAYOUTS[ModelReplied].at("reply")
_RESULT = LAYOUTS[ToolDispatched].at("result")
RESULT_FIELDS = ("content", "is_error", "name", "call_id", "producer", "note", "attempts")
"""What a digest keeps of a ``ToolResult``: every field but ``role`` (a constant)."""
_result_digest = attrgetter(*RESULT_FIELDS)
REPLY_FIELDS = ("text", "model", "input_tokens", "output_tokens", "tool_names")
"""What a digest keeps of a ``ModelReply``: what the frames read of it."""


def keep(store: list[Any], event: Event) -> None:
    """Keep an event of a class the store has no layout for (a subclass) as itself."""
    store.extend((KEPT, *_kept_common(event), event))


def add(store: list[Any], event: Event) -> None:
    """Add one event (what the recorder's hot path does in line)."""
    try:
        store.extend(PACK[type(event)](event))
    except KeyError:
        keep(store, event)


def streamed(store: list[Any], begin: int, count: int) -> int:
    """Keep of the ``count`` events from place ``begin`` only what the frames read: each reply and
    result replaced by its digest (the events, whole, are in the recorder's file). Returns the
    place after them."""
    i = begin
    for _ in range(count):
        cls = store[i]
        if cls is ModelReplied and type(store[i + _REPLY]) is ModelReply:
            store[i + _REPLY] = reply_digest(store[i + _REPLY])
        elif cls is ToolDispatched and type(store[i + _RESULT]) is ToolResult:
            store[i + _RESULT] = _result_digest(store[i + _RESULT])
        i += WIDTH[cls]
    return i


def reply_digest(reply: Any) -> tuple[Any, ...]:
    """What the frames read of a reply (``REPLY_FIELDS``), whatever the object holds."""
    usage = reply.usage
    calls = reply.tool_calls
    names = tuple([c.name for c in calls]) if calls else ()
    if usage is None:
        return (reply.text, reply.model, None, None, names)
    return (reply.text, reply.model, usage.input_tokens, usage.output_tokens, names)


def is_digest(value: Any) -> bool:
    """Whether a reply or result place holds a digest rather than the object."""
    return type(value) is tuple


def event_at(store: list[Any], i: int) -> Event:
    """The event whose first place is ``i``, equal to the one observed (a digest is put back as
    an object holding what it kept: for the frames' readers only)."""
    cls = store[i]
    if cls is KEPT:
        kept: Event = store[i + 1 + len(COMMON)]
        return kept
    layout = LAYOUTS[cls]
    values = store[i + 1 : i + layout.width]
    if cls is ModelReplied and is_digest(values[_REPLY - 1]):
        values[_REPLY - 1] = _reply_of(values[_REPLY - 1])
    elif cls is ToolDispatched and is_digest(values[_RESULT - 1]):
        values[_RESULT - 1] = _result_of(values[_RESULT - 1])
    return layout.build(values)


def events_at(store: list[Any], starts: Sequence[int]) -> list[Event]:
    """The events beginning at ``starts`` (``event_at`` of each, in one loop)."""
    out: list[Event] = []
    add_event, layouts = out.append, LAYOUTS
    for i in starts:
        cls = store[i]
        if cls is ModelReplied or cls is ToolDispatched or cls is KEPT:  # maybe a digest, or kept
            add_event(event_at(store, i))
        else:
            layout = layouts[cls]
            add_event(cls(**dict(zip(layout.names, store[i + 1 : i + layout.width], strict=True))))
    return out


def _reply_of(digest: tuple[Any, ...]) -> ModelReply:
    """A reply holding what a digest kept: the text, model, usage and each call's name (the
    frames read nothing else of a reply; the written event, whole, is in the file)."""
    text, model, input_tokens, output_tokens, names = digest
    usage = None if input_tokens is None and output_tokens is None else Usage(input_tokens, output_tokens)
    return ModelReply(text=text, model=model, usage=usage, tool_calls=tuple(ToolCall(n) for n in names))


def _result_of(digest: tuple[Any, ...]) -> ToolResult:
    content, *rest = digest
    return ToolResult(content, **dict(zip(RESULT_FIELDS[1:], rest, strict=True)))


def reply_values(replies: Sequence[Any], name: str) -> list[Any]:
    """Field ``name`` (one of ``REPLY_FIELDS``) of each reply or digest."""
    index = REPLY_FIELDS.index(name)
    if tuple not in set(map(type, replies)):
        if name in ("text", "model"):
            return list(map(attrgetter(name), replies))
        replies = list(map(reply_digest, replies))
    return [r[index] if is_digest(r) else reply_digest(r)[index] for r in replies]


def result_values(results: Sequence[Any], name: str) -> list[Any]:
    """Field ``name`` (one of ``RESULT_FIELDS``) of each result or digest."""
    index = RESULT_FIELDS.index(name)
    if tuple not in set(map(type, results)):
        return list(map(attrgetter(name), results))
    return [r[index] if is_digest(r) else getattr(r, name) for r in results]


def nested(value_path: str) -> tuple[str, str] | None:
    """``("reply", "model")`` for ``"reply.model"``: a path into a shared object the store may
    keep as a digest; ``None`` for any other path."""
    head, _, rest = value_path.partition(".")
    if head in ("reply", "result") and rest and "." not in rest:
        return head, rest
    return None


NESTED_VALUES: dict[str, Callable[[Sequence[Any], str], list[Any]]] = {
    "reply": reply_values,
    "result": result_values,
}
