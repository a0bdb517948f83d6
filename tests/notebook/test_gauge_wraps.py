"""The recovery gauge keeps its size when the loop detector's line is long: the line wraps at 64
characters, so the picture's viewBox (and with it the size its text is drawn at) grows at most to a
64-character line's, never to a 140-character line's (2.5 times the cells' width, text at 40%)."""

from __future__ import annotations

import re

from loopnb.notebook._state import Gauge
from loopnb.notebook._svg import gauge_svg


def view_box_width(svg: str) -> int:
    found = re.search(r'viewBox="0 0 (\d+) \d+"', svg)
    assert found, svg
    return int(found[1])


def test_a_140_character_line_wraps_instead_of_widening_the_picture() -> None:
    plain = gauge_svg(Gauge(), ["turn 3 · recovery", "read_file: failed (tool_error) · no retry needed"])
    long_line = "loop detector: 6 identical calls in a row, the run stopped (refuses from 4, stops at 6) " * 2
    wrapped = gauge_svg(Gauge(), ["turn 3 · recovery", long_line[:140]])
    assert view_box_width(str(plain)) <= view_box_width(str(wrapped)) <= 24 + 7 * 64 < 24 + 7 * 140
    rows = re.findall(r'<text x="12" y="\d+">([^<]*)</text>', str(wrapped))
    assert len(rows) == 4 and all(len(row) <= 64 for row in rows)
    assert " ".join(rows[1:]).startswith("loop detector: 6 identical calls in a row, the run stopped")
