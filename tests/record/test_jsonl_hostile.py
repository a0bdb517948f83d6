"""loopnb's own JSON Lines files with fields of a type no event has, or nesting past any event's depth:
each is a ``RecordingError`` naming the file and line, never a raw ``TypeError`` or ``RecursionError``
(found by the reader fuzz, ``tests/foreign/test_fuzz_goldens.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopnb import RecordingError, load

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def edited(src: Path, dst: Path, line: int, field: str, value: Any) -> Path:
    """``src`` with ``field`` of line ``line`` (1-based, the header is line 1) set to ``value``."""
    lines = src.read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[line - 1])
    event[field] = value
    lines[line - 1] = json.dumps(event)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


@pytest.mark.parametrize(
    ("golden", "line", "field", "value"),
    [
        ("v1/hard_context_exceeded.jsonl", 9, "run_id", []),
        ("v1/hard_loop_detected.jsonl", 11, "kind", {}),
        ("v1/ok_soft_then_ok.jsonl", 14, "turn", {}),
        ("v1/ok_soft_then_ok.jsonl", 15, "error", ["LoopDetected"]),
    ],
)
def test_a_version_1_field_of_the_wrong_type_names_its_line(
    tmp_path: Path, golden: str, line: int, field: str, value: Any
) -> None:
    path = edited(GOLDEN / golden, tmp_path / "run.jsonl", line, field, value)
    with pytest.raises(RecordingError) as info:
        load(path).turns  # noqa: B018  (building the frame is part of reading)
    assert info.value.path == str(path)
    assert info.value.line is not None and info.value.line >= 2


def test_nesting_past_any_events_depth_beside_a_lone_surrogate_names_its_line(tmp_path: Path) -> None:
    src = GOLDEN / "v2/hard_context_exceeded.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[13])
    deep = "[" * 5000 + "]" * 5000  # past Python 3.11's JSON recursion limit; 3.13's parses it
    text = json.dumps({**event, "producer": 0, "note": "\ud800"})  # an escaped surrogate: the json path
    lines[13] = text.replace('"producer": 0', f'"producer": {deep}')
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(RecordingError) as info:
        load(path)
    assert (info.value.path, info.value.line) == (str(path), 14)
