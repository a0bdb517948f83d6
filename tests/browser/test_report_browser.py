"""The exported report in a real browser: Debian chromium driven by playwright, every request refused.

What only a browser can tell: the page draws with nothing fetched and no script, what the model
read is on screen as text in every row, hostile HTML stays inert text, a timeline mark's link
scrolls its row into view, and narrow cells hold one line. The page's picture goes to
``build/screenshots/report.png`` (ignored by git) for a person to look at.
"""

from __future__ import annotations

import pathlib

import pytest

from tests.browser._serve import SHOTS, assert_inert, offline

pytestmark = pytest.mark.browser


@pytest.fixture
def page(page):
    """The shared page, also collecting console errors (a static report logs none)."""
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    return page


def report(tmp_path: pathlib.Path, *scenarios) -> pathlib.Path:
    from loopnb.notebook import to_html
    from loopnb.record import Recorder
    from tests.notebook.conftest import run_events

    recorder = Recorder()
    for scenario in scenarios:
        scenario[0].subscribe(recorder)
        run_events(scenario)
    return to_html(recorder, tmp_path / "report.html")


def test_report_reads_offline_and_stays_inert(page, tmp_path):
    from playwright.sync_api import expect

    from tests.notebook import scenarios as S

    path = report(tmp_path, S.demo(), S.payload(), S.exhausted())
    refused = offline(page)
    page.goto(path.as_uri())
    runs = page.locator("section.loopnb-run")
    expect(runs).to_have_count(3)
    for i, turns in enumerate((8, 4, 1)):
        expect(runs.nth(i).locator("a.loopnb-mark")).to_have_count(turns)
        expect(runs.nth(i).locator("tr.loopnb-turn")).to_have_count(turns)
        expect(runs.nth(i).locator("svg.loopnb-flow")).to_be_visible()
    # what the model read, visible in its row without a click
    first = runs.nth(0).locator("tr.loopnb-turn").first
    expect(first.locator("pre.loopnb-read")).to_be_visible()
    expect(first.locator("pre.loopnb-read")).to_have_text("file src/mian.rs not found")
    expect(runs.nth(0).locator("tr.loopnb-turn").nth(1)).to_contain_text("fn main() {}")
    wall = runs.nth(2).locator("tr.loopnb-turn pre.loopnb-error")
    expect(wall).to_be_visible()
    expect(wall).not_to_be_empty()
    expect(runs.nth(2).locator(".loopnb-gauge")).to_contain_text("hit the wall")
    states = [s.strip() for s in runs.nth(0).locator(".loopnb-breaker-state").all_inner_texts()]
    assert states == ["closed", "closed", "open", "open", "closed"]
    # the hostile text is on the page, as text
    expect(runs.nth(1).locator(".loopnb-status")).to_contain_text("<img src=x onerror=")
    expect(runs.nth(1).locator("tr.loopnb-turn").first).to_contain_text("upstream said: <img src=x")
    # narrow cells hold one line: no "sof/t", no "tu/rn"
    page.set_viewport_size({"width": 760, "height": 1000})  # a squeezed table, e.g. half a screen
    heights = page.evaluate(
        "() => [...document.querySelectorAll('table.loopnb-turns th, tr.loopnb-turn td:nth-child(-n+3)')]"
        ".map(c => { const r = document.createRange(); r.selectNodeContents(c);"
        " return [c.innerText, r.getBoundingClientRect().height]; })"
    )
    assert len(heights) == 3 * 6 + 13 * 3
    for text, height in heights:
        assert height < 26, (text, height)  # one line: text, or a badge of 20 px
    page.set_viewport_size({"width": 1280, "height": 1000})
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "report.png"), full_page=True)
    assert_inert(page, "loopnb report")
    assert page.evaluate("document.scripts.length") == 0
    assert refused == [] and page.errors == []


def test_a_timeline_mark_scrolls_to_its_row(page, tmp_path):
    from playwright.sync_api import expect

    from tests.notebook import scenarios as S

    path = report(tmp_path, S.typo(), S.long_run(100))
    refused = offline(page)
    page.goto(path.as_uri())
    row = page.locator("#loopnb-r1-t81")
    assert page.evaluate("document.getElementById('loopnb-r1-t81').getBoundingClientRect().top") > 2000
    expect(row).not_to_be_in_viewport()
    page.locator('section#loopnb-r1 a.loopnb-mark[href="#loopnb-r1-t81"]').click()
    expect(row).to_be_in_viewport()
    assert page.evaluate("location.hash") == "#loopnb-r1-t81"
    top = page.evaluate("document.getElementById('loopnb-r1-t81').getBoundingClientRect().top")
    assert 0 <= top < 120, top  # at the top of the window, below the sticky table head
    expect(row.locator("td").first).to_have_text("81")
    expect(row.locator("pre.loopnb-read")).to_have_text("80")  # turn 81 echoed i = 80
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "report_row.png"))
    assert refused == [] and page.errors == []
