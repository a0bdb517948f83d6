"""Strands Agents runs traced by Strands' own spans, in both of their shapes, and their goldens::

    PYTHONPATH=. python tests/golden/foreign/make_strands.py

Real ``Agent`` runs on Strands' own ``OpenAIModel``, answered by the scripted OpenAI-compatible
server of ``tests/models/fakeserver.py`` on 127.0.0.1 (offline, streamed as Strands asks), traced
by Strands' tracer into the OTel SDK's ``InMemorySpanExporter``: once in its default shape (the
previous GenAI conventions: message events of content blocks), once with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (the latest: ``gen_ai.input.messages``
in ``gen_ai.client.inference.operation.details`` events). Two runs each, the failures Strands has
between them (it has no step limit):

- ``recovers``: the tool raises, arguments that do not fit the tool, a tool it does not have, then
  a call that works and the answer;
- ``model_error``: the tool raises, then the model's server answers 400: the run raises.

Strands reads its tracer's shape once, into one tracer for the process; ``sample`` makes a new
one for each shape (``strands.telemetry.tracer._tracer_instance``, the module's own cache), under
one global tracer provider (OpenTelemetry lets a process set it once).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import strands.telemetry.tracer as strands_tracer
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from strands import Agent, tool
from strands.models.openai import OpenAIModel

from tests.golden.foreign.otlp_files import normalised, provider, spec_json
from tests.models.fakeserver import Fail, FakeServer, Reply

OUT = Path(__file__).resolve().parent / "otlp"
SHAPES = {"default": "", "latest": "gen_ai_latest_experimental"}
"""Each shape of Strands' spans, and the ``OTEL_SEMCONV_STABILITY_OPT_IN`` that asks for it."""
MODEL = "fake-model"
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"
SYSTEM = "You answer questions about the notes folder."

PROVIDER, EXPORTER = provider(30)


@tool
def read_file(path: str) -> str:
    """Read a text file of the notes folder.

    Args:
        path: The file's path in the folder.
    """
    if path != "notes.txt":
        raise FileNotFoundError(MISSING.format(path))
    return "buy milk"


SCRIPTS: dict[str, tuple[str, list[Any]]] = {
    "recovers": (
        "What do the notes say?",
        [
            Reply(calls=[("read_file", {"path": "nots.txt"})]),
            Reply(calls=[("read_file", {"pth": "notes.txt"})]),
            Reply(calls=[("serch", {"query": "notes"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
    "model_error": (
        "Read a.txt",
        [Reply(calls=[("read_file", {"path": "a.txt"})]), Fail(400, DOWN)],
    ),
}


@dataclass
class Run:
    """One run as Strands made it: the requests its model received and how it ended."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None
    raised: str | None = None


@dataclass
class Sample:
    shape: str
    runs: list[Run]
    spans: list[ReadableSpan]


def _run(name: str) -> Run:
    task, script = SCRIPTS[name]
    run = Run(name)
    with FakeServer(script) as server:
        model = OpenAIModel(
            client_args={"base_url": server.openai_url, "api_key": "not-a-key", "max_retries": 0},
            model_id=MODEL,
        )
        agent = Agent(model=model, tools=[read_file], system_prompt=SYSTEM, callback_handler=None)
        try:
            run.output = str(agent(task)).strip()
        except Exception as exc:  # the run raised: what Strands does when the model fails
            run.raised = type(exc).__name__
        run.requests = [r.body for r in server.requests]
    return run


def sample(shape: str) -> Sample:
    """The runs in ``shape`` (a key of ``SHAPES``), a trace each."""
    if not isinstance(trace.get_tracer_provider(), type(PROVIDER)):
        trace.set_tracer_provider(PROVIDER)
    before = os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN")
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = SHAPES[shape]
    strands_tracer._tracer_instance = None  # Strands reads the shape as its tracer is made
    EXPORTER.clear()
    try:
        runs = [_run(name) for name in SCRIPTS]
    finally:
        if before is None:
            del os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"]
        else:
            os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = before
        strands_tracer._tracer_instance = None
    return Sample(shape, runs, list(EXPORTER.get_finished_spans()))


def golden(shape: str) -> Path:
    return OUT / f"strands_{shape}.otlp.json"


def main() -> None:
    for shape in SHAPES:
        text = json.dumps(spec_json(normalised(sample(shape).spans))) + "\n"
        golden(shape).write_text(text, encoding="utf-8")
        print(f"wrote {golden(shape)} ({len(text.encode())} bytes)")


if __name__ == "__main__":
    main()
