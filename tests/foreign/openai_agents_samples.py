"""Scripted OpenAI Agents SDK runs, traced: the samples the openai-agents reader is tested on.

The SDK's own models run unchanged (``OpenAIChatCompletionsModel``, whose ``generation`` spans
keep the messages, and ``OpenAIResponsesModel``, whose ``response`` spans keep only an id and
the usage); their client talks to an ``httpx.MockTransport`` that answers from a script, so no
request leaves the process. ``set_trace_processors`` replaces the SDK's exporter to OpenAI's
servers with the processors given. Six runs, one trace each:

1. ``recovers``: a handoff, a tool error the model recovers from (the SDK's fixed text), invalid
   JSON arguments with an unknown tool beside them (``tool_not_found_behavior=
   "return_error_to_model"``), a timed-out tool, then the answer;
2. ``unknown-tool``: the default behaviour, ``ModelBehaviorError`` ends the run;
3. ``crash``: a tool with ``failure_error_function=None`` raises, and the exception ends the run;
4. ``max-turns``: a tool whose failure text names what failed, until ``MaxTurnsExceeded``;
5. ``guardrail``: an input guardrail's tripwire ends the run;
6. ``model-error``: after a tool call, the model's server answers HTTP 500 (the client does not
   retry) and the ``InternalServerError`` ends the run.

openai-agents 0.2 (the oldest the project claims) has neither tool timeouts nor
``tool_not_found_behavior``: there the ``recovers`` script calls neither the unknown tool nor the
slow one (``NEWER``), and the rows it must read as say so (``test_openai_agents_live``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from agents import (
    Agent,
    GuardrailFunctionOutput,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    input_guardrail,
    set_trace_processors,
    set_tracing_disabled,
)
from agents.tracing import Span, Trace, TracingProcessor
from openai import AsyncOpenAI

Shape = Literal["chat", "responses"]
MODEL = "gpt-scripted"
PROMPT = "What do the release notes say?"


@dataclass
class Say:
    """One scripted model response: text, or calls ``(call_id, name, raw arguments)``; or, with
    ``fails``, an HTTP 500 whose error message it is."""

    text: str | None = None
    calls: Sequence[tuple[str, str, str]] = ()
    tokens: tuple[int, int] = (100, 10)
    fails: str | None = None


@dataclass
class Collect(TracingProcessor):
    """Keeps every finished span and trace (the objects), in the order they end."""

    items: list[Span[Any] | Trace] = field(default_factory=list)

    def on_trace_start(self, trace: Trace) -> None:
        pass

    def on_trace_end(self, trace: Trace) -> None:
        self.items.append(trace)

    def on_span_start(self, span: Span[Any]) -> None:
        pass

    def on_span_end(self, span: Span[Any]) -> None:
        self.items.append(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def _chat(say: Say, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": say.text}
    if say.calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in say.calls
        ]
    prompt, completion = say.tokens
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _responses(say: Say, model: str, n: int) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if say.text is not None:
        content = [{"type": "output_text", "text": say.text, "annotations": []}]
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    for call_id, name, raw in say.calls:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": raw,
                "status": "completed",
            }
        )
    ins, outs = say.tokens
    usage = {
        "input_tokens": ins,
        "output_tokens": outs,
        "total_tokens": ins + outs,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "output": output,
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def scripted_model(shape: Shape, script: Sequence[Say]) -> OpenAIChatCompletionsModel | OpenAIResponsesModel:
    """The SDK's real model of ``shape``, answering from ``script`` through a mock transport."""
    queue = list(script)
    served = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal served
        if not queue:
            return httpx.Response(500, json={"error": {"message": "the script has no more replies"}})
        say, served = queue.pop(0), served + 1
        if say.fails is not None:
            return httpx.Response(500, json={"error": {"message": say.fails, "type": "server_error"}})
        model = json.loads(request.content)["model"]
        body = _chat(say, model) if shape == "chat" else _responses(say, model, served)
        return httpx.Response(200, json=body)

    client = AsyncOpenAI(
        api_key="scripted",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)),
    )
    if shape == "chat":
        return OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    return OpenAIResponsesModel(model=MODEL, openai_client=client)


NOTES = {"notes.txt": "Release notes: ship on Friday."}


@function_tool
def read_file(path: str) -> str:
    """Read a file of the release folder."""
    if path not in NOTES:
        raise FileNotFoundError(f"no such file: {path}")
    return NOTES[path]


