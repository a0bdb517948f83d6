"""CrewAI crews traced by OpenInference, and their golden::

    PYTHONPATH=. python tests/golden/foreign/make_crewai.py

Real ``Crew`` kickoffs of ``Agent``s on CrewAI's own ``LLM`` (its native OpenAI provider),
answered by the scripted OpenAI-compatible server of ``tests/models/fakeserver.py`` on 127.0.0.1
(offline), traced as OpenInference's CrewAI page says: ``openinference-instrumentation-crewai``
(the crew's kickoff, each agent's task, each tool) with ``openinference-instrumentation-openai``
for the model's requests (CrewAI's instrumentation records none), into the OTel SDK's
``InMemorySpanExporter``:

- ``recovers``: the tool raises, arguments that do not fit the tool, a tool the agent does not
  have, then a call that works and the answer;
- ``max_iter``: ``max_iter=2``: after two calls CrewAI asks the model for its final answer, with no
  tools offered;
- ``model_error``: the model's server answers 400 from the second request on: CrewAI tries the
  task again from the start (``max_retry_limit``, 2 by default), then the kickoff raises;
- ``two_agents``: a crew of two agents, a task each: one trace, the crew's kickoff around two
  agents' runs;
- ``usage_limit``: the tool's ``max_usage_count=1``: CrewAI answers the second call itself, and
  the model answers after.

CrewAI's own telemetry and tracing are turned off (they would send to CrewAI's servers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# before CrewAI is imported: its telemetry and tracing would send to its own servers
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool
from openinference.instrumentation.crewai import CrewAIInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor

from tests.golden.foreign.otlp_files import Sample, traced, write_golden
from tests.models.fakeserver import Fail, FakeServer, Reply

OUT = Path(__file__).resolve().parent / "otlp" / "crewai.otlp.json"
MODEL = "fake-model"
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"
TASK = "What do the notes say?"


def _read(path: str) -> str:
    """Read a text file of the notes folder."""
    if path != "notes.txt":
        raise FileNotFoundError(MISSING.format(path))
    return "buy milk"


read_file = tool("read_file")(_read)


SCRIPTS: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "recovers": (
        {},
        [
            Reply(calls=[("read_file", {"path": "nots.txt"})]),
            Reply(calls=[("read_file", {"pth": "notes.txt"})]),
            Reply(calls=[("serch", {"query": "notes"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
    "max_iter": (
        {"max_iter": 2},
        [
            Reply(calls=[("read_file", {"path": "a.txt"})]),
            Reply(calls=[("read_file", {"path": "b.txt"})]),
            Reply("I could not read the notes."),
        ],
    ),
    "model_error": ({}, [Reply(calls=[("read_file", {"path": "notes.txt"})]), *[Fail(400, DOWN)] * 3]),
    "two_agents": (
        {},
        [
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
            Reply("Reminder: buy milk."),
        ],
    ),
    "usage_limit": (
        {},
        [
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
}


@dataclass
class Run:
    """One crew's kickoff as CrewAI made it: the requests its model received, what it answered,
    what it raised."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None
    raised: str | None = None


def _crew(name: str, llm: LLM) -> Crew:
    options, _ = SCRIPTS[name]
    limited = name == "usage_limit"  # a tool of its own: CrewAI counts its uses on the tool
    reader = Agent(
        role="reader",
        goal="Answer from the notes",
        backstory="You read notes.",
        tools=[tool("read_file", max_usage_count=1)(_read) if limited else read_file],
        llm=llm,
        verbose=False,
        **options,
    )
    tasks = [Task(description=TASK, expected_output="the notes", agent=reader)]
    if name == "two_agents":
        writer = Agent(role="writer", goal="Write reminders", backstory="You write reminders.", llm=llm)
        tasks.append(
            Task(description="Write a reminder from the notes.", expected_output="a reminder", agent=writer)
        )
    return Crew(agents=[t.agent for t in tasks if t.agent is not None], tasks=tasks, verbose=False)


def _run(name: str) -> Run:
    run = Run(name)
    with FakeServer(SCRIPTS[name][1]) as server:
        llm = LLM(model=f"openai/{MODEL}", base_url=server.openai_url, api_key="not-a-key", max_retries=0)
        try:
            run.output = _crew(name, llm).kickoff().raw
        except Exception as exc:  # the kickoff raised: what CrewAI does when the model fails
            run.raised = type(exc).__name__
        run.requests = [r.body for r in server.requests]
    return run


def sample() -> Sample:
    """The crews' kickoffs, a trace each."""
    return traced(80, [CrewAIInstrumentor(), OpenAIInstrumentor()], _run, SCRIPTS)


def main() -> None:
    write_golden(OUT, sample().spans)


if __name__ == "__main__":
    main()
