"""Runs whose models report their usage, under real model names, for the usage and cost tests.

These tests need genai-prices (the ``prices`` extra, in ``test``): they live outside the lanes'
``tests/engine`` and ``tests/record``, whose lanes install no price table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from loopnb import Engine, ModelReply, ScriptedModel, ToolCall, Usage, tool
from loopnb.record import Recorder


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def reply(tokens: tuple[int, int] | None, call: bool = True, text: str = "done") -> ModelReply:
    """A reply that calls ``lookup`` (or answers ``text``), reporting ``tokens`` (in, out)."""
    usage = None if tokens is None else Usage(*tokens)
    if call:
        return ModelReply(tool_calls=(ToolCall("lookup", {"key": "k"}),), usage=usage)
    return ModelReply(text=text, usage=usage)


def scripted(name: str, tokens: Sequence[tuple[int, int] | None], *, final: bool = True) -> ScriptedModel:
    """A model named ``name`` that calls a tool on each turn but the last (on every turn, without
    ``final``), reporting ``tokens``."""
    last = len(tokens) - 1 if final else len(tokens)
    return ScriptedModel([reply(t, call=i < last) for i, t in enumerate(tokens)], name=name)


def record(*runs: tuple[str, Any], clock: Any = None, recorder: Recorder | None = None) -> Recorder:
    """A Recorder of one run per ``(run_id, model)``, on ``clock`` (the system clock if None)."""
    rec = recorder if recorder is not None else Recorder()
    for run_id, model in runs:
        Engine(model, tools=[lookup], observers=[rec], clock=clock).run("look k up", run_id=run_id)
    return rec


@pytest.fixture(scope="session")
def golden_foreign() -> list[Path]:
    """Every recorded foreign run in tests/golden/foreign (not the scripts that made them)."""
    root = Path(__file__).parents[1] / "golden" / "foreign"
    files = sorted(p for p in root.glob("*/*") if p.suffix in {".json", ".jsonl", ".eval", ".sqlite", ".txt"})
    assert len(files) >= 15, files
    return files
