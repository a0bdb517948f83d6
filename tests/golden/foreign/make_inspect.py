"""Regenerate the Inspect AI golden logs under ``tests/golden/foreign/inspect/``.

The same scripted task run twice on Inspect's ``mockllm`` model, offline: once written as an
``.eval`` log, once as a ``.json`` log of two of its samples (the same turns; ids and times
differ; the crash's tracebacks would triple the uncompressed file)::

    PYTHONPATH=. python tests/golden/foreign/make_inspect.py

``tests/foreign/test_inspect.py`` runs the same task with the real package and checks what the
goldens hold turn by turn, without the package. Each sample is one scripted conversation:

- ``recover``: a ``ToolError`` the model recovers from, two calls in one turn, an unknown tool,
  invalid arguments, a tool that times out, a call an approver rejects, then a final answer;
- ``crash``: a tool raises ``KeyError``: the sample ends with an error (hard);
- ``tokens``: the token limit is passed (hard);
- ``loop``: the model asks for the same file until the message limit ends the sample (hard).

Every output's ``usage`` is set: mockllm's default token count downloads a tokenizer.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "inspect"
MODEL = "mockllm/model"
SCRIPTED = "loopnb-scripted/model"
"""The model where mockllm cannot answer with a function (inspect-ai 0.3.100)."""
TOKEN_LIMIT = 5000
MESSAGE_LIMIT = 20
PROMPTS = {
    "recover": "Read the notes and tell me what they say.",
    "crash": "Read the notes, then explode.",
    "tokens": "Read the notes, slowly and at length.",
    "loop": "Read the notes, again and again.",
}
FILES = {"notes.txt": "the notes: ship on Friday", "todo.txt": "1. write the tests"}
JSON_SAMPLES: dict[str, list[str] | None] = {"eval": None, "json": ["recover", "tokens"]}
"""The samples of each golden: all of them in the ``.eval`` log."""
ENV = {"INSPECT_TELEMETRY": None, "INSPECT_API_KEY_OVERRIDE": None, "INSPECT_REQUIRED_HOOKS": None}
"""Inspect's opt-in hooks that could reach out, unset while the eval runs."""


@contextlib.contextmanager
def offline() -> Iterator[list[object]]:
    """No connection beyond loopback while the block runs; yields the addresses refused."""
    refused: list[object] = []
    connect, create, resolve = socket.socket.connect, socket.create_connection, socket.getaddrinfo

    def local(host: object) -> bool:
        return str(host) in ("127.0.0.1", "::1", "localhost") or str(host).startswith("/")

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if not local(host):
            refused.append(address)
            raise OSError(f"offline: connection to {address!r} refused")
        return connect(self, address)

    def guarded_create(address: Any, *args: Any, **kwargs: Any) -> Any:
        if not local(address[0]):
            refused.append(address)
            raise OSError(f"offline: connection to {address!r} refused")
        return create(address, *args, **kwargs)

    def guarded_resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not local(host):
            refused.append(host)
            raise OSError(f"offline: lookup of {host!r} refused")
        return resolve(host, *args, **kwargs)

    saved = {name: os.environ.get(name) for name in ENV}
    for name in ENV:
        os.environ.pop(name, None)
    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.create_connection = guarded_create  # type: ignore[assignment]
    socket.getaddrinfo = guarded_resolve  # type: ignore[assignment]
    try:
        yield refused
    finally:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.create_connection = create
        socket.getaddrinfo = resolve
        for name, value in saved.items():
            if value is not None:
                os.environ[name] = value


def _tools() -> list[Any]:
    from inspect_ai.tool import ToolError, tool

    @tool
    def read_file() -> Any:
        async def execute(path: str) -> str:
            """Read a text file.

            Args:
                path: The file's path.
            """
            if path not in FILES:
                raise ToolError(f"file {path} not found; did you mean notes.txt?")
            return FILES[path]

        return execute

    @tool
    def fetch() -> Any:
        async def execute(url: str) -> str:
            """Fetch a URL.

            Args:
                url: What to fetch.
            """
            raise TimeoutError(f"{url} did not answer")

        return execute

    @tool
    def delete_file() -> Any:
        async def execute(path: str) -> str:
            """Delete a file.

            Args:
                path: The file's path.
            """
            return f"deleted {path}"

        return execute

    @tool
    def explode() -> Any:
        async def execute(n: int) -> str:
            """Explode.

            Args:
                n: How hard.
            """
            return {"a": 1}["x" * n]

        return execute

    return [read_file(), fetch(), delete_file(), explode()]


def _output(calls: list[tuple[str, dict[str, Any]]], text: str, tokens: tuple[int, int], step: int) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.tool import ToolCall

    if not calls:
        out = ModelOutput.from_content(MODEL, text)
    else:
        name, args = calls[0]
        out = ModelOutput.for_tool_call(MODEL, name, args, tool_call_id=f"call_{step}_0", content=text)
        more = [
            ToolCall(id=f"call_{step}_{i}", function=n, arguments=a) for i, (n, a) in enumerate(calls) if i
        ]
        message = out.choices[0].message
        message.tool_calls = [*(message.tool_calls or []), *more]
    out.usage = ModelUsage(input_tokens=tokens[0], output_tokens=tokens[1], total_tokens=sum(tokens))
    return out


