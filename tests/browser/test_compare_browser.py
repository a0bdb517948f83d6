"""The Comparison widget in JupyterLab 4: two runs of the stubborn loop, moved along by the slider.

A two-cell notebook shows ``compare(default, tight)``: the stubborn loop under the default loop
detector and under a tight one (``warn_after=1, stop_after=2``), on a ``FakeClock``. Moving the
row slider, by its keys and by its readout, must show the selected row's turns in both
inspectors (their numbers, channels and the texts the model read, taken from
``Comparison.turns`` of the same runs made here, not from the widget) or say why a side has no
turn there, ring those turns on both timelines, and keep the divergence drawn on both. Picture:
``build/screenshots/compare.png``; with ``LOOPNB_UPDATE_SCREENSHOT=1`` also ``docs/compare.png``.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from tests.browser._serve import DOCS, SETTINGS, SHOTS, TOKEN, free_port, offline, require, server, shoot
from tests.browser.test_lab_browser import Lab

pytestmark = pytest.mark.browser

CELLS = [
    "import sys\nsys.path.insert(0, {repo!r})\n"
    "from loopnb import FakeClock, LoopDetector, Recorder, compare, scenarios",
    "stubborn = scenarios.get('stubborn_loop')\n"
    "default, tight = Recorder(), Recorder()\n"
    "stubborn.run(observers=[default], clock=FakeClock())\n"
    "tighter = LoopDetector(warn_after=1, stop_after=2)\n"
    "stubborn.run(observers=[tight], clock=FakeClock(), loop_detector=tighter)\n"
    "compare(default, tight, labels=('default', 'tight'))",
]
"""The served notebook: the runs of ``expected()``, the comparison shown as the cell's value."""


def expected():
    """The comparison the notebook shows, made here from the same two runs."""
    from loopnb import FakeClock, LoopDetector, Recorder, compare, scenarios

    stubborn = scenarios.get("stubborn_loop")
    default, tight = Recorder(), Recorder()
    stubborn.run(observers=[default], clock=FakeClock())
    stubborn.run(observers=[tight], clock=FakeClock(), loop_detector=LoopDetector(warn_after=1, stop_after=2))
    return compare(default, tight, labels=("default", "tight"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server of this module's own (as ``test_lab_browser``'s: 127.0.0.1, a temp root)."""
    jupyter = require("jupyter-lab")
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    served = Lab(root, tmp / "settings", free_port())
    for name, value in SETTINGS.items():
        served.setting(name, value)
    cmd = [
        jupyter, "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={served.port}",
        f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={tmp / 'settings'}", f"--LabApp.workspaces_dir={tmp / 'ws'}",
    ]  # fmt: skip
    with server(cmd, f"http://127.0.0.1:{served.port}/api/status?token={TOKEN}", tmp / "lab.log"):
        yield served


def _value(value: object) -> object:
    return None if value is None or value != value or str(value) == "<NA>" else value


def assert_row(view, rows: list[dict[str, object]], row: int) -> None:
    """Row ``row`` is selected: the slider and caption say so, each inspector shows its side's
    turn there (or why it has none), each timeline rings that turn, the divergence stays marked."""
    from playwright.sync_api import expect

    r = rows[row - 1]
    expect(view.locator(".noUi-handle")).to_have_attribute("aria-valuenow", re.compile(rf"^{row}(\.0+)?$"))
    expect(view.locator(".widget-readout")).to_have_text(str(row))
    expect(view.locator(".loopnb-row-caption")).to_have_attribute("data-row", str(row))
    for side in "ab":
        turn, text = _value(r[f"turn_{side}"]), _value(r[f"error_text_{side}"])
        pane = view.locator(f'.loopnb-side[data-side="{side}"]')
        timeline = view.locator(f'.loopnb-compare-timeline[data-side="{side}"]')
        if turn is None:
            expect(pane.locator(".loopnb-gap")).to_have_text(f"no turn on row {row}: its run had ended")
            expect(timeline.locator(".loopnb-selected")).to_have_count(0)
        else:
            inspector = pane.locator(".loopnb-inspector")
            expect(inspector).to_have_text(re.compile(rf"^\s*turn {turn}\s*{r[f'channel_{side}']}\b"))
            expect(inspector).to_contain_text(str(text))  # what the model read, or how the run ended
            expect(inspector).to_contain_text('read_file({"path": "config.yaml"})')
            expect(timeline.locator(".loopnb-selected")).to_have_attribute("data-turn", str(turn))
        expect(timeline.locator("g.loopnb-diverge")).to_have_count(1)


def test_the_row_slider_moves_both_inspectors_and_the_divergence_stays_marked(lab, page):
    from playwright.sync_api import expect

    c = expected()
    rows = c.turns.astype(object).to_dict("records")
    assert (c.first_divergence, c.divergence.row, len(rows)) == (2, 2, 6)
    assert [_value(r["turn_b"]) for r in rows] == [1, 2, 3, None, None, None]  # tight ends on turn 3
    page.set_viewport_size({"width": 1280, "height": 2400})  # the whole widget on screen, for its picture
    refused = offline(page)
    lab.run_all(page, "compare.ipynb", CELLS)
    view = page.locator(".loopnb-compare")
    expect(view).to_have_count(1, timeout=90_000)
    expect(view.locator(".loopnb-divergence")).to_have_attribute("data-turn", "2")
    for side in "ab":  # the mark stands on each side's turn 2, where the two first differ
        mark = view.locator(f'.loopnb-compare-timeline[data-side="{side}"] .loopnb-mark[data-turn="2"]')
        expect(mark).to_have_count(1)
    assert_row(view, rows, 2)  # it opens on the divergence

    handle = view.locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")  # row 3: the tight run ends hard where the default one goes on
    assert_row(view, rows, 3)
    for _ in range(2):
        handle.press("ArrowRight")
    assert_row(view, rows, 5)  # a gap: the tight run had ended
    readout = view.locator(".widget-readout")
    readout.fill("1")
    readout.press("Enter")
    assert_row(view, rows, 1)
    readout.fill("3")
    readout.press("Enter")
    assert_row(view, rows, 3)

    shot = shoot(page, view, SHOTS / "compare.png")
    if os.environ.get("LOOPNB_UPDATE_SCREENSHOT"):
        shutil.copy(shot, DOCS / shot.name)
    assert refused == [], refused
    assert page.errors == [], page.errors  # type: ignore[attr-defined]
