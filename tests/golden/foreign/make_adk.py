"""Google ADK runs traced by ADK's own spans, and their golden::

    PYTHONPATH=. python tests/golden/foreign/make_adk.py

Real ``LlmAgent`` runs through ADK's ``InMemoryRunner``, on a ``BaseLlm`` of our own (ADK's way to
plug in a model) that answers from a script and keeps every request it was given, traced by ADK's
tracer into the OTel SDK's ``InMemorySpanExporter`` with the GenAI conventions' content on the
spans (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``,
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``: without them ADK keeps no message
on its spans). In ADK a tool that raises ends the run, so each failure is a run of its own:

- ``recovers``: the tool returns an error as ADK's guide says to (``{"status": "error", ...}``),
  then a call that works and the answer;
- ``bad_arguments``, ``unknown_tool``: a call ADK answers itself, then the answer;
- ``step_limit``: ``RunConfig(max_llm_calls=2)`` ends the run when a third request would be made;
- ``model_error``: the model raises at the second request;
- ``tool_raises``: the tool raises: the run raises.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from tests.golden.foreign.otlp_files import normalised, provider, spec_json

OUT = Path(__file__).resolve().parent / "otlp" / "adk.otlp.json"
MODEL = "scripted-model"
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"
CRASH = "the disk is on fire"

PROVIDER, EXPORTER = provider(40)


def read_file(path: str) -> dict[str, str]:
    """Read a text file of the notes folder.

    Args:
        path: The file's path in the folder.
    """
    if path == "fire.txt":
        raise OSError(CRASH)
    if path != "notes.txt":
        return {"status": "error", "error_message": MISSING.format(path)}
    return {"status": "success", "text": "buy milk"}


SCRIPTS: dict[str, tuple[int, list[Any]]] = {
    "recovers": (
        20,
        [
            [("read_file", {"path": "nots.txt"})],
            [("read_file", {"path": "notes.txt"})],
            "The notes say: buy milk.",
        ],
    ),
    "bad_arguments": (20, [[("read_file", {"pth": "notes.txt"})], "I could not read it."]),
    "unknown_tool": (20, [[("serch", {"query": "notes"})], "I could not search."]),
    "step_limit": (
        2,
        [[("read_file", {"path": "notes.txt"})], [("read_file", {"path": "notes.txt"})], "done"],
    ),
    "model_error": (20, [[("read_file", {"path": "notes.txt"})], RuntimeError(DOWN)]),
    "tool_raises": (20, [[("read_file", {"path": "fire.txt"})], "unreached"]),
}


class Scripted(BaseLlm):
    """A model that answers from ``script`` (calls as ``(name, arguments)`` lists, texts, or an
    exception to raise) and keeps the contents of every request it was given."""

    script: list[Any] = field(default_factory=list)
    seen: list[list[types.Content]] = field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(list(llm_request.contents))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, str):
            parts = [types.Part(text=step)]
        else:
            n = len(self.seen)
            parts = [
                types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"call_{n}_{i}"))
                for i, (name, args) in enumerate(step)
            ]
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10 * len(self.seen),
            candidates_token_count=5,
            total_token_count=10 * len(self.seen) + 5,
        )
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


@dataclass
class Run:
    """One run as ADK made it: the contents of each request its model was given (the last one of
    each: what it read last), what it answered, and what it raised."""

    name: str
    read: list[Any] = field(default_factory=list)
    output: str | None = None
    raised: str | None = None


async def _run(name: str) -> Run:
    max_calls, script = SCRIPTS[name]
    model = Scripted(model=MODEL, script=list(script), seen=[])
    agent = LlmAgent(name="notes", model=model, tools=[read_file], instruction="Answer from the notes.")
    runner = InMemoryRunner(agent=agent, app_name="notes")
    session = await runner.session_service.create_session(app_name="notes", user_id="user")
    message = types.Content(role="user", parts=[types.Part(text=f"Read the notes ({name}).")])
    run = Run(name)
    try:
        async for event in runner.run_async(
            user_id="user",
            session_id=session.id,
            new_message=message,
            run_config=RunConfig(max_llm_calls=max_calls),
        ):
            if event.content and event.content.parts and event.content.parts[0].text:
                run.output = event.content.parts[0].text
    except Exception as exc:  # the run raised: a tool's exception, the model's, the limit
        run.raised = type(exc).__name__
    for contents in model.seen[1:]:
        last = contents[-1].parts or []
        run.read.append([p.function_response.response for p in last if p.function_response is not None])
    return run


@dataclass
class Sample:
    runs: list[Run]
    spans: list[ReadableSpan]


def sample() -> Sample:
    """The runs, a trace each."""
    if not isinstance(trace.get_tracer_provider(), type(PROVIDER)):
        trace.set_tracer_provider(PROVIDER)
    EXPORTER.clear()
    runs = [asyncio.run(_run(name)) for name in SCRIPTS]
    return Sample(runs, list(EXPORTER.get_finished_spans()))


def main() -> None:
    text = json.dumps(spec_json(normalised(sample().spans))) + "\n"
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text.encode())} bytes)")


if __name__ == "__main__":
    main()
