"""A ``Comparison`` in a notebook, without a browser: the widget's panes read back from their HTML
values, its static picture, the standalone page, and hostile text at every one of those sinks."""

from __future__ import annotations

import contextlib
import html
import re
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb import Engine, FakeClock, LoopError, ScriptedModel, ToolCall, ToolError, scenarios, tool
from loopnb._palette import ACCENT, IDLE, INK, ON_ACCENT, PALE, PALETTE
from loopnb.notebook._compare_html import rows_html
from loopnb.notebook._compare_view import CompareView
from loopnb.notebook._layout import CODE_FONT, FALLBACK
from loopnb.record import Recorder, RecordingError
from tests.notebook.test_escaping_sinks import HOSTILE, PIECES, VISIBLE, assert_inert
from tests.notebook.test_theme import AA, THEMES, Texts

TYPO = ToolCall("read_file", {"path": "src/mian.rs"})
RIGHT = ToolCall("read_file", {"path": "src/main.rs"})
SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


@tool(name="read_file")
def read_file_hostile(path: str) -> str:
    """Fails with hostile text and a secret."""
    if path != "src/main.rs":
        raise ToolError(f"{HOSTILE} key={SECRET}")
    return "fn main() {}"


def record(steps: list[Any], run_id: str, tools: Any = (read_file,)) -> Recorder:
    rec = Recorder(redact=None)
    engine = Engine(ScriptedModel(steps), list(tools), clock=FakeClock())
    engine.subscribe(rec)
    with contextlib.suppress(LoopError):
        engine.run("What does src/main.rs do?", run_id=run_id)
    return rec


@pytest.fixture
def retried() -> loopnb.Comparison:
    """a retries a misspelt path once; b gets it right at once: row 1 is a's turn alone."""
    return loopnb.compare(
        record([TYPO, RIGHT, "done"], "a"), record([RIGHT, "done"], "b"), labels=("before", "after")
    )


def _rule(svg: str) -> float | None:
    """The x of the timeline's divergence rule, if drawn."""
    found = re.search(r'<g class="loopnb-diverge"><line x1="([\d.]+)"', svg)
    return float(found[1]) if found else None


def _mark_x(svg: str, turn: int) -> float:
    mark = re.search(
        rf'data-turn="{turn}" data-channel="\w+"[^>]*><rect class="hit" x="([\d.]+)" [^>]*width="([\d.]+)"',
        svg,
    )
    assert mark, svg
    return float(mark[1]) + float(mark[2]) / 2


def _ringed(svg: str) -> list[int]:
    return [int(t) for t in re.findall(r'class="loopnb-selected" data-turn="(\d+)"', svg)]


def test_the_view_opens_on_the_divergence(retried: loopnb.Comparison) -> None:
    view = CompareView(retried)
    assert view.slider.value == 1 and (view.slider.min, view.slider.max) == (1, 3)
    ta, tb = (t.value for t in view.timelines)
    # the rule stands on a's turn 1, and on b's next turn (its turn 1, on row 2)
    assert _rule(ta) == pytest.approx(_mark_x(ta, 1), abs=0.2)
    assert _rule(tb) == pytest.approx(_mark_x(tb, 1), abs=0.2)
    assert _ringed(ta) == [1] and _ringed(tb) == []
    a, b = (i.value for i in view.inspectors)
    assert "<b>turn 1</b>" in a and "file src/mian.rs not found" in a and "the model asked for" in a
    assert "no turn on row 1: the other run made a turn this one did not" in b
    assert 'data-row="1"' in view.caption.value and "differs: <b>call</b>" in view.caption.value
    head = view.header.value
    assert 'data-turn="1" data-how="call"' in head and "before made a turn after did not" in head


def test_the_slider_moves_both_inspectors_and_rings(retried: loopnb.Comparison) -> None:
    view = CompareView(retried)
    view.slider.value = 2
    ta, tb = (t.value for t in view.timelines)
    assert _ringed(ta) == [2] and _ringed(tb) == [1]
    a, b = (i.value for i in view.inspectors)
    assert "<b>turn 2</b>" in a and "<b>turn 1</b>" in b
    assert "the same" in view.caption.value
    view.select(99)  # clamped to the last row
    assert view.slider.value == 3 and _ringed(view.timelines[1].value) == [2]


def test_a_click_on_a_timeline_mark_selects_its_row(retried: loopnb.Comparison) -> None:
    view = CompareView(retried)
    view.pages[1]._on_msg(view.pages[1], {"select": 2}, [])  # b's turn 2 is on row 3
    assert view.slider.value == 3
    view.pages[0]._on_msg(view.pages[0], {"select": 1}, [])
    assert view.slider.value == 1
    view.select_turn(1, 7)  # a turn b never made: nothing moves
    assert view.slider.value == 1
    view.close()


