"""LangChain agents (``langchain.agents.create_agent``) traced by OpenInference, and their golden::

    PYTHONPATH=. python tests/golden/foreign/make_langchain.py

Real ``create_agent`` runs on langchain-openai's ``ChatOpenAI``, answered by the scripted
OpenAI-compatible server of ``tests/models/fakeserver.py`` on 127.0.0.1 (offline), traced by
``openinference-instrumentation-langchain`` into the OTel SDK's ``InMemorySpanExporter``. A tool's
exception ends a LangChain agent's run unless the tool handles it (``ToolException`` with
``handle_tool_error``), so:

- ``recovers``: the tool raises a ``ToolException`` it handles, arguments that do not fit the
  tool, a tool the agent does not have (both answered by LangGraph's ``ToolNode``), a call that
  works and the answer;
- ``step_limit``: ``recursion_limit=3`` ends the run (``GraphRecursionError``);
- ``model_error``: the model's server answers 400 at the second request: the run raises;
- ``tool_raises``: a tool raises a plain exception: the run raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import ToolException, tool
from langchain_openai import ChatOpenAI
from openinference.instrumentation.langchain import LangChainInstrumentor

from tests.golden.foreign.otlp_files import Sample, traced, write_golden
from tests.models.fakeserver import Fail, FakeServer, Reply

OUT = Path(__file__).resolve().parent / "otlp" / "langchain.otlp.json"
MODEL = "fake-model"
MISSING = "file {} not found; the folder holds notes.txt"
DOWN = "the model's server is down for maintenance"
CRASH = "the disk is on fire"


@tool
def read_file(path: str) -> str:
    """Read a text file of the notes folder."""
    if path != "notes.txt":
        raise ToolException(MISSING.format(path))
    return "buy milk"


read_file.handle_tool_error = True  # the model reads the ToolException's text


@tool
def delete(path: str) -> str:
    """Delete a file of the notes folder."""
    raise OSError(CRASH)


SCRIPTS: dict[str, tuple[int, list[Any]]] = {
    "recovers": (
        25,
        [
            Reply(calls=[("read_file", {"path": "nots.txt"})]),
            Reply(calls=[("read_file", {"pth": "notes.txt"})]),
            Reply(calls=[("serch", {"query": "notes"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply("The notes say: buy milk."),
        ],
    ),
    "step_limit": (
        3,
        [
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
            Reply(calls=[("read_file", {"path": "notes.txt"})]),
        ],
    ),
    "model_error": (25, [Reply(calls=[("read_file", {"path": "notes.txt"})]), Fail(400, DOWN)]),
    "tool_raises": (25, [Reply(calls=[("delete", {"path": "notes.txt"})]), Reply("unreached")]),
}


@dataclass
class Run:
    """One run as LangChain made it: the requests its model received, what it answered, and what
    it raised."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None
    raised: str | None = None


def _run(name: str) -> Run:
    limit, script = SCRIPTS[name]
    run = Run(name)
    with FakeServer(script) as server:
        model = ChatOpenAI(model=MODEL, base_url=server.openai_url, api_key="not-a-key", max_retries=0)
        agent = create_agent(model, tools=[read_file, delete], system_prompt="Answer from the notes.")
        try:
            result = agent.invoke(
                {"messages": [{"role": "user", "content": f"Read the notes ({name})."}]},
                config={"recursion_limit": limit},
            )
        except Exception as exc:  # the run raised: the limit, the model's error, a tool's
            run.raised = type(exc).__name__
        else:
            run.output = str(result["messages"][-1].content)
        run.requests = [r.body for r in server.requests]
    return run


def sample() -> Sample:
    """The runs, a trace each."""
    return traced(50, [LangChainInstrumentor()], _run, SCRIPTS)


def main() -> None:
    write_golden(OUT, sample().spans)


if __name__ == "__main__":
    main()
