"""Regenerate the golden recordings under ``tests/golden/v<format version>/``.

Run this only when deliberately changing the recording format: it writes the current version's
directory, and the older versions' files stay as they are (a new loader must still read them).
``tests/record/test_golden.py`` checks what the files hold, turn by turn::

    PYTHONPATH=. python tests/golden/make_goldens.py

Each recording is one run of the real ``Engine`` on a scripted model and a ``FakeClock``, with
a fixed run id: the same events every time (only the header's ``created_at`` differs). The
model takes 0.25 s of the fake clock per request, so turn latencies are exact and not zero.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopnb import (
    CircuitBreaker,
    ContextBudget,
    Engine,
    FakeClock,
    FunctionModel,
    LoopDetector,
    LoopError,
    Retry,
    Skip,
    ToolCall,
    ToolError,
    tool,
)
from loopnb.record import Recorder

ROOT = Path(__file__).resolve().parent
MODEL_SECONDS = 0.25


def slow_model(clock: FakeClock, steps: list[Any], name: str = "scripted") -> FunctionModel:
    """Replies with ``steps`` in order, each request taking ``MODEL_SECONDS`` on ``clock``."""
    script = iter(steps)

    def reply(messages: object, tools: object) -> Any:
        clock.advance(MODEL_SECONDS)
        return next(script)

    return FunctionModel(reply, name=name)


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    files = {"src/main.rs": "fn main() {}", "notes/big.txt": "lorem ipsum " * 40}
    if path not in files:
        raise ToolError(f"file {path} not found")
    return files[path]


def soft_then_ok(clock: FakeClock) -> Engine:
    """ok: a misspelt path (soft tool_error), the right one, the answer. 3 turns."""
    steps = [
        ToolCall("read_file", {"path": "src/mian.rs"}),
        ToolCall("read_file", {"path": "src/main.rs"}),
        "It prints nothing.",
    ]
    return Engine(slow_model(clock, steps), tools=[read_file], clock=clock)


def loop_detected(clock: FakeClock) -> Engine:
    """The same failing call 4 times, with a detector that warns after 2 and stops after 3 (kept
    short): 2 failures, 1 refusal, the 4th call stops the run."""
    steps = [ToolCall("read_file", {"path": "src/mian.rs"})] * 4
    detector = LoopDetector(warn_after=2, stop_after=3)
    return Engine(slow_model(clock, steps), tools=[read_file], loop_detector=detector, clock=clock)


class KeepRetryingParse:
    """Retries every failure of ``parse`` after 2 s, for ever; gives up on any other tool at once."""

    def decide(self, failure: Any, attempt: int, max_attempts: int) -> Any:
        if failure.call.name == "parse":
            return Retry(delay=2.0)
        return Skip(note="fetch is down; not retrying")

    def __repr__(self) -> str:
        return "KeepRetryingParse()"


def recovery_exhausted(clock: FakeClock) -> Engine:
    """fetch fails (Skip) and its breaker (threshold 1, cooldown 1.5 s) opens; parse fails once and
    recovers on a retry 2 s later; fetch, past the cooldown, half-opens and closes its breaker;
    parse of ``<html`` fails for ever and the 6th retry ends the run. 4 turns."""
    seen: set[str] = set()

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        if url not in seen:
            seen.add(url)
            raise ToolError(f"connection refused: {url}")
        return "<html>"

    @tool
    def parse(text: str) -> str:
        """Parse a page."""
        if text.startswith("<"):
            raise ToolError("unexpected end of input at 5")
        if text not in seen:
            seen.add(text)
            raise ToolError("parser busy")
        return "parsed"

    steps = [
        ToolCall("fetch", {"url": "https://a.test"}),
        ToolCall("parse", {"text": "plain"}),
        ToolCall("fetch", {"url": "https://a.test"}),
        ToolCall("parse", {"text": "<html"}),
    ]
    return Engine(
        slow_model(clock, steps),
        tools=[fetch, parse],
        recovery=KeepRetryingParse(),
        breakers={"fetch": CircuitBreaker(failure_threshold=1, cooldown=1.5)},
        clock=clock,
    )


def context_exceeded(clock: FakeClock) -> Engine:
    """A budget of 100 tokens: a soft miss, then a 480-character file; turn 3's request needs more
    than the budget even after compaction drops turn 1, and the run ends hard. 3 turns, all dropped."""
    steps = [
        ToolCall("read_file", {"path": "notes/a.txt"}),
        ToolCall("read_file", {"path": "notes/big.txt"}),
        "Never asked.",
    ]
    return Engine(
        slow_model(clock, steps), tools=[read_file], context=ContextBudget(max_tokens=100), clock=clock
    )


GOLDENS: dict[str, tuple[Callable[[FakeClock], Engine], str]] = {
    "ok_soft_then_ok": (soft_then_ok, "What does src/main.rs do?"),
    "hard_loop_detected": (loop_detected, "What does src/main.rs do?"),
    "hard_tool_recovery_exhausted": (recovery_exhausted, "Fetch and parse https://a.test."),
    "hard_context_exceeded": (context_exceeded, "Summarise the notes."),
}


def record(name: str, root: Path = ROOT) -> Path:
    """Run golden ``name`` and stream it to ``root/v<format version>/name.jsonl``; returns the path.

    The directory is named after the version the recorder wrote (read from the file's header), so
    regenerating after a format change adds ``v2/`` and leaves the older versions' files alone.
    """
    make, task = GOLDENS[name]
    with tempfile.TemporaryDirectory() as scratch:
        written = Path(scratch) / f"{name}.jsonl"
        with Recorder(written) as recorder:
            engine = make(FakeClock())
            engine.subscribe(recorder)
            with contextlib.suppress(LoopError):  # the hard runs end so on purpose
                engine.run(task, run_id=f"golden-{name}")
        with written.open("rb") as f:
            version = json.loads(f.readline())["version"]
        path = root / f"v{version}" / written.name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, path)
    return path


def main() -> None:
    for name in GOLDENS:
        path = record(name)
        print(f"{path}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