def test_totals_and_flows_panes_show_their_frames(retried: loopnb.Comparison) -> None:
    view = CompareView(retried)
    totals = view.totals.value
    assert re.search(r'data-figure="soft" data-differs[^>]*>.*?>1</td>.*?>0</td>', totals)
    assert re.search(r'data-figure="breaker_trips" style="">', totals)  # equal: not bold
    flows = retried.flows()
    for edge, diff in zip(flows["edge"], flows["difference"], strict=True):
        assert f'data-edge="{edge}" data-difference="{int(diff)}"' in view.flows.value
    assert 'data-edge="next-ok" data-difference="-1"' in view.flows.value


def test_identical_runs_say_they_agree() -> None:
    steps = [TYPO, RIGHT, "done"]
    view = CompareView(loopnb.compare(record(steps, "a"), record(steps, "b")))
    assert "agree on every turn" in view.header.value
    assert all(_rule(t.value) is None for t in view.timelines)
    assert view.slider.value == 1


def test_a_side_without_events_draws_from_the_turns_frame(retried: loopnb.Comparison) -> None:
    a = record([TYPO, RIGHT, "done"], "a")
    c = loopnb.compare(a.turns, record([RIGHT, "done"], "b"))
    view = CompareView(c)
    ta = view.timelines[0].value
    assert re.findall(r'data-turn="(\d+)" data-channel="(\w+)"', ta)[:3] == [
        ("1", "soft"),
        ("2", "ok"),
        ("3", "ok"),
    ]
    a_inspector = view.inspectors[0].value
    assert "from the turns frame" in a_inspector and "file src/mian.rs not found" in a_inspector
    assert "counted turn by turn" in view.totals.value


def test_the_mimebundle_carries_the_widget_and_a_static_picture(retried: loopnb.Comparison) -> None:
    bundle = retried._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    picture = bundle["text/html"]
    assert picture == retried._repr_html_()
    page = assert_inert(picture, "static picture")
    assert "loopnb-diverge" in picture and "aligned turns" in page.shown and "decision flows" in page.shown


def test_to_html_writes_an_offline_page_and_never_over_a_recording(
    retried: loopnb.Comparison, tmp_path: Path
) -> None:
    out = retried.to_html(tmp_path / "compare.html")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in text
    assert "<script" not in text and "loopnb compare: before vs after" in text
    assert 'href="#loopnb-a-t1"' in text and 'id="loopnb-a-t1"' in text  # a mark links to its row
    rec = tmp_path / "run.jsonl"
    record([RIGHT, "done"], "c").save(rec)
    with pytest.raises(RecordingError, match="is a loopnb recording"):
        retried.to_html(rec)
    assert loopnb.load(rec).turns["turn"].tolist() == [1, 2]


def test_hostile_text_is_inert_everywhere_and_the_page_redacts(tmp_path: Path) -> None:
    a = record([TYPO, RIGHT, "done"], HOSTILE, tools=(read_file_hostile,))
    b = record([ToolCall("read_file", {"path": HOSTILE}), RIGHT, "done"], "b")
    c = loopnb.compare(a, b, labels=(HOSTILE, "b"))
    view = CompareView(c)
    sinks = {
        "header": view.header.value,
        "caption": view.caption.value,
        "totals": view.totals.value,
        **{f"timeline {k}": t.value for k, t in enumerate(view.timelines)},
        **{f"inspector {k}": i.value for k, i in enumerate(view.inspectors)},
        "picture": c._repr_html_(),
    }
    for where, markup in sinks.items():
        assert_inert(markup, where)
    shown = html.unescape(sinks["inspector 0"])
    assert VISIBLE in shown and SECRET not in shown and "key=[REDACTED]" in shown  # a notebook may save it
    assert SECRET in c.turns["error_text_a"].dropna().iloc[0]  # the frame keeps what the model read
    page_text = c.to_html(tmp_path / "c.html").read_text(encoding="utf-8")
    page = assert_inert(page_text, "page")
    assert SECRET not in page_text and "[REDACTED]" in page.shown
    assert HOSTILE.split(" ")[0] in page.shown  # the hostile text is there, to read


def _panes_html(c: loopnb.Comparison) -> list[str]:
    view = CompareView(c)
    out = [view.header.value, view.totals.value, view.flows.value]
    for row in range(1, len(c.turns) + 1):
        view.select(row)
        out += [view.caption.value, *(i.value for i in view.inspectors)]
    out.append(rows_html(c, c.turns))
    return out


@pytest.mark.parametrize("theme", THEMES)
def test_every_pane_reads_in_every_theme_and_takes_the_palette(
    retried: loopnb.Comparison, theme: str
) -> None:
    frame_only = loopnb.compare(record([TYPO, RIGHT, "done"], "a").turns, record([RIGHT, "done"], "b"))
    panes = _panes_html(retried) + _panes_html(frame_only)
    values = THEMES[theme]
    worst = []
    for page in ("layout-color0", "layout-color1"):
        for markup in panes:
            walk = Texts(values, values.get(page, FALLBACK[page]))
            walk.feed(markup)
            walk.close()
            assert len(walk.stack) == 1, "unbalanced markup"
            worst += [(ratio, text) for text, ratio in walk.texts]
    assert len(worst) > 200
    assert min(worst)[0] >= AA, sorted(worst)[:5]
    allowed = {c.lower() for c in (*PALETTE.values(), *PALE.values(), INK, ACCENT, ON_ACCENT, IDLE)}
    for markup in panes:
        for colour in re.findall(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b", re.sub(r"var\([^)]*\)", "", markup)):
            assert colour.lower() in allowed, colour
        for tag in re.findall(r"<(?:pre|code)\b[^>]*>", markup):
            assert f"font-family:{CODE_FONT}" in tag, tag


