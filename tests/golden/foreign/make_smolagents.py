"""smolagents runs traced by OpenInference's instrumentation, and their golden::

    PYTHONPATH=. python tests/golden/foreign/make_smolagents.py

Real ``ToolCallingAgent`` runs on smolagents' own ``OpenAIServerModel``, answered by the scripted
OpenAI-compatible server of ``tests/models/fakeserver.py`` on 127.0.0.1 (offline), traced by
``openinference-instrumentation-smolagents`` into the OTel SDK's ``InMemorySpanExporter``. Three
runs, the four failures between them:

- ``recovers``: the tool raises, arguments that do not fit the tool, a tool it does not have, then
  a call that works and the final answer;
- ``step_limit``: the tool raises at both of its two steps (``max_steps=2``): smolagents asks the
  model for an answer with no tools;
- ``model_error``: the tool raises, then the model's server answers 400: the run raises.

``SAMPLE`` keeps, beside the spans, what smolagents did: each step's error (its class and text,
from the agent's memory), every request the server received, and how each run ended. The golden
(``otlp/smolagents.otlp.json``) is the spans in OTLP/JSON as the specification writes it.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from tests.golden.foreign.otlp_files import Sample, traced, write_golden
from tests.models.fakeserver import Fail, FakeServer, Reply

OUT = Path(__file__).resolve().parent / "otlp" / "smolagents.otlp.json"
MODEL = "fake-model"
TASK = "What do the notes say?"
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"
SYSTEM = "You answer questions about the notes folder. Call one tool a step; answer with final_answer."
"""The agent's system prompt: its default one is some 4 KB, written down again in every request."""


def templates() -> dict[str, Any]:
    """smolagents' own prompt templates for a ``ToolCallingAgent``, with a short system prompt."""
    found = importlib.resources.files("smolagents.prompts").joinpath("toolcalling_agent.yaml").read_text()
    loaded: dict[str, Any] = yaml.safe_load(found)
    return {**loaded, "system_prompt": SYSTEM}


@tool
def read_file(path: str) -> str:
    """Read a text file of the notes folder.

    Args:
        path: The file's path in the folder.
    """
    if path != "notes.txt":
        raise FileNotFoundError(MISSING.format(path))
    return "buy milk"


SCRIPTS: dict[str, tuple[int, list[Any]]] = {
    "recovers": (
        6,
        [
            Reply(calls=[("read_file", {"path": "nots.txt"})]),
            Reply(calls=[("read_file", {"pth": "notes.txt"})]),
            Reply(calls=[("serch", {"query": "notes"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply(calls=[("final_answer", {"answer": "The notes say: buy milk."})]),
        ],
    ),
    "step_limit": (
        2,
        [
            Reply(calls=[("read_file", {"path": "a.txt"})]),
            Reply(calls=[("read_file", {"path": "b.txt"})]),
            Reply("I could not read the notes."),
        ],
    ),
    "model_error": (
        6,
        [Reply(calls=[("read_file", {"path": "a.txt"})]), Fail(400, DOWN)],
    ),
}


@dataclass
class Run:
    """One run as smolagents made it: the requests its model received, each step's error (class
    name and text, ``None`` for a step that went well), and how it ended."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    errors: list[tuple[str, str] | None] = field(default_factory=list)
    output: Any = None
    state: str | None = None
    raised: str | None = None


def _run(name: str) -> Run:
    max_steps, script = SCRIPTS[name]
    run = Run(name)
    with FakeServer(script) as server:
        model = OpenAIServerModel(
            MODEL, api_base=server.openai_url, api_key="not-a-key", client_kwargs={"max_retries": 0}
        )
        agent = ToolCallingAgent(
            tools=[read_file],
            model=model,
            max_steps=max_steps,
            prompt_templates=templates(),  # type: ignore[arg-type]
            verbosity_level=-1,  # LogLevel.OFF: the steps are read from the trace, not the console
        )
        try:
            result = agent.run(TASK, return_full_result=True)
        except Exception as exc:  # the run raised: what smolagents does when the model fails
            run.raised = type(exc).__name__
        else:
            run.output, run.state = result.output, result.state
        run.requests = [r.body for r in server.requests]
    steps = [s for s in agent.memory.steps if type(s).__name__ == "ActionStep"]
    run.errors = [None if s.error is None else (type(s.error).__name__, str(s.error)) for s in steps]
    return run


def sample() -> Sample:
    """The three runs, traced into one provider (a trace each)."""
    return traced(20, [SmolagentsInstrumentor()], _run, SCRIPTS)


def main() -> None:
    write_golden(OUT, sample().spans)


if __name__ == "__main__":
    main()
