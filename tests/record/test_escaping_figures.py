"""Audit figures of a recording with hostile names: plotly draws no tag or link of theirs."""

from __future__ import annotations

import html
import re

import pytest

from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    FallbackChain,
    ModelUnavailable,
    ScriptedModel,
    ToolCall,
    load,
)
from loopnb.analysis import Audit, audit
from loopnb.record import Recorder

from .conftest import run_engine

HOSTILE = "<img src=x onerror=alert(1)> <a href='https://evil.example'>click</a> <b>bold</b> &lt;i&gt;"
TAG = re.compile(r"<[a-zA-Z/!]")


def hostile_recording(tmp_path):
    """Model names, tool names and breaker targets are whatever the file says. The hostile model
    calls a hostile tool name (soft: not available), then fails and its breaker opens (a hostile
    breaker target); the backup model answers."""
    tool, model = "tool " + HOSTILE, "model " + HOSTILE
    hostile = ScriptedModel([ToolCall(tool, {"q": HOSTILE}), ModelUnavailable(HOSTILE)], name=model)
    chain = FallbackChain(
        [hostile, ScriptedModel(["done"], name="backup")], breaker=CircuitBreaker(failure_threshold=1)
    )
    recorder = Recorder()
    for event in run_engine(Engine(chain, clock=FakeClock()), HOSTILE, run_id="r1").events:
        recorder(event)
    return load(recorder.save(tmp_path / "sent.jsonl"))


def labels(fig) -> list[str]:
    return [str(x) for trace in fig.data for x in (trace.x if trace.x is not None else ())]


@pytest.mark.parametrize("name", Audit.FIGURES)
def test_no_figure_label_is_markup(tmp_path, name):
    for x in labels(audit(hostile_recording(tmp_path)).figure(name)):
        assert not TAG.search(x), (name, x)


@pytest.mark.parametrize(("name", "prefix"), [("breakers", "model "), ("models", "model ")])
def test_hostile_names_read_as_written(tmp_path, name, prefix):
    shown = [html.unescape(x) for x in labels(audit(hostile_recording(tmp_path)).figure(name))]
    assert prefix + HOSTILE in shown  # plotly decodes the entities once: the name as recorded
