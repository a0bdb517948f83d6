"""What a notebook saves of loopnb's views holds no secret (issue 24): the static pictures
(``text/html``, ``text/plain``, ``_repr_html_``) and the widgets' state (what JupyterLab's "save
widget state" and nbclient write into the .ipynb: every pane's value). The views' Python state
keeps exactly what the model read."""

from __future__ import annotations

import contextlib
import html
import json
from typing import Any

import ipywidgets
import pytest

import loopnb
from loopnb import Engine, FakeClock, LoopError, ScriptedModel, ToolCall, ToolError, tool
from loopnb.notebook import LiveView
from loopnb.notebook._compare_view import CompareView
from loopnb.record import Recorder

KEY = "sk-proj-Zq8rT2wX9vLm4NcB7yHd3KpF6sJg"  # an OpenAI-shaped key the default redactor knows
PASSWORD = "hunter2-correct-horse"  # no shape of its own: known by its name in JSON
RIGHT = ToolCall("read_file", {"path": "src/main.rs"})


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found; the server said: token {KEY} was refused")
    return json.dumps({"source": "fn main() {}", "password": PASSWORD})


def _run(*observers: Any, run_id: str = "keyed") -> Recorder:
    """A run whose task, tool error, tool result, call arguments and answer hold secrets."""
    rec = Recorder(redact=None)
    steps = [ToolCall("read_file", {"path": f"src/{KEY}.rs"}), RIGHT, f"done; I used {KEY}"]
    engine = Engine(ScriptedModel(steps), [read_file], clock=FakeClock(), observers=[rec, *observers])
    with contextlib.suppress(LoopError):
        engine.run(f"What does src/main.rs do? Use the token {KEY}.", run_id=run_id)
    return rec


def _saved(obj: Any, widget: ipywidgets.Widget) -> dict[str, str]:
    """Everything a notebook saves of ``obj`` displayed: its bundle, its HTML, its widgets' state."""
    bundle = obj._repr_mimebundle_()
    saved = {mime: json.dumps(value) for mime, value in bundle.items()}
    if hasattr(obj, "_repr_html_"):
        saved["_repr_html_"] = obj._repr_html_()
    saved["widget state"] = _widget_state(widget)
    return saved


def _widget_state(root: ipywidgets.Widget) -> str:
    """The state of ``root`` and of every widget it holds, as a front end saves it (JSON)."""
    states: dict[int, dict[str, Any]] = {}
    todo = [root]
    while todo:
        widget = todo.pop()
        if id(widget) in states:
            continue
        states[id(widget)] = widget.get_state()
        for name in widget.keys:
            value = getattr(widget, name)
            todo += [
                v
                for v in (value if isinstance(value, list | tuple) else [value])
                if isinstance(v, ipywidgets.Widget)
            ]
    return json.dumps(list(states.values()), default=str)


def _assert_no_secret(saved: dict[str, str]) -> None:
    """No secret, nor any 12 characters of one (a cut must not leave part of a key to read)."""
    for where, text in saved.items():
        for shown in (text, html.unescape(text)):
            for secret in (KEY, PASSWORD):
                parts = {secret[i : i + 12] for i in range(len(secret) - 11)}
                assert not any(part in shown for part in parts), (where, secret)


def test_the_live_view_saves_no_secret_and_its_state_keeps_what_the_model_read():
    view = LiveView()
    _run(view)
    assert view.finished
    for turn in (None, 1, 2, 3):  # every turn in the inspector, as a click would show it
        if turn is not None:
            view.select(turn)
        saved = _saved(view, view.widget)
        _assert_no_secret(saved)
        assert "[REDACTED]" in saved["widget state"]
    assert "[REDACTED]" in view._repr_mimebundle_()["text/html"]
    first = view.state.turn(1)
    assert first is not None and KEY in first.read[0].text  # in memory: exactly what the model read
    assert KEY in view.state.run.task
    view.close()


@pytest.mark.parametrize("source", ["recorder", "recording"])
def test_a_replay_saves_no_secret(tmp_path, source):
    rec = _run()
    rec.save(tmp_path / "r.jsonl")
    _run(rec_second := Recorder(redact=None), run_id=f"second-{KEY}")  # a run id with a key in it
    given = rec if source == "recorder" else loopnb.load(tmp_path / "r.jsonl")
    view = loopnb.replay(given)
    for turn in range(view.slider.max + 1):
        view.slider.value = turn
        _assert_no_secret(_saved(view, view.widget))
    view.close()
    both = Recorder(redact=None)
    for event in [*rec.event_objects, *rec_second.event_objects]:
        both(event)
    menu = loopnb.replay(both)
    assert menu.runs is not None
    _assert_no_secret(_saved(menu, menu.widget))
    menu.close()


def test_the_compare_widget_and_its_picture_save_no_secret():
    a, b = _run(run_id="a"), _run(run_id="b")
    c = loopnb.compare(a, b)
    view = CompareView(c)
    for row in range(1, len(c.turns) + 1):
        view.select(row)
        _assert_no_secret(_saved(c, view.widget))
    assert "[REDACTED]" in c._repr_html_()
    assert KEY in c.turns["error_text_a"].dropna().iloc[0]  # the frame keeps what the model read
    view.close()