NEWER = "timeout" in inspect.signature(function_tool).parameters and hasattr(
    RunConfig, "tool_not_found_behavior"
)
"""Whether this SDK has tool timeouts and ``RunConfig.tool_not_found_behavior`` (0.2 has neither)."""


@function_tool(**({"timeout": 0.01} if NEWER else {}))
async def wait_for(seconds: float) -> str:
    """Wait for the build to settle."""
    await asyncio.sleep(seconds)
    return "settled"


@function_tool(failure_error_function=None)
def deploy(env: str) -> str:
    """Deploy the release."""
    raise RuntimeError(f"deploy key missing for {env}")


def _fetch_failed(ctx: Any, error: Exception) -> str:
    return f"fetch failed: {error}; use read_file on the cached notes.txt instead"


@function_tool(failure_error_function=_fetch_failed)
def fetch(url: str) -> str:
    """Fetch a page."""
    raise ConnectionError(f"HTTP 503 from {url}")


@input_guardrail
def no_secrets(ctx: Any, agent: Any, prompt: Any) -> GuardrailFunctionOutput:
    """Trips on every prompt: the sample needs a run a guardrail ended."""
    return GuardrailFunctionOutput(output_info="asked for a secret", tripwire_triggered=True)


RUNS: dict[str, list[Say]] = {
    "recovers": [
        Say(calls=[("call_h", "transfer_to_reader", "{}")], tokens=(100, 5)),
        Say(calls=[("call_1", "read_file", '{"path": "nots.txt"}')], tokens=(120, 12)),
        Say(
            calls=[("call_2", "read_file", '{"path": "notes.txt"'), ("call_3", "serch", '{"q": "notes"}')][
                : 2 if NEWER else 1
            ],
            tokens=(140, 14),
        ),
        Say(
            calls=[
                ("call_4", "read_file", '{"path": "notes.txt"}'),
                ("call_5", "wait_for", '{"seconds": 5}'),
            ][: 2 if NEWER else 1],
            tokens=(160, 16),
        ),
        Say(text="The notes say: ship on Friday.", tokens=(180, 9)),
    ],
    "unknown-tool": [Say(calls=[("call_6", "list_releases", "{}")], tokens=(90, 7))],
    "crash": [
        Say(calls=[("call_7", "read_file", '{"path": "notes.txt"}')], tokens=(110, 11)),
        Say(calls=[("call_8", "deploy", '{"env": "prod"}')], tokens=(130, 13)),
    ],
    "max-turns": [
        Say(calls=[("call_9", "fetch", '{"url": "https://api.example.test/notes"}')], tokens=(95, 8)),
        Say(calls=[("call_10", "fetch", '{"url": "https://api.example.test/notes"}')], tokens=(105, 8)),
    ],
    "guardrail": [Say(text="I cannot share that.", tokens=(80, 6))],
    "model-error": [
        Say(calls=[("call_11", "read_file", '{"path": "notes.txt"}')], tokens=(85, 9)),
        Say(fails="The server had an error while processing your request."),
    ],
}
"""Each run's script, in the order the samples run them."""


def _agents(name: str, model: Any) -> Agent[Any]:
    reader = Agent(
        name="reader",
        instructions="Answer from the release folder.",
        model=model,
        tools=[read_file, wait_for, deploy, fetch],
    )
    if name == "recovers":
        return Agent(name="triage", instructions="Hand over to the reader.", model=model, handoffs=[reader])
    if name == "guardrail":
        return reader.clone(input_guardrails=[no_secrets])
    return reader


def run_samples(shape: Shape, processors: Sequence[TracingProcessor]) -> dict[str, str]:
    """Run the six samples on the ``shape`` model with ``processors`` tracing them; returns how
    each run ended (``final output`` or the exception's class)."""
    set_tracing_disabled(False)
    set_trace_processors(list(processors))
    outcomes: dict[str, str] = {}
    try:
        for name, script in RUNS.items():
            config = RunConfig(workflow_name=name, group_id=f"sample-{shape}")
            if name == "recovers" and NEWER:
                config.tool_not_found_behavior = "return_error_to_model"
            agent = _agents(name, scripted_model(shape, script))
            try:
                result = Runner.run_sync(
                    agent, PROMPT, run_config=config, max_turns=2 if name == "max-turns" else 10
                )
                outcomes[name] = str(result.final_output)
            except Exception as exc:  # each sample but the first ends with the SDK's exception
                outcomes[name] = type(exc).__name__
    finally:
        set_trace_processors([])
    return outcomes
