"""Audit figures of a recording with hostile names: plotly draws no tag or link of theirs."""

from __future__ import annotations

import html
import re

import pytest

from loopnb.record import Audit, Recorder, audit, load
from loopnb.record.synthetic import Call, RunBuilder

pytest.importorskip("plotly")

HOSTILE = "<img src=x onerror=alert(1)> <a href='https://evil.example'>click</a> <b>bold</b> &lt;i&gt;"
TAG = re.compile(r"<[a-zA-Z/!]")


def hostile_recording(tmp_path):
    """Model names and breaker targets are whatever the file says."""
    tool, model = "tool " + HOSTILE, "model " + HOSTILE
    b = RunBuilder("r1", model=model, tools=(tool,))
    b.tool_turn(Call(tool, content="nope", error="tool_error"))
    b.breaker(tool, "open")
    b.tool_turn(Call(tool, content="circuit breaker open", error="breaker_open", executed=False))
    b.final("done")
    recorder = Recorder()
    for event in b.events:
        recorder(event)
    return load(recorder.save(tmp_path / "sent.jsonl"))


def labels(fig) -> list[str]:
    return [str(x) for trace in fig.data for x in (trace.x if trace.x is not None else ())]


@pytest.mark.parametrize("name", Audit.FIGURES)
def test_no_figure_label_is_markup(tmp_path, name):
    for x in labels(audit(hostile_recording(tmp_path)).figure(name)):
        assert not TAG.search(x), (name, x)


@pytest.mark.parametrize(("name", "prefix"), [("breakers", "tool "), ("models", "model ")])
def test_hostile_names_read_as_written(tmp_path, name, prefix):
    shown = [html.unescape(x) for x in labels(audit(hostile_recording(tmp_path)).figure(name))]
    assert prefix + HOSTILE in shown  # plotly decodes the entities once: the name as recorded
