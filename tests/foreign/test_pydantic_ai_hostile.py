"""Hostile pydantic-ai histories, built from the committed goldens: a value not of the shape
pydantic-ai writes is a ``RecordingError`` naming the message, the part and what was expected,
never a raw Python error (at load or at ``.turns``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopnb import RecordingError, load
from loopnb.engine._messages import Usage
from loopnb.foreign._pydantic_ai import from_pydantic_ai
from loopnb.foreign._transcript import RunWriter

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "pydantic-ai"
RECOVERED = GOLDEN / "recovered.json"
COUNT = "a count is a whole number from 0 to 2**63 - 1"
DEEP = 100_000

Edit = Callable[[list[dict[str, Any]]], None]


def _history() -> list[dict[str, Any]]:
    """``recovered.json``: message 1 the prompts, 2 the first response (with usage), 3 a retried
    return, 11 a successful one, 12 a text reply, 13 a retry-feedback."""
    history: list[dict[str, Any]] = json.loads(RECOVERED.read_text())
    return history


def _part(message: int, part: int, **fields: Any) -> Edit:
    return lambda h: h[message - 1]["parts"][part - 1].update(fields)


def _written(tmp_path: Path, edit: Edit, raw: str | None = None) -> Path:
    """The golden with ``edit`` made, saved; ``raw`` replaces the string ``"@raw@"`` with JSON
    text json.dumps cannot write (``1e400``)."""
    history = _history()
    edit(history)
    path = tmp_path / "hostile.json"
    text = json.dumps(history)
    path.write_text(text if raw is None else text.replace('"@raw@"', raw))
    return path


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        ('"12"', "'12'"),
        ('"many"', "'many'"),
        ('{"n": 1}', "{'n': 1}"),
        ("[1]", "[1]"),
        ("1e400", "inf"),
        ("2.5", "2.5"),
        ("true", "True"),
        ("-1", "-1"),
        (str(2**63), str(2**63)),
        (str(2**64), str(2**64)),
        (str(10**400), "an int of 1329 bits"),
    ],
    ids=[
        "numeric-string",
        "string",
        "object",
        "list",
        "1e400",
        "float",
        "bool",
        "negative",
        "2**63",
        "2**64",
        "huge",
    ],
)
@pytest.mark.parametrize("side", ["input_tokens", "output_tokens"])
def test_a_token_count_that_is_no_count_is_named(tmp_path, side, count, shown):
    path = _written(tmp_path, lambda h: h[1]["usage"].update({side: "@raw@"}), raw=count)
    expected = f'{path}: message 2: "usage.{side}": expected a number of tokens, found {shown}: {COUNT}'
    with pytest.raises(RecordingError, match=re.escape(expected)):
        load(path, errors="raise")


def test_the_largest_token_count_reads():
    history = _history()
    history[1]["usage"]["input_tokens"] = 2**63 - 1
    turns = from_pydantic_ai(history).turns
    assert turns["input_tokens"].iloc[0] == 2**63 - 1
    assert turns["input_tokens"].iloc[1:].tolist() == [77, 89, 120, 129, 131, 158]


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda h: h[1].update(usage=[64, 6]), "message 2", '"usage": expected an object, found list'),
        (_part(3, 1, retry="model_retry"), "message 3, part 1", '"retry": expected an object, found str'),
        (_part(3, 1, retry=[1, 3]), "message 3, part 1", '"retry": expected an object, found list'),
        (_part(13, 1, retry=7), "message 13, part 1", '"retry": expected an object, found int'),
        (
            _part(3, 1, retry={"cause": ["model_retry"]}),
            "message 3, part 1",
            '"retry.cause": expected a string, found list',
        ),
        (
            _part(3, 1, outcome={"kind": "retried"}),
            "message 3, part 1",
            '"outcome": expected a string, found dict',
        ),
        (_part(11, 1, outcome=["success"]), "message 11, part 1", '"outcome": expected a string, found list'),
        (
            _part(12, 1, content=["done"]),
            "message 12, part 1",
            '"content": expected a string (the text), found list',
        ),
        (
            _part(1, 1, content={"role": "system"}),
            "message 1, part 1",
            '"content": expected a string (the text), found dict',
        ),
    ],
    ids=[
        "usage-list",
        "retry-string",
        "retry-list",
        "feedback-retry-int",
        "retry-cause-list",
        "outcome-object",
        "outcome-list",
        "text-content-list",
        "system-prompt-object",
    ],
)
def test_a_part_not_of_pydantic_ais_shape_is_named(tmp_path, edit, where, what):
    path = _written(tmp_path, edit)
    with pytest.raises(RecordingError, match=re.escape(f"{path}: {where}: {what}")):
        load(path, errors="raise")
    with pytest.raises(RecordingError, match=re.escape(f"{where}: {what}")):  # the same in memory
        history = _history()
        edit(history)
        from_pydantic_ai(history, errors="raise")


def test_the_writer_refuses_a_token_count_no_frame_can_hold():
    """The check every reader shares: a reader that did not name the place first still gets a
    ``RecordingError`` (naming the run and turn), not a ``ValueError`` at ``.turns``."""
    turn = RunWriter("r1").turn()
    with pytest.raises(
        RecordingError,
        match=re.escape(
            f"run r1, turn 1: usage.output_tokens: expected a number of tokens, found {2**64}: {COUNT}"
        ),
    ):
        turn.reply("hi", usage=Usage(3, 2**64))


def _deep() -> str:
    return "[" * DEEP + "]" * DEEP


def test_a_history_nested_past_the_recursion_limit_is_named(tmp_path):
    path = _written(tmp_path, _part(11, 1, content="@raw@"), raw=_deep())
    expected = f"{path}: not a pydantic-ai history: its JSON is nested deeper than loopnb reads"
    with pytest.raises(RecordingError, match=re.escape(expected)):
        load(path, format="pydantic-ai")
    with pytest.raises(
        RecordingError, match=r"^not a pydantic-ai history: its JSON is nested deeper than loopnb reads"
    ):
        from_pydantic_ai(path.read_text())


def test_a_value_nested_past_the_recursion_limit_in_memory_is_named():
    nested: list[Any] = ["x"]
    for _ in range(DEEP):
        nested = [nested]
    history = _history()
    history[10]["parts"][0]["content"] = nested  # the return answering message 10's call
    with pytest.raises(
        RecordingError,
        match=r"^message 10: a value of the response or of the returns that answer it is nested deeper",
    ):
        from_pydantic_ai(history)


def test_arguments_nested_past_the_recursion_limit_are_kept_as_written():
    history = _history()
    history[1]["parts"][0]["args"] = _deep()
    rec = from_pydantic_ai(history)
    call = next(e for e in rec.event_objects if e.kind == "model_replied").reply.tool_calls[0]
    assert call.arguments == _deep()


@pytest.mark.parametrize(
    "data", [b"[" + b"1" * 5000 + b"]", b'[{"kind": "\xff"}]'], ids=["int-past-the-digit-limit", "not-utf8"]
)
def test_json_python_cannot_parse_is_named(tmp_path, data):
    path = tmp_path / "odd.json"
    path.write_bytes(data)
    with pytest.raises(
        RecordingError, match=re.escape(f"{path}: not a pydantic-ai history: unreadable JSON")
    ):
        load(path, format="pydantic-ai")
