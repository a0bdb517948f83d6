"""What a long ``Comparison`` shows stays bounded (issue 30, item 4): the page lists the rows around
the first divergence, the picture and the widget draw each timeline in at most ``TIMELINE_MARKS``
marks read from the turns frame, and an inspector folds one turn's events, not the run's; each of
those draws exactly what folding or drawing every turn drew."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopnb
from loopnb import scenarios
from loopnb.notebook import ViewModel
from loopnb.notebook._compare_page import PAGE_BEFORE, PAGE_ROWS, page_rows
from loopnb.notebook._compare_sides import SideView, frame_marks, frame_turn_views
from loopnb.notebook._compare_view import CompareView
from loopnb.notebook._markup import inspector_html
from loopnb.notebook._report import exported_events
from loopnb.notebook._timeline import TIMELINE_MARKS, marks_svg, timeline_svg
from loopnb.record import Recorder
from tests.record.test_compare_scale import turns_frame

N = 100_000
PAGE_KB = 3_000
"""The page of any comparison is under this: ``PAGE_ROWS`` rows of a few kilobytes, two timelines."""


def long_pair(n: int = N, at: int = N // 2) -> loopnb.Comparison:
    """Two ``n``-turn runs (turns frames) of one call a turn, every tenth soft; b calls another
    tool at row ``at + 1`` (where they first diverge) and then goes on as a does."""
    rows = [("read_file", "soft" if i % 10 == 9 else "ok", None, None, float(i % 7)) for i in range(n)]
    other = [*rows[:at], ("ls", "ok", None, None, 1.0), *rows[at : n - 1]]
    return loopnb.compare(turns_frame("a", rows), turns_frame("b", other))


@pytest.fixture(scope="module")
def long() -> loopnb.Comparison:
    return long_pair()


def test_the_page_of_a_long_comparison_lists_the_rows_around_its_divergence(
    long: loopnb.Comparison, tmp_path: Path
) -> None:
    assert long.divergence is not None and long.divergence.row == N // 2 + 1
    page = long.to_html(tmp_path / "c.html").read_text(encoding="utf-8")
    assert len(page.encode()) < PAGE_KB * 1024
    listed = [int(r) for r in re.findall(r'<tr class="loopnb-aligned" data-row="(\d+)"', page)]
    first = N // 2 + 1 - PAGE_BEFORE
    assert listed == list(range(first, first + PAGE_ROWS))
    assert f"rows {first:,}–{first + PAGE_ROWS - 1:,} of {N:,} are listed" in page
    assert f'data-row="{N // 2 + 1}" data-how="call"' in page
    for side in "ab":
        timeline = page.split(f'data-side="{side}"', 1)[1].split("</svg>", 1)[0]
        assert 0 < timeline.count('class="loopnb-mark"') <= TIMELINE_MARKS
        assert "diverges here" in timeline


def test_the_picture_the_widget_and_the_text_of_a_long_comparison_are_small(long: loopnb.Comparison) -> None:
    from loopnb.cli._compare_text import compare_lines

    assert len(long._repr_html_().encode()) < 200 * 1024
    assert len(compare_lines(long, width=100)) < 60
    view = CompareView(long)
    try:
        for row in (1, N // 2 + 1, N):
            view.select(row)
            values = [t.value for t in view.timelines] + [i.value for i in view.inspectors]
            assert sum(len(v) for v in values) < 200 * 1024
            assert f'data-row="{row}"' in view.caption.value
        view.select_turn(1, N - 1)
        assert view.slider.value == N - 1
    finally:
        view.close()


@pytest.mark.parametrize(
    ("n", "at", "expected"),
    [
        (PAGE_ROWS, 900, (0, PAGE_ROWS)),  # they fit: every row
        (5000, 50, (0, PAGE_ROWS)),  # near the start: from the first row
        (5000, 2000, (2000 - 1 - PAGE_BEFORE, 2000 - 1 - PAGE_BEFORE + PAGE_ROWS)),
        (5000, 4990, (5000 - PAGE_ROWS, 5000)),  # near the end: the last rows
    ],
)
def test_page_rows_hold_the_divergence(n: int, at: int, expected: tuple[int, int]) -> None:
    c = long_pair(n, at - 1)
    assert c.divergence is not None and c.divergence.row == at
    assert page_rows(c) == expected


def test_runs_that_agree_list_their_first_rows() -> None:
    rows = [("read_file", "ok", None, None, 1.0)] * (PAGE_ROWS + 5)
    c = loopnb.compare(turns_frame("a", rows), turns_frame("b", rows))
    assert c.divergence is None and page_rows(c) == (0, PAGE_ROWS)


a_turn = st.tuples(
    st.sampled_from([None, "read_file", "read_file, ls"]),
    st.sampled_from(["ok", "soft", "hard"]),
    st.sampled_from([None, "tool_error", "loop_detected"]),
    st.just(None),
    st.sampled_from([None, 0.0, 1.5, 12.25, 700.125]),
)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 700), st.data())
def test_marks_read_from_the_frame_draw_what_every_turns_view_draws(n: int, data: st.DataObject) -> None:
    turns = turns_frame("r", data.draw(st.lists(a_turn, min_size=n, max_size=n)))
    selected = data.draw(st.none() | st.integers(0, n + 1))
    marked = data.draw(st.none() | st.integers(0, n + 1))
    anchor = data.draw(st.sampled_from([None, "loopnb-a"]))
    drawn = marks_svg(frame_marks(turns, "r"), anchor, selected=selected, marked=marked)
    assert drawn == timeline_svg(frame_turn_views(turns, "r"), anchor, selected=selected, marked=marked)


def _recorded(names: list[str]) -> Recorder:
    rec = Recorder(redact=None)
    for name in names:
        scenarios.get(name).run(observers=[rec])
    return rec


@pytest.mark.parametrize(
    "name", ["recovery_ceiling", "stubborn_loop", "flaky_tool_breaker", "fallback_chain"]
)
@pytest.mark.parametrize("redacted", [False, True])
def test_an_inspector_folds_its_turn_alone_and_shows_what_the_whole_fold_showed(
    name: str, redacted: bool
) -> None:
    rec = _recorded([name])
    c = loopnb.compare(rec, rec)
    side = c.sides[0]
    redact: Any = str
    events = side.event_objects
    assert events is not None
    if redacted:
        from loopnb.record._redact import DEFAULT_REDACTOR

        redact, events = DEFAULT_REDACTOR, exported_events(events)
    whole = ViewModel.fold(events)
    view = SideView(side, redact)
    for t in side.turns["turn"].tolist():
        assert str(inspector_html(view.turn(t))) == str(inspector_html(whole.turn(t)))
    assert view.turn(len(side.turns) + 1) is None


def test_an_inspector_finds_its_turn_when_the_frame_is_not_the_events_one_for_one() -> None:
    rec = _recorded(["recovery_ceiling"])
    c = loopnb.compare(rec, rec)
    side = c.sides[0]
    frame = side.events
    assert frame is not None
    shuffled = type(side)(
        side.label, side.run_id, side.turns, frame.iloc[::-1].reset_index(drop=True), side.event_objects
    )
    whole = ViewModel.fold(side.event_objects or [])
    view = SideView(shuffled)
    for t in side.turns["turn"].tolist():
        assert str(inspector_html(view.turn(t))) == str(inspector_html(whole.turn(t)))


def test_drawing_a_comparison_folds_only_the_turns_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _recorded(["stubborn_loop"])
    c = loopnb.compare(rec, rec)
    folded: list[set[Any]] = []
    fold = ViewModel.fold

    def counting(events: Any) -> Any:
        events = list(events)
        folded.append({getattr(e, "turn", None) for e in events} - {None})
        return fold(events)

    monkeypatch.setattr(ViewModel, "fold", staticmethod(counting))
    c._repr_html_()
    assert folded and all(len(turns) == 1 for turns in folded)  # one turn at a time, never the run
    assert len(c.sides[0].turns) > 1
