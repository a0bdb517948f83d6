"""The turn timeline: scaled to the run, binned when long, a named y axis, hover labels off the marks."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from loopnb.notebook import ViewModel
from loopnb.notebook._state import TurnView
from loopnb.notebook._timeline import _BOTTOM, _TOP, _W, _X0, _X1, TIMELINE_MARKS, nice, timeline_svg
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events

MARK = re.compile(
    r'<(?:g|a) (?:href="[^"]*" )?class="loopnb-mark[^"]*"(?: data-turn="(\d+)")? data-channel="(\w+)"'
    r'(?: data-turns="(\d+)-(\d+)")?[^>]*><rect class="hit"[^>]*/>'
    r'<(circle|path|rect) class="m k-\w+" ([^>]*)/></(?:g|a)>'
    r'<text class="tip halo" x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)">([^<]*)</text>'
)


def centre(shape: str, attrs: str) -> tuple[float, float]:
    """Where a mark is drawn."""
    if shape == "circle":
        return float(re.search(r'cx="([\d.]+)"', attrs)[1]), float(re.search(r'cy="([\d.]+)"', attrs)[1])
    if shape == "rect":
        x, y, w = (float(re.search(rf'{k}="([\d.]+)"', attrs)[1]) for k in ("x", "y", "width"))
        return x + w / 2, y + w / 2
    x, y = re.search(r'd="M([\d.]+),([\d.]+)h([\d.]+)', attrs).groups()[:2]
    h = float(re.search(r"h([\d.]+)", attrs)[1])
    return float(x) + h / 2, float(y) - h / 2


def marks(svg: str) -> list[dict]:
    out = []
    for turn, channel, first, last, shape, attrs, tx, ty, anchor, tip in MARK.findall(svg):
        x, y = centre(shape, attrs)
        out.append(
            {"turn": int(turn) if turn else None, "channel": channel, "x": x, "y": y, "tip": tip,
             "tip_x": float(tx), "tip_y": float(ty), "anchor": anchor,
             "turns": (int(first), int(last)) if first else None}
        )  # fmt: skip
    return out


def ticks(svg: str) -> list[str]:
    return re.findall(
        rf'<text class="small" x="[\d.]+" y="{_BOTTOM + 15}" text-anchor="middle">([\d,]+)</text>', svg
    )


@pytest.fixture(scope="module")
def typo() -> tuple[TurnView, ...]:
    return ViewModel.fold(run_events(S.typo())[0]).turns


def test_a_three_turn_run_fills_the_pane(typo):
    svg = timeline_svg(typo, None)
    drawn = marks(svg)
    assert [m["turn"] for m in drawn] == [1, 2, 3] and ticks(svg) == ["1", "2", "3"]
    width = _X1 - _X0
    assert drawn[0]["x"] < _X0 + width / 5 and drawn[-1]["x"] > _X1 - width / 5  # not the left fifth
    assert "latency (ms)" in svg and ">turn</text>" in svg  # both axes named


def test_tick_steps_stay_about_ten():
    assert [nice(v) for v in (0, 0.3, 1, 3, 7, 12, 2000)] == [1, 0.5, 1, 5, 10, 20, 2000]


def long_run(typo: tuple[TurnView, ...], n: int) -> list[TurnView]:
    """``n`` turns made from one: every 50th soft, turn 12,345 hard, latencies 0..99 ms."""
    base = typo[1]
    turns = []
    for i in range(1, n + 1):
        channel = "hard" if i == 12_345 else "soft" if i % 50 == 0 else "ok"
        turns.append(dataclasses.replace(base, turn=i, channel=channel, latency_ms=float(i % 100)))
    return turns


def test_a_twenty_thousand_turn_run_is_binned_by_its_worst_channel(typo):
    turns = long_run(typo, 20_000)
    svg = timeline_svg(turns, None, selected=12_345)
    drawn = marks(svg)
    assert len(drawn) <= TIMELINE_MARKS and len(svg) < 120_000
    spans = [m["turns"] for m in drawn]
    assert spans[0][0] == 1 and spans[-1][1] == 20_000
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans))  # every turn, once
    per = spans[0][1]
    assert f"20,000 turns in marks of {per}, each its worst turn" in svg
    for m in drawn:
        first, last = m["turns"]
        hard = first <= 12_345 <= last
        soft = any(t % 50 == 0 for t in range(first, last + 1))
        assert m["channel"] == ("hard" if hard else "soft" if soft else "ok"), m
        softs = sum(t % 50 == 0 and t != 12_345 for t in range(first, last + 1))
        assert f": {last - first + 1 - softs - hard:,} ok, {softs:,} soft, {int(hard)} hard" in m["tip"]
        assert m["tip"].startswith(f"turns {first:,}–{last:,}")
    assert re.findall(r'class="loopnb-selected" data-turn="(\d+)"', svg) == ["12345"]
    later = [m for m in drawn if m["turns"][0] > 12_345]
    assert later and svg.count("loopnb-mark loopnb-later") == len(later)
    assert ticks(svg) == [f"{t:,}" for t in range(2_000, 20_001, 2_000)]


def test_hover_labels_stand_above_the_marks_inside_the_pane(typo):
    for n in (3, 40, 1_000):
        drawn = marks(timeline_svg(long_run(typo, n), "r"))
        assert drawn
        for m in drawn:
            assert m["tip_y"] < _TOP <= m["y"] - 2 and m["y"] <= _BOTTOM  # the label never covers a mark
            room = 3.4 * len(m["tip"])
            if m["anchor"] == "middle":
                assert m["tip_x"] - room >= 8 and m["tip_x"] + room <= _W - 8
            else:
                assert 8 <= m["tip_x"] <= _W - 8


def test_the_y_axis_is_the_turns_latency(typo):
    turns = long_run(typo, 100)  # turn i took i % 100 ms
    drawn = marks(timeline_svg(turns, None))
    by_turn = {m["turn"]: m for m in drawn}
    assert by_turn[99]["y"] < by_turn[50]["y"] < by_turn[1]["y"]  # slower is higher
    assert by_turn[100]["y"] > by_turn[1]["y"]  # 0 ms, on the axis
    assert "99.0 ms" in by_turn[99]["tip"]
    svg = timeline_svg(turns, None)
    assert re.findall(r'text-anchor="end">([\d,]+)</text>', svg)[:3] == ["0", "50", "100"]


def test_no_turn_yet():
    svg = timeline_svg((), None)
    assert "no turn finished" in svg and "loopnb-mark" not in svg
