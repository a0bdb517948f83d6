"""Regenerate the OpenTelemetry goldens under ``tests/golden/foreign/otlp/``::

    PYTHONPATH=. python tests/golden/foreign/make_otlp.py

The pydantic-ai samples are real ``Agent`` runs on ``FunctionModel`` (offline, scripted), traced
by pydantic-ai's own instrumentation into the OTel SDK's ``InMemorySpanExporter``; the other two
are spans written with the OTel SDK in the shapes OpenInference's conventions and the previous
GenAI conventions give them (their instrumentations need model clients this suite does not run).
``normalised`` makes the files the same every time: sequential ids, times replaced in order by
1 ms steps from a fixed start, pydantic-ai's uuid7 run and conversation ids by fixed ones, and
stack traces dropped (they name this machine's paths). Then each sample is written the way a
real exporter writes it:

- ``pydantic_ai.otlp.json``: OTLP/JSON as the specification gives it (hex ids, integer enums);
- ``pydantic_ai.pb.json``: protobuf's ``MessageToDict`` of ``encode_spans`` (base64 ids, enum
  names, defaults left out);
- ``pydantic_ai_v2.spans.jsonl``: pydantic-ai's older instrumentation names (``agent run``,
  ``running tool``, ``tool_arguments``), one ``span.to_json()`` a line, with a structured output;
- ``openinference.otlp.jsonl``: OpenInference attributes, one OTLP/JSON request a line (what a
  collector's file exporter writes);
- ``legacy_genai.console.txt``: the previous GenAI names (message events, ``prompt_tokens``) and
  no agent span, as ``ConsoleSpanExporter`` prints them (indented objects one after another).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import Status, StatusCode
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import UsageLimits

from tests.golden.foreign.otlp_files import (
    START_NS,
    by_trace,
    normalised,
    protobuf_json,
    provider,
    spec_json,
)

OUT = Path(__file__).resolve().parent / "otlp"
MODEL = "scripted-model"


def scripted(responses: Sequence[ModelResponse]) -> FunctionModel:
    steps: Iterator[ModelResponse] = iter(responses)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return next(steps)

    return FunctionModel(answer, model_name=MODEL)


def call(tool: str, args: dict[str, Any], call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])


def say(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


class Count(BaseModel):
    notes: int


def instrumented(settings: InstrumentationSettings) -> dict[str, Any]:
    """An ``Agent``'s keyword arguments that trace it with ``settings``: as a capability where
    pydantic-ai has them, else as pydantic-ai-slim 1.0 took them (``instrument=``)."""
    try:
        from pydantic_ai.capabilities import Instrumentation
    except ImportError:
        return {"instrument": settings}
    return {"capabilities": [Instrumentation(settings=settings)]}


def _agent(
    tp: TracerProvider, name: str, responses: Sequence[ModelResponse], *, version: int, **kwargs: Any
) -> Agent[None, Any]:
    settings = InstrumentationSettings(tracer_provider=tp, version=version)  # type: ignore[arg-type]
    agent: Agent[None, Any] = Agent(scripted(responses), name=name, **instrumented(settings), **kwargs)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        if path != "notes.txt":
            raise ModelRetry(f"file {path} not found; did you mean notes.txt?")
        return "hi"

    @agent.tool_plain
    def delete(path: str) -> str:
        """Delete a file."""
        raise KeyError(path)

    return agent


def _run(agent: Agent[None, Any], prompt: str, **kwargs: Any) -> None:
    with contextlib.suppress(Exception):  # a hard end is part of the sample: its spans say so
        agent.run_sync(prompt, **kwargs)


RECOVERED = [
    call("read_file", {"path": "nots.txt"}, "c1"),
    call("serch", {"q": "notes"}, "c2"),
    call("read_file", {"pth": 3}, "c3"),
    call("read_file", {"path": "notes.txt"}, "c4"),
]


def pydantic_ai_spans(version: int = 5) -> list[ReadableSpan]:
    """pydantic-ai runs, traced by its instrumentation at ``version``: a soft error recovered from,
    an unknown tool and invalid arguments; a tool that crashes the run; (version 5) a request
    limit and a retry budget that end runs; (version 2) a structured output rejected once."""
    tp, exporter = provider(version)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions before 5 are deprecated, and say so
        if version >= 5:
            _run(
                _agent(tp, "reader", [*RECOVERED, say("the notes say hi")], version=version, retries=3),
                "read the notes",
            )
        else:
            outputs = [call("final_result", {"notes": "two"}, "o1"), call("final_result", {"notes": 2}, "o2")]
            agent = _agent(
                tp, "counter", [*RECOVERED, *outputs], version=version, retries=3, output_type=Count
            )
            _run(agent, "count the notes")
        _run(_agent(tp, "deleter", [call("delete", {"path": "x"}, "d1")], version=version), "delete x")
        if version >= 5:
            limited = _agent(tp, "limited", [call("read_file", {"path": "notes.txt"}, "l1")], version=version)
            _run(limited, "read the notes", usage_limits=UsageLimits(request_limit=1))
            stubborn = [
                call("read_file", {"path": "a.txt"}, "s1"),
                call("read_file", {"path": "b.txt"}, "s2"),
            ]
            _run(_agent(tp, "stubborn", stubborn, version=version, retries=1), "read a file")
    return list(exporter.get_finished_spans())


def _emit(
    tracer: trace.Tracer,
    name: str,
    attributes: dict[str, Any],
    at: int,
    *,
    parent: trace.Span | None = None,
    error: tuple[str, str] | None = None,
    status: StatusCode = StatusCode.UNSET,
    events: Sequence[tuple[str, dict[str, Any]]] = (),
    end: bool = True,
) -> trace.Span:
    """One span from ``at`` ms to ``at + 1`` ms after the start (open when ``end`` is False)."""
    context = trace.set_span_in_context(parent) if parent is not None else None
    span = tracer.start_span(
        name, context=context, attributes=attributes, start_time=START_NS + at * 1_000_000
    )
    for event, attrs in events:
        span.add_event(event, attrs, timestamp=START_NS + at * 1_000_000 + 500_000)
    if error is not None:
        span.add_event("exception", {"exception.type": error[0], "exception.message": error[1]})
    if status is not StatusCode.UNSET:
        span.set_status(
            Status(status, f"{error[0]}: {error[1]}" if error and status is StatusCode.ERROR else None)
        )
    if end:
        span.end(end_time=START_NS + (at + 1) * 1_000_000)
    return span


SEARCH = json.dumps({"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}})


def _oi_llm(n: int, history: list[dict[str, Any]], out: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "oi-model",
        "llm.tools.0.tool.json_schema": SEARCH,
        "llm.token_count.prompt": 40 + 10 * n,
        "llm.token_count.completion": 8,
    }
    for i, msg in enumerate(history):
        for key, value in msg.items():
            attrs[f"llm.input_messages.{i}.message.{key}"] = value
    for key, value in out.items():
        attrs[f"llm.output_messages.0.message.{key}"] = value
    return attrs


def _oi_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "tool_calls.0.tool_call.id": call_id,
        "tool_calls.0.tool_call.function.name": name,
        "tool_calls.0.tool_call.function.arguments": json.dumps(args),
    }


def openinference_spans() -> list[ReadableSpan]:
    """A run in OpenInference's shapes: a tool error left ``UNSET`` (an exception event only),
    an unknown tool with no TOOL span, invalid arguments (``ERROR``), a recovery; and a run a
    tool's exception ended."""
    tp, exporter = provider(10)
    tracer = tp.get_tracer("loopnb-goldens.openinference", "1")
    steps: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
        (
            _oi_call("call_1", "search", {"query": "nots"}),
            {"error": ("ToolError", "no file matches 'nots'; try 'notes'")},
        ),
        (_oi_call("call_2", "serch", {"query": "notes"}), None),
        (
            _oi_call("call_3", "search", {"qery": "notes"}),
            {"error": ("ValidationError", "search: field 'query' is required"), "status": StatusCode.ERROR},
        ),
        (_oi_call("call_4", "search", {"query": "notes"}), {"output": "notes.txt: hi"}),
    ]
    read = {
        "call_1": "no file matches 'nots'; try 'notes'",
        "call_2": "Error: tool 'serch' not found; available tools: search",
        "call_3": "search: field 'query' is required",
        "call_4": "notes.txt: hi",
    }
    agent = _emit(
        tracer, "agent", {"openinference.span.kind": "AGENT", "input.value": "find the notes"}, 0, end=False
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": "find the notes"}]
    at = 1
    for n, (out, tool) in enumerate(steps):
        _emit(tracer, "llm", _oi_llm(n, history, out), at, parent=agent)
        call_id, name = out["tool_calls.0.tool_call.id"], out["tool_calls.0.tool_call.function.name"]
        if tool is not None:
            attrs = {
                "openinference.span.kind": "TOOL",
                "tool.name": name,
                "input.value": out["tool_calls.0.tool_call.function.arguments"],
            }
            if "output" in tool:
                attrs["output.value"] = tool["output"]
            _emit(
                tracer,
                name,
                attrs,
                at + 1,
                parent=agent,
                error=tool.get("error"),
                status=tool.get("status", StatusCode.UNSET),
            )
        history += [out, {"role": "tool", "tool_call_id": call_id, "content": read[call_id]}]
        at += 2
    _emit(
        tracer,
        "llm",
        _oi_llm(len(steps), history, {"role": "assistant", "content": "the notes say hi"}),
        at,
        parent=agent,
    )
    agent.set_attribute("output.value", "the notes say hi")
    agent.end(end_time=START_NS + (at + 2) * 1_000_000)

    crashed = _emit(
        tracer, "agent", {"openinference.span.kind": "AGENT", "input.value": "reindex"}, 20, end=False
    )
    first = [{"role": "user", "content": "reindex"}]
    _emit(tracer, "llm", _oi_llm(0, first, _oi_call("call_9", "search", {"query": "*"})), 21, parent=crashed)
    failure = ("RuntimeError", "index is locked")
    tool_attrs = {"openinference.span.kind": "TOOL", "tool.name": "search", "input.value": '{"query": "*"}'}
    _emit(tracer, "search", tool_attrs, 22, parent=crashed, error=failure, status=StatusCode.ERROR)
    crashed.add_event("exception", {"exception.type": failure[0], "exception.message": failure[1]})
    crashed.set_status(Status(StatusCode.ERROR, "RuntimeError: index is locked"))
    crashed.end(end_time=START_NS + 24 * 1_000_000)
    return list(exporter.get_finished_spans())


def _legacy_chat(n: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "legacy-model",
        "gen_ai.usage.prompt_tokens": 30 + 5 * n,
        "gen_ai.usage.completion_tokens": 6,
        "gen_ai.tool.definitions": json.dumps(
            [{"type": "function", "name": "read_file"}, {"type": "function", "name": "delete"}]
        ),
    }


def _choice(call_id: str, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ],
    }
    return "gen_ai.choice", {"index": 0, "finish_reason": "tool_calls", "message": json.dumps(message)}