# -- a what-if's findings -------------------------------------------------------------------------

TIGHT = loopnb.LoopDetector(warn_after=2, stop_after=2)


def stubborn_run() -> Recorder:
    """The stubborn loop under the default detector: 3 tool errors, 2 refusals, hard on turn 6."""
    rec = Recorder(redact=None)
    scenarios.get("stubborn_loop").run(observers=[rec], clock=FakeClock())
    return rec


def _what_if_panes(markup: str) -> list[str]:
    return re.findall(r'<div class="loopnb-what-if"[^>]*><pre[^>]*>(.*?)</pre></div>', markup, re.S)


def test_a_what_if_shows_its_findings_once_in_the_widget_the_picture_and_the_page(tmp_path: Path) -> None:
    c = loopnb.what_if(stubborn_run(), loop_detector=TIGHT)
    findings = c.what_if.text()
    assert "turn 3: soft (tool_error) -> hard (loop_detected)" in findings and "saves 3 turns" in findings
    view = CompareView(c)
    children = list(view.widget.children)
    assert children.index(view.what_if) == children.index(view.header) + 1  # under the headline
    assert [html.unescape(p) for p in _what_if_panes(view.what_if.value)] == [findings]
    bundle = c._repr_mimebundle_()
    assert [html.unescape(p) for p in _what_if_panes(bundle["text/html"])] == [findings]  # once
    assert bundle["text/html"] == c._repr_html_()
    page = c.to_html(tmp_path / "what-if.html").read_text(encoding="utf-8")
    assert [html.unescape(p) for p in _what_if_panes(page)] == [findings]
    assert page.index('class="loopnb-what-if"') < page.index('class="loopnb-totals"')
    view.close()


def test_a_comparison_of_two_runs_has_no_what_if_pane(tmp_path: Path) -> None:
    tight = Recorder(redact=None)
    scenarios.get("stubborn_loop").run(observers=[tight], clock=FakeClock(), loop_detector=TIGHT)
    c = loopnb.compare(stubborn_run(), tight)
    assert c.first_divergence == 3  # the same runs as the what-if's, so only its findings are missing
    view = CompareView(c)
    assert view.what_if.value == "" and view.what_if not in view.widget.children
    assert "loopnb-what-if" not in c._repr_html_()
    assert "loopnb-what-if" not in c.to_html(tmp_path / "compare.html").read_text(encoding="utf-8")
    unchanged = loopnb.what_if(stubborn_run())  # a what-if that changes nothing still says so
    assert "the run goes as recorded" in html.unescape(CompareView(unchanged).what_if.value)


def test_the_what_if_findings_are_escaped_everywhere_and_redacted_in_the_page(tmp_path: Path) -> None:
    answer = f"{HOSTILE} key={SECRET}"
    c = loopnb.what_if(stubborn_run(), tools={"read_file": answer})
    assert c.what_if.turn == 1 and answer in c.what_if.read_now
    view = CompareView(c)
    seen = " ".join(PIECES[:5])  # the one-line read is cut at 160 characters
    for where, markup in {"widget": view.what_if.value, "picture": c._repr_html_()}.items():
        page = assert_inert(markup, where)
        assert f"read now:  read_file -> ok: {seen}" in page.shown, where  # as text, every piece
        assert SECRET not in page.shown and "[REDACTED]" in page.shown, where  # a notebook may save it
    assert SECRET in c.what_if.text()  # in memory the findings are what the model read
    text = c.to_html(tmp_path / "c.html").read_text(encoding="utf-8")
    page = assert_inert(text, "page")
    (pane,) = _what_if_panes(text)
    assert SECRET not in text and "[REDACTED]" in html.unescape(pane)
    assert "read now:  read_file -&gt; ok:" in pane


@pytest.mark.parametrize("theme", THEMES)
def test_the_what_if_pane_reads_in_every_theme(theme: str) -> None:
    markup = CompareView(loopnb.what_if(stubborn_run(), loop_detector=None)).what_if.value
    values = THEMES[theme]
    for background in ("layout-color0", "layout-color1"):
        walk = Texts(values, values.get(background, FALLBACK[background]))
        walk.feed(markup)
        walk.close()
        assert len(walk.stack) == 1, "unbalanced markup"
        assert walk.texts and min(ratio for _, ratio in walk.texts) >= AA, walk.texts
    for tag in re.findall(r"<(?:pre|code)\b[^>]*>", markup):
        assert f"font-family:{CODE_FONT}" in tag, tag
