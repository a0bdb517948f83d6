"""The events frame reads each column by its name: a class's layout pairs a column with its reader."""

from __future__ import annotations

import pytest

from loopnb import ModelReply, ToolResult
from loopnb.engine._events import EVENT_TYPES, ModelReplied, RunFinished, ToolDispatched, TurnStarted
from loopnb.record._rows import EVENT_LAYOUTS, _fills, event_row
from loopnb.record._schema import EVENT_COLUMNS


def test_every_event_class_names_each_column_beside_its_reader():
    for cls in EVENT_TYPES:
        layout = EVENT_LAYOUTS[cls]
        names = [name for name, _ in layout]
        assert len(set(names)) == len(names), cls.__name__
        assert set(names) <= set(EVENT_COLUMNS), cls.__name__
        assert all(callable(read) for _, read in layout), cls.__name__


def test_a_column_is_read_by_its_name():
    reply = ModelReply(text="hello", model="m1")
    event = ModelReplied(seq=3, run_id="r", at=1.0, turn=2, reply=reply, latency_ms=1.5)
    readers = dict(EVENT_LAYOUTS[ModelReplied])
    assert (readers["model"](event), readers["text"](event), readers["latency_ms"](event)) == (
        "m1",
        "hello",
        1.5,
    )
    row = event_row(event)
    assert (row["model"], row["text"], row["turn"], row["latency_ms"]) == ("m1", "hello", 2, 1.5)


def test_what_an_event_holds_in_another_form_is_read_by_a_function():
    result = ToolResult("ok", name="add", call_id="")
    row = event_row(ToolDispatched(seq=1, run_id="r", at=0.0, turn=1, result=result))
    assert (row["tool"], row["call_id"], row["text"], row["is_error"]) == ("add", None, "ok", False)
    ended = RunFinished(seq=9, run_id="r", at=0.0, outcome="ok", turns=2, output="done")
    assert (event_row(ended)["producer"], event_row(ended)["text"]) == (None, "done")


def test_a_column_read_from_a_field_the_event_lacks_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match=r"TurnStarted has no field to read turn='trun' from"):
        _fills(TurnStarted, turn="trun")
    with pytest.raises(ValueError, match=r"TurnStarted fills columns it may not: \['kind'\]"):
        _fills(TurnStarted, kind="kind")
    assert dict(EVENT_LAYOUTS[TurnStarted]).keys() == {"turn"}  # nothing was changed
