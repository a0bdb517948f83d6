"""The reading rules CrewAI's traces rest on, each on the smallest spans that show it.

CrewAI under OpenInference needed no rule of its own; these pin the ones it rests on where its
trace has a shape of its own: a task CrewAI tries again from the start after its model failed
(``max_retry_limit``): the failed request, then a request whose history starts again from the task.
Read whole (``from_otel``) and live (``LiveSpans``), the same.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, set_span_in_context

import loopnb
from loopnb.otel import LiveSpans

START, MS = 1_772_355_600_000_000_000, 1_000_000
TASK = [("system", "You are reader."), ("user", "What do the notes say?")]
NOT_FOUND = "Error executing tool: file nots.txt not found"
SCHEMA = {"type": "function", "function": {"name": "read_file", "parameters": {"required": ["path"]}}}


def _messages(prefix: str, messages: list[tuple[str, Any]]) -> dict[str, Any]:
    """OpenInference's flattened messages: ``(role, text)``, ``(assistant, (call id, path))`` or
    ``(tool, (call id, text))``."""
    attributes: dict[str, Any] = {}
    for i, (role, body) in enumerate(messages):
        at = f"{prefix}.{i}.message."
        attributes[at + "role"] = role
        if role == "assistant" and isinstance(body, tuple):
            call = at + "tool_calls.0.tool_call."
            attributes[call + "id"], attributes[call + "function.name"] = body[0], "read_file"
            attributes[call + "function.arguments"] = json.dumps({"path": body[1]})
        elif role == "tool":
            attributes[at + "tool_call_id"], attributes[at + "content"] = body
        else:
            attributes[at + "content"] = body
    return attributes


class Crew:
    """Writes one crew's spans as OpenInference does (kickoff CHAIN, task AGENT, LLM and TOOL
    spans), each at the next millisecond."""

    def __init__(self, *processors: Any) -> None:
        self.memory, provider = InMemorySpanExporter(), TracerProvider()
        for processor in (SimpleSpanProcessor(self.memory), *processors):
            provider.add_span_processor(processor)
        self.tracer, self.now = provider.get_tracer("openinference.instrumentation.crewai"), START

    def tick(self) -> int:
        self.now += MS
        return self.now

    def span(self, name: str, kind: str, parent: Any, **attributes: Any) -> Any:
        attributes["openinference.span.kind"] = kind
        return self.tracer.start_span(
            name, set_span_in_context(parent), attributes=attributes, start_time=self.tick()
        )

    def request(self, agent: Any, sent: list[tuple[str, Any]], reply: tuple[str, Any] | None) -> None:
        attributes = {
            **_messages("llm.input_messages", sent),
            "llm.tools.0.tool.json_schema": json.dumps(SCHEMA),
        }
        chat = self.span("ChatCompletion", "LLM", agent, **attributes)
        if reply is None:  # the model's server failed
            chat.record_exception(RuntimeError("Error code: 500 - overloaded"), timestamp=self.tick())
            chat.set_status(Status(StatusCode.ERROR, "InternalServerError: Error code: 500 - overloaded"))
        else:
            chat.set_attributes(_messages("llm.output_messages", [reply]))
            chat.set_status(Status(StatusCode.OK))
        chat.end(end_time=self.tick())

    def tool(self, agent: Any, path: str, error: str | None) -> None:
        tool = self.span(
            "read_file.run",
            "TOOL",
            agent,
            **{"tool.name": "read_file", "input.value": f'{{"path": "{path}"}}'},
        )
        if error:
            tool.set_status(Status(StatusCode.ERROR, error))
        else:
            tool.set_attribute("output.value", "buy milk")
            tool.set_status(Status(StatusCode.OK))
        tool.end(end_time=self.tick())


def tried_again(*processors: Any) -> list[Any]:
    """A task whose model failed at its second request, tried again from the start, that recovers."""
    crew = Crew(*processors)
    kickoff = crew.tracer.start_span(
        "Crew.kickoff", attributes={"openinference.span.kind": "CHAIN"}, start_time=crew.tick()
    )
    agent = crew.span("reader._execute_core", "AGENT", kickoff)
    crew.request(agent, TASK, ("assistant", ("call_1", "nots.txt")))
    crew.tool(agent, "nots.txt", "file nots.txt not found")
    crew.request(agent, [*TASK, ("assistant", ("call_1", "nots.txt")), ("tool", ("call_1", NOT_FOUND))], None)
    crew.request(agent, TASK, ("assistant", ("call_2", "notes.txt")))  # the task again, from the start
    crew.tool(agent, "notes.txt", None)
    crew.request(
        agent,
        [*TASK, ("assistant", ("call_2", "notes.txt")), ("tool", ("call_2", "buy milk"))],
        ("assistant", "buy milk"),
    )
    for span in (agent, kickoff):
        span.set_status(Status(StatusCode.OK))
        span.end(end_time=crew.tick())
    return list(crew.memory.get_finished_spans())


def test_a_task_tried_again_from_the_start_reads_each_call_where_the_model_read_it():
    live = LiveSpans()
    rec = loopnb.from_otel(tried_again(live))
    rows = rec.turns[["turn", "channel", "producer", "tools", "error_text"]].astype(object)
    assert rows.where(rows.notna(), None).values.tolist() == [
        [1, "soft", "tool_error", "read_file", NOT_FOUND],  # read in the request that failed
        [2, "ok", None, "read_file", None],  # the failed request, made again as the task's first: no turn
        [3, "ok", None, None, None],
    ]
    assert rec.meta["run_ids"] == [rec.turns["run_id"].iloc[0]]  # the kickoff around it is no run
    pd.testing.assert_frame_equal(live.turns, rec.turns)
