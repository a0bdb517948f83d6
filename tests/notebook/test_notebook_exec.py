"""The live view in a real kernel: tests/notebook/live_view.ipynb executed with nbclient.

The notebook checks the widgets from inside the kernel; this test checks what a saved notebook
keeps: the final charts in the widget state (the stale-state fix) and a static picture beside
every view.
"""

from __future__ import annotations

import pathlib
import re

import nbformat
import pytest
from nbclient import NotebookClient

REPO = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = pathlib.Path(__file__).with_name("live_view.ipynb")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}
    )
    client.execute()
    return nb


def outputs(nb, mime):
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if mime in out.get("data", {}):
                yield out["data"][mime]


def test_every_cell_ran_without_error(executed):
    for cell in executed.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", "".join(out.get("traceback", []))


def test_each_view_has_a_static_picture_of_its_final_state(executed):
    views = [out for cell in executed.cells for out in cell.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
             and "text/html" in out.get("data", {})]  # fmt: skip
    assert len(views) == 4  # run, interrupted run, background run, replay
    pictures = [v["data"]["text/html"] for v in views]
    assert "finished" in pictures[0] and pictures[0].count('class="loopnb-mark"') == 4
    assert "Cancelled" in pictures[1]
    assert "stopped from the live view" in pictures[2]
    assert pictures[3] == pictures[0]
    assert all("<img" not in p and "<script" not in p for p in pictures)


def test_saved_widget_state_holds_the_final_charts(executed):
    state = executed.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    html = [m["state"].get("value", "") for m in state.values() if m["model_name"] == "HTMLModel"]
    timelines = [v for v in html if 'class="loopnb-svg loopnb-timeline"' in v]
    assert len(timelines) >= 4 and sum('class="loopnb-svg loopnb-flow"' in v for v in html) >= 4
    channels = [tuple(re.findall(r'data-turn="(\d+)" data-channel="(\w+)"', v)) for v in timelines]
    payload = (("1", "soft"), ("2", "soft"), ("3", "ok"), ("4", "ok"))
    assert payload in channels  # the payload run: soft 1,2; ok 3,4
    assert any("finished" in v for v in html) and any("Cancelled" in v for v in html)
    assert not any("<img" in v for v in html)
