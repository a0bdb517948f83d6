"""The detectors' vocabulary is written once, in the engine, and every layer takes it from there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import loopnb
from loopnb.engine._events import DetectorAction, DetectorName
from loopnb.record._schema import EVENTS

PACKAGE = Path(loopnb.__file__).resolve().parent


def _spelled_out(values: tuple[str, ...]) -> list[str]:
    """Where the package writes ``values`` out as a sequence of string literals, in order."""
    pattern = re.compile(r",\s*".join(f'"{v}"' for v in values))
    return [
        f"{path.relative_to(PACKAGE)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for text in [path.read_text(encoding="utf-8")]
        for m in pattern.finditer(text)
    ]


def test_the_detector_names_and_actions_are_written_once():
    assert get_args(DetectorName) == ("loop", "convergence", "max_turns")
    for vocabulary in (DetectorName, DetectorAction):
        places = _spelled_out(get_args(vocabulary))
        assert [p.partition(":")[0] for p in places] == ["engine/_events.py"], places


def test_the_events_frame_takes_its_categories_from_the_engine():
    dtypes = {c.name: c.dtype for c in EVENTS.columns}
    assert dtypes["detector"] == ("category", get_args(DetectorName))
    assert dtypes["action"] == ("category", get_args(DetectorAction))
