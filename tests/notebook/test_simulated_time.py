"""A run on a simulated clock says so in the view and the report, as ``loopnb audit`` does: a
``FakeClock``'s wait is plotted on an axis named simulated, never as latency."""

from __future__ import annotations

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, tool
from loopnb.notebook import LiveView, report_html
from loopnb.record import Recorder


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def run(clock: FakeClock | None) -> Recorder:
    recorder = Recorder()
    engine = Engine(ScriptedModel([ToolCall("echo", {"text": "a"}), "done"]), tools=[echo], clock=clock)
    engine.subscribe(recorder)
    engine.run("echo it")
    return recorder


def test_the_timeline_of_a_simulated_run_says_its_times_are_simulated() -> None:
    view = LiveView()
    for event in run(FakeClock()).event_objects:
        view(event)
    assert view.state.run.simulated
    assert "simulated ms" in view.timeline.value and "latency (ms)" not in view.timeline.value
    assert "simulated clock: times are simulated, not waited" in view.timeline.value
    assert "simulated ms" in report_html(run(FakeClock()))


def test_a_run_on_the_wall_clock_plots_latency() -> None:
    view = LiveView()
    for event in run(None).event_objects:
        view(event)
    assert not view.state.run.simulated
    assert "latency (ms)" in view.timeline.value and "simulated" not in view.timeline.value
