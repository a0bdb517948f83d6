"""What ``LiveSpans`` does per span stays small and does not grow with the run (issue 30, item 6).

Each check here is a fact about the work, not a timing: an SDK span's attributes are copied in one
step (not a Python call a key), a span is read as it starts without what it has only at its end,
a request's history input is read from what it added with a bounded check and nothing of the
previous input kept, and a JSON attribute that is exactly one value is read by json's scanner
alone. The figures are ``benchmarks/bench_live_spans.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags

import loopnb
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign import _otlp_messages as m
from loopnb.foreign._otlp_spans import readable
from loopnb.otel import LiveSpans
from tests.otel.test_live import READER, agent, traced


class _CountingAttributes(Mapping[str, Any]):
    """A span's attributes that count how often a value is looked up one key at a time."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values
        self.lookups = 0

    def __getitem__(self, key: str) -> Any:
        self.lookups += 1
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def copy(self) -> dict[str, Any]:
        """As the SDK's ``BoundedAttributes.copy()``: the dict inside, copied at once."""
        return dict(self._values)


def _span(attributes: Mapping[str, Any], **kwargs: Any) -> ReadableSpan:
    context = SpanContext(0x1F, 0x2E, is_remote=False, trace_flags=TraceFlags(1))
    return ReadableSpan(
        "chat m", context=context, attributes=attributes, start_time=10**18, end_time=10**18 + 5, **kwargs
    )


def test_an_sdk_spans_attributes_are_copied_at_once_not_key_by_key():
    attributes = _CountingAttributes({f"key.{i}": i for i in range(20)} | {"gen_ai.operation.name": "chat"})
    read = readable(_span(attributes), "span 0")
    assert read.attributes == attributes._values and read.attributes is not attributes._values
    assert attributes.lookups == 0  # through the SDK's read-only proxy, its copy(): one step


def test_attributes_without_a_copy_of_their_own_are_still_read():
    class Plain(Mapping[str, Any]):  # an older SDK's BoundedAttributes had no copy()
        def __getitem__(self, key: str) -> Any:
            return {"a": 1}[key]

        def __iter__(self) -> Iterator[str]:
            return iter(["a"])

        def __len__(self) -> int:
            return 1

    assert readable(_span(Plain()), "span 0").attributes == {"a": 1}


class _Starting(ReadableSpan):
    """A span as it starts, whose end-only parts may not be read yet (they fail the test if read)."""

    @property
    def events(self) -> Any:
        raise AssertionError("a started span's events were read")

    @property
    def status(self) -> Any:
        raise AssertionError("a started span's status was read")


def test_a_span_is_read_as_it_starts_without_its_events_status_or_scope():
    context = SpanContext(0x1F, 0x2E, is_remote=False, trace_flags=TraceFlags(1))
    attributes = {"gen_ai.operation.name": "chat"}
    span = _Starting("chat m", context=context, attributes=attributes, start_time=10**18)
    read = readable(span, "span 0", started=True)
    ids = (f"{0x1F:032x}", f"{0x2E:016x}")
    assert (read.trace_id, read.span_id, read.name, read.start) == (*ids, "chat m", 1e9)
    assert (read.end, read.status, read.events, read.scope) == (None, "UNSET", [], None)
    live = LiveSpans()
    live.on_start(span)  # what LiveSpans does as the SDK starts a span
    assert live.errors == []


def _message(role: str, kind: str, **part: Any) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": kind, **part}]}


def _history(n: int) -> list[dict[str, Any]]:
    out = [_message("user", "text", content="go")]
    for i in range(n):
        out.append(_message("assistant", "tool_call", id=f"c{i}", name="add", arguments={"a": i}))
        out.append(_message("user", "tool_call_response", id=f"c{i}", result=i))
    return out


def test_a_history_input_is_read_from_what_it_added():
    history = m.History()
    first = history.read(json.dumps(_history(1)))
    assert len(first) == 3  # the first request: all of it
    added = history.read(json.dumps(_history(2)))
    assert [(p.kind, p.id) for msg in added for p in msg.parts] == [
        ("tool_call", "c1"),
        ("tool_call_response", "c1"),
    ]
    rewritten = _history(3)
    rewritten[0] = _message("user", "text", content="GO")  # a history rewritten: read whole again
    assert len(history.read(json.dumps(rewritten))) == 7


def test_history_keeps_a_bounded_part_of_the_previous_input():
    history = m.History()
    long = json.dumps(_history(20_000))  # about 2 MB of JSON
    history.read(long)
    kept = sum(len(getattr(history, name)) for name in ("_head", "_seam"))
    assert kept <= 2 * m.History.SEAM < len(long) // 1000
    added = history.read(long[:-1] + "," + json.dumps(_message("user", "text", content="more")) + "]")
    assert [p.content for msg in added for p in msg.parts] == ["more"]


def test_a_malformed_added_message_is_said_with_its_index_in_the_whole_input():
    history = m.History()
    history.read(json.dumps(_history(1)))
    with pytest.raises(g.Malformed, match=r"gen_ai\.input\.messages\[3\]"):
        history.read(json.dumps(_history(1))[:-1] + ",7]")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        ' {"a": 1} ',
        '{"a": 1}\n',
        "[1, 2]",
        '"text"',
        "12",
        "not json",
        "{} {}",
        "[1,",
        "",
        "1e400",
        "NaN",
        "[" * 100_000,
        "9" * 5000,
    ],
)
def test_json_attributes_read_as_json_loads_reads_them(text):
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError):
        expected = text
    found = g.loads(text)
    assert found == expected or (found != found and expected != expected)  # NaN is NaN


def test_an_attribute_that_is_one_json_value_is_read_without_json_loads(monkeypatch):
    def refused(text: str) -> Any:
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(json, "loads", refused)
    assert g.loads('[{"role":"user","parts":[]}]') == [{"role": "user", "parts": []}]


def test_the_turns_read_live_are_still_the_traces():
    live = LiveSpans()
    provider, memory = traced(live)
    agent(provider, "reader", READER).run_sync("read the notes")
    whole = loopnb.from_otel(memory.get_finished_spans())
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert whole.meta["source"]["version"].startswith("pydantic-ai ") and live.errors == []