SCRIPTS: dict[str, list[tuple[list[tuple[str, dict[str, Any]]], str, tuple[int, int]]]] = {
    "recover": [
        ([("read_file", {"path": "nots.txt"})], "Reading the notes.", (120, 12)),
        (
            [("read_file", {"path": "notes.txt"}), ("read_file", {"path": "todo.txt"})],
            "Both files.",
            (160, 20),
        ),
        ([("serch", {"query": "notes"})], "Searching.", (200, 9)),
        ([("read_file", {"pth": 3})], "Again.", (230, 8)),
        ([("fetch", {"url": "https://example.com/notes"})], "Fetching.", (260, 10)),
        ([("delete_file", {"path": "notes.txt"})], "Cleaning up.", (290, 10)),
        ([], "The notes say: ship on Friday.", (320, 9)),
    ],
    "crash": [
        ([("read_file", {"path": "notes.txt"})], "Reading.", (100, 8)),
        ([("explode", {"n": 1})], "Now exploding.", (130, 7)),
        ([], "unreachable", (1, 1)),
    ],
    "tokens": [
        ([("read_file", {"path": "notes.txt"})], "Reading.", (3000, 40)),
        ([("read_file", {"path": "todo.txt"})], "Reading more.", (3100, 40)),
        ([], "unreachable", (1, 1)),
    ],
}


def scripted(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
    """mockllm's ``custom_outputs``: the next reply of the sample whose prompt opens ``input``
    (samples run concurrently, so the script is chosen by the conversation, not by order)."""
    prompt = next(m.text for m in input if m.role == "user")
    name = next(k for k, v in PROMPTS.items() if v == prompt)
    step = sum(1 for m in input if m.role == "assistant")
    if name == "loop":
        return _output([("read_file", {"path": "notes.txt"})], "Once more.", (50, 5), step)
    calls, text, tokens = SCRIPTS[name][step]
    return _output(calls, text, tokens, step)


def task() -> Any:
    """The scripted task: one sample per script, the tools offered, the limits set."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate, use_tools

    return Task(
        name="notes",
        dataset=[Sample(input=prompt, target="ship on Friday", id=name) for name, prompt in PROMPTS.items()],
        solver=[use_tools(*_tools()), generate()],
        token_limit=TOKEN_LIMIT,
        message_limit=MESSAGE_LIMIT,
    )


def model() -> Any:
    """Inspect's ``mockllm`` answering with ``scripted``; where mockllm takes no function (the
    oldest inspect-ai the project claims, 0.3.100, takes only an iterable of outputs, which cannot
    see the conversation), a model API of the tests' own that answers with ``scripted`` too."""
    from inspect_ai.model import ModelAPI, get_model, modelapi

    try:
        return get_model(MODEL, custom_outputs=scripted)
    except ValueError:  # its type check refused the function
        pass

    @modelapi(name=SCRIPTED.split("/")[0])
    def provider() -> type[ModelAPI]:
        class Scripted(ModelAPI):
            async def generate(self, input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
                return scripted(input, tools, tool_choice, config)

        return Scripted

    return get_model(SCRIPTED)


def run(log_dir: Path, log_format: str = "eval", samples: list[str] | None = None) -> Any:
    """Run the task (its ``samples``, default all) offline into ``log_dir``; returns the
    ``EvalLog`` and the addresses the eval tried to reach (none)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.approval import ApprovalPolicy, approver, auto_approver

    @approver(name="read_only")
    def read_only() -> Any:
        from inspect_ai.approval import Approval

        async def approve(message: Any, call: Any, view: Any, history: Any) -> Any:
            return Approval(
                decision="reject", explanation=f"{call.function} is blocked: the files are read-only"
            )

        return approve

    with offline() as refused:
        logs = inspect_eval(
            task(),
            model=model(),
            log_dir=str(log_dir),
            log_format=log_format,
            display="none",
            fail_on_error=False,
            approval=[ApprovalPolicy(read_only(), "delete_file"), ApprovalPolicy(auto_approver(), "*")],
            max_samples=1,
            sample_id=samples,
        )
    return logs[0], refused


def main() -> None:
    import shutil
    import tempfile

    ROOT.mkdir(parents=True, exist_ok=True)
    for log_format, samples in JSON_SAMPLES.items():
        with tempfile.TemporaryDirectory() as tmp:
            log, refused = run(Path(tmp), log_format, samples)
            if refused:
                sys.exit(f"the eval tried to reach the network: {refused}")
            shutil.copyfile(log.location, ROOT / f"notes.{log_format}")
    for path in sorted(ROOT.iterdir()):
        print(f"{path.relative_to(ROOT.parent)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
