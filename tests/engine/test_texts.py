"""The texts the model reads are worded in one module, ``loopnb.engine._texts``, and only there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from loopnb.engine import _texts as texts

PACKAGE = Path(texts.__file__).resolve().parents[1]

PHRASES = (
    "' is not available",
    "Tool not found",
    "panicked",
    "(unknown payload)",
    "timed out after",
    "circuit breaker open",
    "dispatch refused before execution",
    "blocked by policy",
    "vetoed by a hook",
    "invalid arguments for tool",
    "expected arguments:",
    "answer rejected",
    "did not pass the completion check",
    "loop detected:",
    "convergence detected",
    "the run reached max_turns",
)
"""Words of the texts the engine builds for the model (and the stops a recording is read back by)."""

READERS = {
    "engine/models/_corrections.py": "FallibleModel reads texts as a model does: a pattern per text",
    "engine/models/_fallible.py": "FallibleModel again: the words it routes around or retries on",
    "foreign/_openai_agents.py": "the OpenAI Agents SDK's own words ('Tool 'x' timed out after N seconds.')",
    "foreign/_agents_spans.py": "the OpenAI Agents SDK's own words on a turn span ('Tool not found')",
}
"""Modules that match other words against a text, and why: they read texts, they do not build them."""


def _literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a module (f-strings' literal parts too), docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_module_but_texts_words_what_the_model_reads():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in ("engine/_texts.py", *READERS) or where.startswith("scenarios/"):
            continue  # scenarios quote the texts in what they teach, in prose
        for line, value in _literals(path):
            found += [f"{where}:{line}: {phrase!r}" for phrase in PHRASES if phrase in value]
    assert not found, "texts the model reads belong in loopnb/engine/_texts.py:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (texts.not_available_text("open_file"), "tool 'open_file' is not available"),
        (texts.panic_text("x", RuntimeError("disk on fire")), 'Tool "x" panicked: disk on fire'),
        (texts.panic_text("x", ValueError(42)), 'Tool "x" panicked: (unknown payload)'),
        (texts.timeout_text("slow", 0.3), "Tool 'slow' timed out after 0.3s"),
        (texts.timeout_text("slow", 5.0), "Tool 'slow' timed out after 5s"),
        (texts.BREAKER_OPEN_TEXT, "tool temporarily unavailable: circuit breaker open"),
        (texts.refusal_text("loop detected: ..."), "dispatch refused before execution: loop detected: ..."),
        (texts.veto_text("no writes on Fridays"), "blocked by policy: no writes on Fridays"),
        (texts.rejection_text("too short"), "answer rejected: too short"),
        (texts.max_turns_text(3), "the run reached max_turns=3 without a final reply"),
    ],
)
def test_each_builder_gives_the_specifications_words(text, expected):
    assert text == expected


def test_what_the_recording_layer_reads_back_is_how_the_engine_words_it():
    assert texts.panic_text("t", RuntimeError("m")) == texts.panic_prefix("t") + "m"
    assert texts.panic_text("t", KeyError()) == texts.panic_prefix("t") + texts.UNKNOWN_PAYLOAD
    assert texts.veto_text("r").removeprefix(texts.VETO) == "r"
    assert texts.rejection_text("r").removeprefix(texts.REJECTED) == "r"
    assert texts.convergence_text(3, 0.97, 0.9).startswith(texts.CONVERGED)
    assert texts.max_turns_text(2).startswith(texts.MAX_TURNS_REACHED)
    assert texts.invalid_arguments_header("add") == "invalid arguments for tool 'add':"
