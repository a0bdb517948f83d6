"""Agno agents traced by OpenInference, and their golden::

    PYTHONPATH=. python tests/golden/foreign/make_agno.py

Real ``Agent`` runs on Agno's own ``OpenAIChat``, answered by the scripted OpenAI-compatible server
of ``tests/models/fakeserver.py`` on 127.0.0.1 (offline), traced by
``openinference-instrumentation-agno`` into the OTel SDK's ``InMemorySpanExporter``:

- ``recovers``: the tool raises, arguments that do not fit the tool, a tool the agent does not
  have, then a call that works and the answer;
- ``tool_call_limit``: ``tool_call_limit=1``: Agno answers the second call itself, and the model
  answers after;
- ``model_error``: the model's server answers 400 at the second request: Agno ends the run with
  status ``error`` (it does not raise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.models.openai import OpenAIChat
from openinference.instrumentation.agno import AgnoInstrumentor

from tests.golden.foreign.otlp_files import Sample, traced, write_golden
from tests.models.fakeserver import Fail, FakeServer, Reply

OUT = Path(__file__).resolve().parent / "otlp" / "agno.otlp.json"
MODEL = "fake-model"
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"


def read_file(path: str) -> str:
    """Read a text file of the notes folder.

    Args:
        path: The file's path in the folder.
    """
    if path != "notes.txt":
        raise FileNotFoundError(MISSING.format(path))
    return "buy milk"


SCRIPTS: dict[str, tuple[int | None, list[Any]]] = {
    "recovers": (
        None,
        [
            Reply(calls=[("read_file", {"path": "nots.txt"})]),
            Reply(calls=[("read_file", {"pth": "notes.txt"})]),
            Reply(calls=[("serch", {"query": "notes"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
    "tool_call_limit": (
        1,
        [
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
    "model_error": (None, [Reply(calls=[("read_file", {"path": "notes.txt"})]), Fail(400, DOWN)]),
}


@dataclass
class Run:
    """One run as Agno made it: the requests its model received, what it answered, its status."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None
    status: str | None = None


def _run(name: str) -> Run:
    limit, script = SCRIPTS[name]
    run = Run(name)
    with FakeServer(script) as server:
        model = OpenAIChat(id=MODEL, base_url=server.openai_url, api_key="not-a-key", max_retries=0)
        agent = Agent(
            model=model, tools=[read_file], instructions="Answer from the notes.", tool_call_limit=limit
        )
        result = agent.run(f"Read the notes ({name}).")
        run.output, run.status = str(result.content), str(result.status.value)
        run.requests = [r.body for r in server.requests]
    return run


def sample() -> Sample:
    """The runs, a trace each."""
    return traced(60, [AgnoInstrumentor()], _run, SCRIPTS)


def main() -> None:
    write_golden(OUT, sample().spans)


if __name__ == "__main__":
    main()
