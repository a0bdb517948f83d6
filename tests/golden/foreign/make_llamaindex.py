"""LlamaIndex agents (``FunctionAgent``) traced by OpenInference, and their golden::

    PYTHONPATH=. python tests/golden/foreign/make_llamaindex.py

Real ``FunctionAgent`` runs on llama-index-llms-openai's ``OpenAI``, answered by the scripted
OpenAI-compatible server of ``tests/models/fakeserver.py`` on 127.0.0.1 (offline, streamed as
LlamaIndex asks), traced by ``openinference-instrumentation-llama-index`` into the OTel SDK's
``InMemorySpanExporter``:

- ``recovers``: the tool raises, arguments that do not fit the tool, a tool the agent does not
  have, then a call that works and the answer;
- ``step_limit``: ``max_iterations=1`` ends the run (``WorkflowRuntimeError``);
- ``model_error``: the model's server answers 400 at the second request: the run raises.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

from tests.golden.foreign.otlp_files import Sample, traced, write_golden
from tests.models.fakeserver import Fail, FakeServer, Reply

OUT = Path(__file__).resolve().parent / "otlp" / "llamaindex.otlp.json"
MODEL = "gpt-4o-mini"  # a name LlamaIndex knows the context window of; the fake server answers
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"


def read_file(path: str) -> str:
    """Read a text file of the notes folder."""
    if path != "notes.txt":
        raise FileNotFoundError(MISSING.format(path))
    return "buy milk"


SCRIPTS: dict[str, tuple[int, list[Any]]] = {
    "recovers": (
        20,
        [
            Reply(calls=[("read_file", {"path": "nots.txt"})]),
            Reply(calls=[("read_file", {"pth": "notes.txt"})]),
            Reply(calls=[("serch", {"query": "notes"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
    "step_limit": (1, [Reply(calls=[("read_file", {"path": "notes.txt"})]), Reply("unreached")]),
    "model_error": (20, [Reply(calls=[("read_file", {"path": "notes.txt"})]), Fail(400, DOWN)]),
}


@dataclass
class Run:
    """One run as LlamaIndex made it: the requests its model received, what it answered, and what
    it raised."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None
    raised: str | None = None


async def _run(name: str) -> Run:
    limit, script = SCRIPTS[name]
    run = Run(name)
    with FakeServer(script) as server:
        llm = OpenAI(model=MODEL, api_base=server.openai_url, api_key="not-a-key", max_retries=0)
        agent = FunctionAgent(tools=[read_file], llm=llm, system_prompt="Answer from the notes.")
        try:
            run.output = str(await agent.run(f"Read the notes ({name}).", max_iterations=limit))
        except Exception as exc:  # the run raised: the limit, the model's error
            run.raised = type(exc).__name__
        run.requests = [r.body for r in server.requests]
    return run


def sample() -> Sample:
    """The runs, a trace each."""
    return traced(70, [LlamaIndexInstrumentor()], lambda name: asyncio.run(_run(name)), SCRIPTS)


def main() -> None:
    write_golden(OUT, sample().spans)


if __name__ == "__main__":
    main()
