"""A Strands Agents trace in its default shape: message events whose content is a list of content blocks.

Strands' tracer (``strands/telemetry/tracer.py``, the previous GenAI conventions it writes unless
told to use the latest) puts a model request's reply in a ``gen_ai.choice`` event whose
``message`` is the JSON of Bedrock content blocks (``[{"text": ...}, {"toolUse": {...}}]``), and
each input message in a ``gen_ai.<role>.message`` (``gen_ai.tool.message`` for tool results)
event whose ``content`` is the same. One such event refused the whole file (issue 26): the blocks
are read now, and an event whose blocks hold nothing readable is skipped with a warning.

The spans are made here with the OpenTelemetry SDK, each as Strands' tracer makes it (names,
attributes, events, statuses), and written as OTLP/JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

import loopnb
from loopnb import RecordingWarning
from tests.golden.foreign import make_otlp as make

START_NS = make.START_NS
TASK = [{"text": "Read notes.txt and tell me what it says."}]
MISSING = "file nots.txt not found; the folder holds notes.txt"


def _use(call_id: str, path: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": "read_file", "input": {"path": path}}}


def _result(call_id: str, status: str, text: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": call_id, "status": status, "content": [{"text": text}]}}


# the conversation as Strands keeps it: (role, content blocks), one message after another
ASKED = [("user", TASK)]
FIRST = [{"text": "Let me read it."}, _use("t1", "nots.txt")]
SECOND = [_use("t2", "notes.txt")]
FINAL = [{"text": "The notes say: buy milk."}]


def _span(
    tracer: trace.Tracer,
    name: str,
    operation: str,
    at: int,
    parent: trace.Span | None,
    *,
    attributes: dict[str, Any] | None = None,
    events: Sequence[tuple[str, dict[str, Any]]] = (),
) -> trace.Span:
    """A span as Strands' ``_start_span`` makes it, with the events it adds."""
    context = trace.set_span_in_context(parent) if parent is not None else None
    attrs = {"gen_ai.operation.name": operation, "gen_ai.system": "strands-agents", **(attributes or {})}
    span = tracer.start_span(name, context=context, attributes=attrs, start_time=START_NS + at * 1_000_000)
    for event, body in events:
        span.add_event(event, body, timestamp=START_NS + at * 1_000_000 + 500_000)
    return span


def _end(span: trace.Span, at: int, error: str | None = None) -> None:
    """Strands' ``_end_span``: status ``ERROR`` with the message when there is one, else ``OK``."""
    span.set_status(Status(StatusCode.ERROR, error) if error else Status(StatusCode.OK))
    span.end(end_time=START_NS + (at + 1) * 1_000_000)


def _messages(history: list[tuple[str, list[dict[str, Any]]]]) -> list[tuple[str, dict[str, Any]]]:
    """Strands' ``_add_event_messages``: one event per message, tool results as tool messages."""
    return [
        (
            "gen_ai.tool.message" if any("toolResult" in b for b in content) else f"gen_ai.{role}.message",
            {"content": json.dumps(content)},
        )
        for role, content in history
    ]


def _chat(
    tracer: trace.Tracer, cycle: trace.Span, at: int, history: list[Any], reply: list[dict[str, Any]]
) -> None:
    """One model request: the messages sent, and the reply as a ``gen_ai.choice`` of blocks."""
    stop = "tool_use" if any("toolUse" in b for b in reply) else "end_turn"
    choice = ("gen_ai.choice", {"finish_reason": stop, "message": json.dumps(reply)})
    usage = {"gen_ai.usage.input_tokens": 40 + at, "gen_ai.usage.output_tokens": 9}
    span = _span(
        tracer,
        "chat",
        "chat",
        at,
        cycle,
        attributes={"gen_ai.request.model": "us.amazon.nova-lite-v1:0", **usage},
        events=[*_messages(history), choice],
    )
    _end(span, at)


def _tool(tracer: trace.Tracer, cycle: trace.Span, at: int, call_id: str, path: str, answer: Any) -> None:
    """One tool call: its input as a ``gen_ai.tool.message``, its result as a ``gen_ai.choice``."""
    status, text = answer
    attributes = {
        "gen_ai.tool.name": "read_file",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.status": status,
    }
    events = [
        ("gen_ai.tool.message", {"role": "tool", "content": json.dumps({"path": path}), "id": call_id}),
        ("gen_ai.choice", {"message": json.dumps([{"text": text}]), "id": call_id}),
    ]
    error = text if status == "error" else None
    span = _span(
        tracer, "execute_tool read_file", "execute_tool", at, cycle, attributes=attributes, events=events
    )
    _end(span, at, error)