def legacy_genai_spans() -> list[ReadableSpan]:
    """Spans under the previous GenAI names, with no agent span: a tool error marked ``OK`` with
    ``error.type``; an unknown tool; invalid arguments; and a trace a tool's exception ended."""
    tp, exporter = provider(11)
    tracer = tp.get_tracer("loopnb-goldens.genai-events", "1")
    calls = [
        (
            "k1",
            "read_file",
            {"path": "nots.txt"},
            "FileNotFoundError",
            "nots.txt: no such file",
            StatusCode.OK,
        ),
        ("k2", "grep", {"pattern": "hi"}, None, "unknown tool grep; tools are read_file, delete", None),
        (
            "k3",
            "read_file",
            {"file": "notes.txt"},
            "ValidationError",
            "read_file() missing argument 'path'",
            StatusCode.ERROR,
        ),
        ("k4", "read_file", {"path": "notes.txt"}, None, "hi", StatusCode.UNSET),
    ]
    history: list[tuple[str, dict[str, Any]]] = [("gen_ai.user.message", {"content": "read the notes"})]
    request = _emit(tracer, "POST /ask", {"http.request.method": "POST"}, 0, end=False)
    at = 1
    for n, (call_id, name, args, error, text, code) in enumerate(calls):
        events = [*history, _choice(call_id, name, args)]
        _emit(tracer, "chat legacy-model", _legacy_chat(n), at, parent=request, events=events)
        if code is not None:
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
            }
            if error:
                attrs["error.type"] = error
            _emit(tracer, f"execute_tool {name}", attrs, at + 1, parent=request, status=code)
        history += [
            (
                "gen_ai.assistant.message",
                {
                    "tool_calls": json.dumps(
                        [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                        ]
                    )
                },
            ),
            ("gen_ai.tool.message", {"id": call_id, "content": text}),
        ]
        at += 2
    final = [
        *history,
        (
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "stop",
                "message": json.dumps({"role": "assistant", "content": "the notes say hi"}),
            },
        ),
    ]
    _emit(tracer, "chat legacy-model", _legacy_chat(len(calls)), at, parent=request, events=final)
    request.end(end_time=START_NS + (at + 2) * 1_000_000)

    begin = [("gen_ai.user.message", {"content": "delete the notes"})]
    crash_events = [*begin, _choice("k9", "delete", {"path": "notes.txt"})]
    crashed = _emit(tracer, "POST /ask", {"http.request.method": "POST"}, 20, end=False)
    _emit(tracer, "chat legacy-model", _legacy_chat(0), 21, parent=crashed, events=crash_events)
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "delete",
        "gen_ai.tool.call.id": "k9",
        "error.type": "PermissionError",
    }
    _emit(
        tracer,
        "execute_tool delete",
        attrs,
        22,
        parent=crashed,
        error=("PermissionError", "notes.txt is read-only"),
        status=StatusCode.ERROR,
    )
    crashed.set_status(Status(StatusCode.ERROR, "PermissionError: notes.txt is read-only"))
    crashed.end(end_time=START_NS + 24 * 1_000_000)
    return list(exporter.get_finished_spans())


def _write(name: str, text: str) -> None:
    (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {OUT / name} ({len(text.encode())} bytes)")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    spans = normalised(pydantic_ai_spans())
    _write("pydantic_ai.otlp.json", json.dumps(spec_json(spans)) + "\n")
    _write("pydantic_ai.pb.json", json.dumps(protobuf_json(spans)) + "\n")
    v2 = normalised(pydantic_ai_spans(version=2))
    _write("pydantic_ai_v2.spans.jsonl", "".join(json.dumps(json.loads(s.to_json())) + "\n" for s in v2))
    oi = normalised(openinference_spans())
    _write("openinference.otlp.jsonl", "".join(json.dumps(spec_json(t)) + "\n" for t in by_trace(oi)))
    legacy = normalised(legacy_genai_spans())
    _write("legacy_genai.console.txt", "".join(s.to_json() + "\n" for s in legacy))


if __name__ == "__main__":
    main()
