"""The view shows an injected failure at a glance: a flag on the timeline, a word in the inspector."""

from __future__ import annotations

from loopnb import Engine, FakeClock, Recorder, ScriptedModel, ToolCall, faults, inject, tool
from loopnb.engine._turns import turns_of
from loopnb.notebook._markup import inspector_html
from loopnb.notebook._state import turn_view
from loopnb.notebook._timeline import timeline_svg


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def injected_run():
    events = []
    tools = inject([read_file], {"read_file": faults.error("disk <busy>").first(1)})
    asks = [ToolCall("read_file", {"path": "a.txt"})]
    Engine(
        ScriptedModel([asks, asks, "done"]), tools=tools, observers=[events.append], clock=FakeClock()
    ).run("x")
    return [turn_view(t) for t in turns_of(events)]


def test_the_timeline_flags_the_injected_turn_only_and_its_tip_names_the_fault():
    views = injected_run()
    svg = str(timeline_svg(views, None))
    assert svg.count('class="loopnb-injected') == 1
    assert "injected error(&quot;disk &lt;busy&gt;&quot;).first(1)" in svg  # escaped, in the tip
    assert "<busy>" not in svg


def test_the_inspector_says_injected_on_that_turn_and_not_on_the_others():
    first, second, third = (str(inspector_html(v)) for v in injected_run())
    assert "injected" in first and "disk &lt;busy&gt;" in first
    assert "injected" not in second and "injected" not in third


def test_the_report_flags_it_too(tmp_path):
    rec = Recorder()
    tools = inject([read_file], {"read_file": faults.error("disk busy").first(1)})
    asks = [ToolCall("read_file", {"path": "a.txt"})]
    Engine(ScriptedModel([asks, asks, "done"]), tools=tools, observers=[rec], clock=FakeClock()).run("x")
    page = rec.recording().to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.count('class="loopnb-injected') == 1