def strands_spans(final: list[dict[str, Any]] = FINAL) -> list[Any]:
    """A Strands agent run: read a missing file (the tool returns an error the model reads), read
    the right one, answer."""
    tp, exporter = make.provider(26)
    tracer = tp.get_tracer("strands.telemetry.tracer")
    agent = _span(
        tracer,
        "invoke_agent notes",
        "invoke_agent",
        0,
        None,
        attributes={"gen_ai.agent.name": "notes", "gen_ai.request.model": "us.amazon.nova-lite-v1:0"},
        events=[("gen_ai.user.message", {"content": json.dumps(TASK)})],
    )
    history: list[Any] = list(ASKED)
    steps = [
        (FIRST, ("t1", "nots.txt", ("error", MISSING))),
        (SECOND, ("t2", "notes.txt", ("success", "buy milk"))),
        (final, None),
    ]
    for n, (reply, call) in enumerate(steps):
        at = 10 * (n + 1)
        cycle = _span(tracer, "execute_event_loop_cycle", "execute_event_loop_cycle", at, agent)
        _chat(tracer, cycle, at + 1, history, reply)
        history.append(("assistant", reply))
        if call is not None:
            call_id, path, answer = call
            _tool(tracer, cycle, at + 2, call_id, path, answer)
            history.append(("user", [_result(call_id, *answer)]))
        _end(cycle, at + 3)
    agent.add_event("gen_ai.choice", {"message": "The notes say: buy milk.\n", "finish_reason": "end_turn"})
    _end(agent, 50)
    tp.shutdown()
    return list(exporter.get_finished_spans())


def _written(tmp_path: Path, spans: list[Any]) -> Path:
    path = tmp_path / "strands.otlp.json"
    path.write_text(json.dumps(make.spec_json(spans)))
    return path


def test_a_strands_trace_of_content_blocks_reads_turn_by_turn(tmp_path):
    path = _written(tmp_path, strands_spans())
    rec = loopnb.load(path, errors="raise")  # no item is left unread: the blocks are read
    assert rec.meta["unread"] == []
    turns = rec.turns
    assert turns[["turn", "channel", "tools", "reply_text"]].astype(object).where(
        turns.notna(), None
    ).values.tolist() == [
        [1, "soft", "read_file", "Let me read it."],
        [2, "ok", "read_file", None],
        [3, "ok", None, "The notes say: buy milk."],
    ]
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert calls["call_id"].tolist() == ["t1", "t2"]
    assert calls["text"].tolist() == [MISSING, "buy milk"]  # what the model read: the tool results' blocks
    assert calls["producer"].tolist()[0] == "tool_error"
    started = rec.events[rec.events["kind"] == "run_started"].iloc[0]
    assert started["text"] == TASK[0]["text"]  # the task, read out of its block
    assert list(turns["input_tokens"]) == [51, 61, 71]


def test_from_otel_reads_the_same_spans(tmp_path):
    spans = strands_spans()
    assert (
        loopnb.from_otel(spans, errors="raise")
        .turns.drop(columns=["seq"])
        .equals(loopnb.load(_written(tmp_path, spans)).turns.drop(columns=["seq"]))
    )


def test_a_choice_whose_blocks_hold_nothing_readable_is_skipped_with_a_warning(tmp_path):
    reasoning = [{"reasoningContent": {"reasoningText": {"text": "hmm"}}}]
    path = _written(tmp_path, strands_spans(final=reasoning))
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    (item,) = rec.meta["unread"]
    assert item["where"].startswith("resourceSpans[0].scopeSpans[0].spans[") and item["where"].endswith(
        "'chat'"
    )
    assert item["why"] == (
        "event gen_ai.choice.message: expected a message object, a text or a list of content blocks"
        " (text, toolUse, toolResult), found list"
    )
    (warning,) = [str(w.message) for w in caught]
    assert warning.startswith(f"{path}: {item['where']}: {item['why']}; skipped")
    # the turn keeps what could be read: the request was made, its reply is not known; the others read
    assert rec.turns["channel"].tolist() == ["soft", "ok", "ok"]
    assert rec.turns["reply_text"].isna().tolist() == [False, True, True]
    with pytest.raises(
        loopnb.RecordingError, match=r"event gen_ai\.choice\.message: expected a message object"
    ):
        loopnb.load(path, errors="raise")
