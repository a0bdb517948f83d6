"""Regenerate the pydantic-ai goldens under ``tests/golden/foreign/pydantic-ai/``::

    PYTHONPATH=. python tests/golden/foreign/make_pydantic_ai.py

Each sample is a real pydantic-ai ``Agent`` run on ``FunctionModel`` (offline: a scripted list of
responses) with real tools, dumped as ``result.all_messages_json()`` does, or, for a run that
failed, as the messages ``capture_run_messages()`` held. ``normalised`` then replaces what changes
from one run to the next (the wall-clock timestamps, the uuid7 run and conversation ids) with
fixed values, in document order, so the files are the same every time. ``tests/foreign/
test_pydantic_ai_live.py`` builds the same samples and checks the reader on them unnormalised.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, ModelRetry, capture_run_messages

try:
    from pydantic_ai.exceptions import ToolFailed
except ImportError:  # before it (pydantic-ai-slim 1.0): only the ``recovered`` sample raises it
    ToolFailed = None  # type: ignore[assignment,misc]
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied

OUT = Path(__file__).resolve().parent / "pydantic-ai"
MODEL = "scripted-model"
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def scripted(responses: Sequence[ModelResponse]) -> FunctionModel:
    """A ``FunctionModel`` answering each request with the next of ``responses``."""
    steps: Iterator[ModelResponse] = iter(responses)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return next(steps)

    return FunctionModel(answer, model_name=MODEL)


def call(tool: str, args: dict[str, Any], call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])


def say(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def _notes_agent(responses: Sequence[ModelResponse], *, retries: int = 3) -> Agent[None, str]:
    agent = Agent(scripted(responses), system_prompt="You read files.", retries=retries)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        if path != "notes.txt":
            raise ModelRetry(f"file {path} not found; did you mean notes.txt?")
        return "the notes"

    @agent.tool_plain
    def write_file(path: str, text: str) -> str:
        """Write a file."""
        raise ToolFailed(f"disk full: cannot write {path}")

    @agent.tool_plain
    def delete(path: str) -> str:
        """Delete a file."""
        raise KeyError(path)

    return agent


def recovered() -> list[ModelMessage]:
    """Every soft error, then a final answer: a tool's ``ModelRetry``, an unknown tool, invalid
    arguments, a ``ToolFailed``, a rejected answer (an output validator's ``ModelRetry``)."""
    agent = _notes_agent(
        [
            call("read_file", {"path": "nots.txt"}, "c1"),
            call("serch", {"q": "notes"}, "c2"),
            call("read_file", {"pth": 3}, "c3"),
            call("write_file", {"path": "out.txt", "text": "x"}, "c4"),
            call("read_file", {"path": "notes.txt"}, "c5"),
            say("they say nothing"),
            say("The notes say: the notes."),
        ]
    )

    @agent.output_validator
    def quote(output: str) -> str:
        if "the notes" not in output:
            raise ModelRetry("quote the notes in your answer")
        return output

    return agent.run_sync("Read notes.txt and tell me what it says.").all_messages()


def crashed() -> list[ModelMessage]:
    """A soft error, then a tool's unexpected exception that ends the run (``KeyError``)."""
    agent = _notes_agent([call("read_file", {"path": "nots.txt"}, "c1"), call("delete", {"path": "a"}, "c2")])
    with capture_run_messages() as messages:
        try:
            agent.run_sync("Delete file a.")
        except KeyError:
            pass
        else:
            raise AssertionError("the delete tool should have crashed the run")
    return messages


def exhausted() -> list[ModelMessage]:
    """A tool retried until its budget is spent: pydantic-ai's ``UnexpectedModelBehavior``."""
    agent = _notes_agent(
        [call("read_file", {"path": "a.txt"}, "c1"), call("read_file", {"path": "b.txt"}, "c2")], retries=1
    )
    with capture_run_messages() as messages:
        try:
            agent.run_sync("Read a file.")
        except Exception as exc:
            if type(exc).__name__ != "UnexpectedModelBehavior":
                raise
    return messages


def resumed() -> list[ModelMessage]:
    """Three runs of one conversation: a crash (the next run marks the call ``interrupted``), a
    call that needs approval (the run ends with ``DeferredToolRequests``), and its denial."""
    agent = Agent(
        scripted(
            [
                call("delete", {"path": "a"}, "k1"),
                call("remove_all", {"root": "/"}, "k2"),
                say("I may not remove everything."),
            ]
        ),
        system_prompt="You tidy folders.",
        output_type=[str, DeferredToolRequests],
    )

    @agent.tool_plain
    def delete(path: str) -> str:
        """Delete a file."""
        raise KeyError(path)

    @agent.tool_plain(requires_approval=True)
    def remove_all(root: str) -> str:
        """Remove a tree."""
        return f"removed {root}"

    with capture_run_messages() as first, contextlib.suppress(KeyError):
        agent.run_sync("Delete file a.")
    paused = agent.run_sync("Then clear the disk.", message_history=first)
    denial = DeferredToolResults(approvals={"k2": ToolDenied("removing / is not allowed")})
    return agent.run_sync(message_history=paused.all_messages(), deferred_tool_results=denial).all_messages()


def legacy() -> list[ModelMessage]:
    """A history as pydantic-ai before ``RetryFeedbackPart`` wrote it: retries as ``retry-prompt``
    parts (built with the deprecated class, which still dumps in its own shape)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad_path = RetryPromptPart("file nots.txt not found", tool_name="read_file", tool_call_id="c1")
        bad_args = RetryPromptPart(
            [{"type": "missing", "loc": ("path",), "msg": "Field required", "input": {"pth": 3}}],
            tool_name="read_file",
            tool_call_id="c2",
        )
    return [
        ModelRequest(parts=[UserPromptPart("Read notes.txt.")]),
        call("read_file", {"path": "nots.txt"}, "c1"),
        ModelRequest(parts=[bad_path]),
        call("read_file", {"pth": 3}, "c2"),
        ModelRequest(parts=[bad_args]),
        say("I could not read it."),
    ]


SAMPLES: dict[str, Callable[[], list[ModelMessage]]] = {
    "recovered": recovered,
    "crashed": crashed,
    "exhausted": exhausted,
    "resumed": resumed,
    "legacy": legacy,
}


def dump(messages: list[ModelMessage]) -> bytes:
    """The history's JSON, as ``result.all_messages_json()`` writes it."""
    return ModelMessagesTypeAdapter.dump_json(messages)


def normalised(raw: bytes, name: str) -> bytes:
    """``raw`` with its timestamps a quarter second apart from ``START`` in document order, and
    its run and conversation ids ``<name>-run-<n>`` and ``<name>-conversation-<n>`` in order of
    first appearance (unique across the goldens, so ``load_many`` reads them side by side)."""
    data = json.loads(raw)
    ids: dict[str, str] = {}
    tick = iter(range(1_000_000))

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key == "timestamp" and isinstance(item, str):
                    at = START + timedelta(seconds=0.25 * next(tick))
                    out[key] = at.isoformat().replace("+00:00", "Z")
                elif key in ("run_id", "conversation_id") and isinstance(item, str):
                    prefix = f"{name}-run" if key == "run_id" else f"{name}-conversation"
                    n = sum(v.startswith(prefix) for v in ids.values()) + 1
                    out[key] = ids.setdefault(item, f"{prefix}-{n}")
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return json.dumps(walk(data), separators=(",", ":"), ensure_ascii=False).encode()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, build in SAMPLES.items():
        (OUT / f"{name}.json").write_bytes(normalised(dump(build()), name))
        print("wrote", OUT / f"{name}.json")


if __name__ == "__main__":
    main()
