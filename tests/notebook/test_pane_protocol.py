"""A pane is a protocol: loopnb's five panes are instances of it, each names the public function
whose frame it draws, and a pane of your own is folded, drawn and kept safe in the live view,
replay, the runner and the report."""

from __future__ import annotations

import collections
import operator
from pathlib import Path

import pytest
from markupsafe import Markup

import loopnb
from loopnb import Engine, ScriptedModel, ToolCall, ToolError, tool
from loopnb.notebook import PANES, LiveView, NotebookRunner, Pane, replay, report_html
from loopnb.record import Recorder


@tool
def read_file(path: str) -> str:
    """Read a file."""
    if path != "src/main.rs":
        raise ToolError(f"{path} not found")
    return "fn main() {}"


class CallsPerTool:
    """The README's example pane: how many calls each tool got, and how many failed."""

    name = "calls"
    frame = "loopnb.Recording.turns"

    def start(self) -> collections.Counter[str]:
        return collections.Counter()

    def fold(self, state: collections.Counter[str], event: loopnb.Event) -> collections.Counter[str]:
        if event.kind == "tool_dispatched":
            state[event.result.name] += 1
        return state

    def draw(self, state: collections.Counter[str], view: object, selected: int | None) -> Markup:
        rows = Markup("").join(Markup("<li>{}: {}</li>").format(name, n) for name, n in sorted(state.items()))
        return Markup("<ul>{}</ul>").format(rows)


def events() -> list[loopnb.Event]:
    recorder = Recorder()
    engine = Engine(
        ScriptedModel(
            [
                ToolCall("read_file", {"path": "src/mian.rs"}),
                ToolCall("read_file", {"path": "src/main.rs"}),
                "done",
            ]
        ),
        tools=[read_file],
    )
    engine.subscribe(recorder)
    engine.run("read it")
    return recorder.event_objects


def test_loopnbs_panes_are_panes_and_name_a_public_frame() -> None:
    assert [p.name for p in PANES] == ["flow", "timeline", "gauge", "board", "inspector"]
    for pane in PANES:
        assert isinstance(pane, Pane)
        where = pane.frame.removeprefix("loopnb.")
        assert operator.attrgetter(where)(loopnb) is not None, pane.frame  # a real public name


def test_the_live_view_folds_and_draws_your_pane_below_its_own() -> None:
    view = LiveView(panes=[CallsPerTool()])
    for event in events():
        view(event)
    assert view.pane_widgets["calls"].value == "<ul><li>read_file: 2</li></ul>"
    assert view.widget.children[-2] is view.pane_widgets["calls"]  # below loopnb's panes, above the page
    assert "loopnb-pane-calls" in view.pane_widgets["calls"]._dom_classes
    view.close()


def test_replay_the_runner_and_the_report_draw_it_too(tmp_path: Path) -> None:
    shown = replay(events(), panes=[CallsPerTool()])
    assert shown.pane_widgets["calls"].value == "<ul><li>read_file: 2</li></ul>"
    runner = NotebookRunner(
        Engine(ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"}), "done"]), tools=[read_file]),
        panes=[CallsPerTool()],
    )
    runner.run("read it")
    assert (
        runner.view is not None
        and runner.view.pane_widgets["calls"].value == "<ul><li>read_file: 1</li></ul>"
    )
    page = report_html(events(), panes=[CallsPerTool()])
    assert '<div class="loopnb-pane-calls"><ul><li>read_file: 2</li></ul></div>' in page


class Hostile:
    name = "hostile"
    frame = "loopnb.Recording.turns"

    def start(self) -> int:
        return 0

    def fold(self, state: int, event: loopnb.Event) -> int:
        if event.kind == "turn_finished" and state == 1:
            raise RuntimeError("fold broke")
        return state + (event.kind == "turn_finished")

    def draw(self, state: int, view: object, selected: int | None) -> str:
        if state > 5:
            raise ValueError("cannot draw")
        return f"<script>alert({state})</script> sk-proj-{'a' * 40}"


def test_a_pane_that_breaks_or_returns_text_cannot_break_the_view_or_reach_the_page_unescaped() -> None:
    view = LiveView(panes=[Hostile()])
    for event in events():
        view(event)
    shown = view.pane_widgets["hostile"].value
    assert "<script>" not in shown and "&lt;script&gt;" in shown  # a str is text
    assert "sk-proj-" not in shown and "[REDACTED]" in shown  # and redacted like every text
    page = report_html(events(), panes=[Hostile()])
    assert "<script>alert" not in page


def test_a_pane_whose_draw_raises_shows_what_it_raised() -> None:
    class Broken(Hostile):
        name = "broken"

        def start(self) -> int:
            return 9

    view = LiveView(panes=[Broken()])
    view.draw()
    assert view.pane_widgets["broken"].value.startswith(
        '<div class="loopnb-pane-error">pane broken: ValueError: cannot draw'
    )


@pytest.mark.parametrize(
    ("pane", "said"),
    [
        (object(), "is not a pane: it lacks name, frame, start, fold, draw"),
        (type("P", (CallsPerTool,), {"name": "flow"})(), "there is a pane called 'flow' already"),
        (type("P", (CallsPerTool,), {"name": "a b"})(), "a pane's name must be letters, digits, - or _"),
    ],
)
def test_a_pane_that_is_not_one_is_refused_by_name(pane: object, said: str) -> None:
    with pytest.raises(
        (TypeError, ValueError), match="LiveView: .*" + said.replace("(", r"\(").replace(")", r"\)")
    ):
        LiveView(panes=[pane])  # type: ignore[list-item]
