"""Hostile text in every untrusted field, checked at every sink: live view, replay, summary, report.

A recording is something someone may have sent you: its run ids, model and tool names, breaker
targets and error class names are as untrusted as what the model and its tools said. Each sink's
HTML is parsed (``html.parser``) to check that no element, attribute or comment came from the
payload, and that the payload is still there to read, escaped.
"""

from __future__ import annotations

import dataclasses
import html
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    FallbackChain,
    LoopDetector,
    LoopError,
    ModelReply,
    ModelUnavailable,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    load,
    tool,
)
from loopnb.notebook import LiveView, replay, report_html
from loopnb.notebook._html import CONTROL_PICTURES
from loopnb.notebook._markup import NAME_LIMIT, summary_html
from loopnb.record import Recorder
from tests.notebook.conftest import Events, run_events

PIECES = (
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    "<!--",
    "\"'><svg onload=alert(3)>",
    "javascript:alert(4)",
    "&lt;i&gt;no markup&lt;/i&gt;",
    "line\u2028separator\u2029paragraph",
    "nul\x00here",
    "<b>bold</b>",
)
HOSTILE = " ".join(PIECES)
VISIBLE = HOSTILE.translate(CONTROL_PICTURES)
"""What a reader should see of ``HOSTILE``: every character, NUL as its picture."""
RUN_ID = 'a&b\\"\n' + HOSTILE  # a backslash and a newline as well: the id reaches a script


def cut(name: str) -> str:
    """How a long name is shown (``NAME_LIMIT``): its head, escaped, and what was left out."""
    head, left = name.translate(CONTROL_PICTURES)[: NAME_LIMIT - 1], len(name) - NAME_LIMIT + 1
    return f"{head}… ({left:,} more characters)"


OUR_TAGS = frozenset(
    {"b", "i", "code", "div", "span", "pre", "ul", "ol", "li", "p", "br", "a", "h1", "h2", "h3"}
    | {"section", "table", "thead", "tbody", "tr", "th", "td", "details", "summary"}
    | {"html", "head", "meta", "title", "style", "body", "script"}
    | {"svg", "g", "rect", "circle", "path", "line", "polygon", "text", "tspan"}  # the report's panes
)
OUR_ATTRIBUTES = frozenset(
    {"class", "style", "title", "id", "lang", "charset", "content", "http-equiv", "href", "colspan"}
    | {"viewbox", "width", "height", "role", "aria-label", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy"}
    | {"r", "rx", "d", "points", "fill", "stroke", "stroke-width", "stroke-dasharray", "text-anchor"}
    | {"font-weight", "opacity", "transform"}
)


class Page(HTMLParser):
    """An HTML fragment taken apart: start tags, attributes, comments, text and script bodies."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.ids: set[str] = set()
        self._script: list[str] | None = None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, name, value) for name, value in attrs]
        self.ids.update(value for name, value in attrs if name == "id" and value)
        if tag == "script":
            self._script = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append("".join(self._script))
            self._script = None

    def handle_data(self, data: str) -> None:
        (self._script if self._script is not None else self.text).append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    @property
    def shown(self) -> str:
        return "".join(self.text)


def assert_inert(markup: str, where: str) -> Page:
    """No element, attribute or comment of the payload made it into ``markup``."""
    page = Page(markup)
    assert set(page.tags) <= OUR_TAGS, (where, set(page.tags) - OUR_TAGS)
    for tag, name, value in page.attrs:
        assert name in OUR_ATTRIBUTES | {"open", "type"} or name.startswith("data-"), (where, tag, name)
        if name == "href":  # a link only ever goes to a place on the page
            assert value and value.startswith("#"), (where, tag, value)
    classes = {i: v or "" for i, (t, n, v) in enumerate(page.attrs) if t == "svg" and n == "class"}
    assert page.tags.count("svg") == len(classes), where  # every svg is ours: the payload's has none
    assert all(c.startswith("loopnb-svg ") for c in classes.values()), (where, classes)
    assert not page.comments, (where, page.comments)
    return page


# -- the runs -------------------------------------------------------------------------------------


@tool
def bad(q: str) -> str:
    """Fails with hostile text."""
    raise ToolError(HOSTILE)


@tool
def good(q: str) -> str:
    """Answers with hostile text."""
    return HOSTILE


def veto(call: ToolCall, _ctx: Any) -> str | None:
    return HOSTILE if call.arguments.get("q") == "veto" else None


def live_runs() -> list[tuple[Engine, str]]:
    """Two engine runs: one ends ok, one is stopped by the loop detector (hard)."""
    clock = FakeClock()
    ending_ok = ScriptedModel(
        [
            ToolCall("bad", {"q": HOSTILE}),
            ToolCall("good", {"q": HOSTILE}),
            ToolCall("good", {"q": "veto"}),
            ToolCall("invented" + HOSTILE, {"q": HOSTILE}),
            HOSTILE,
        ],
        name="model " + HOSTILE,
    )
    looping = ScriptedModel([ToolCall("bad", {"q": HOSTILE})] * 8, name="model " + HOSTILE)
    return [
        (
            Engine(
                model,
                [bad, good],
                hooks=[veto],
                system=HOSTILE,
                clock=clock,
                breakers=CircuitBreaker(failure_threshold=5, cooldown=60),
            ),
            HOSTILE,
        )
        for model in (ending_ok, looping)
    ]


class _SkipHostile:
    def decide(self, failure: Any, attempt: int, max_attempts: int) -> Skip:
        return Skip(note=HOSTILE)


def sent_recording(tmp_path) -> Any:
    """A recording from elsewhere: hostile run id, model, tool, breaker and error class names.

    Turn 1 (the hostile model): text and arguments hostile; ``bad`` fails with hostile text and
    recovery skips it with a hostile note; a hostile tool name is not available. Turn 2: the
    hostile model fails (hostile text) and its breaker opens; the backup's answer is rejected for
    a hostile reason. Turn 3: the breaker half-opens, the hostile model repeats its call to the
    hostile tool name, and the loop detector stops the run. The error class names are then made
    hostile, as a file from elsewhere may have them."""
    name, model = "tool " + HOSTILE, "model " + HOSTILE
    calls = (ToolCall("bad", {"q": HOSTILE}), ToolCall(name, {"q": HOSTILE}))
    hostile = ScriptedModel(
        [
            ModelReply(text=HOSTILE, tool_calls=calls),
            ModelUnavailable(HOSTILE),
            ToolCall(name, {"q": HOSTILE}),
        ],
        name=model,
    )
    chain = FallbackChain(
        [hostile, ScriptedModel(["an answer"], name="backup")],
        breaker=CircuitBreaker(failure_threshold=1, cooldown=0.0),
    )
    engine = Engine(
        chain,
        [bad],
        recovery=_SkipHostile(),
        done=lambda text: HOSTILE,
        loop_detector=LoopDetector(warn_after=1, stop_after=1),
        clock=FakeClock(),
    )
    events = Events()
    engine.subscribe(events)
    with pytest.raises(LoopError):
        engine.run(HOSTILE, run_id=RUN_ID)
    events = [
        dataclasses.replace(e, error=HOSTILE) if e.kind in ("hard_error_raised", "run_finished") else e
        for e in events
    ]
    recorder = Recorder()
    for event in events:
        recorder(event)
    return load(recorder.save(tmp_path / "sent.jsonl"))


# -- the sinks ------------------------------------------------------------------------------------


def panes(view: LiveView) -> dict[str, str]:
    return {
        "status": view.status.value,
        "board": view.board.value,
        "inspector": view.inspector.value,
        "flow": view.flow.value,
        "gauge": view.gauge.value,
        "timeline": view.timeline.value,
        "summary": summary_html(view.state),
    }


def test_live_view_panes_are_inert_and_readable():
    shown = gauges = ""
    for scenario in live_runs():
        view = LiveView()
        scenario[0].subscribe(view)
        run_events(scenario)
        for turn in range(view.slider.max + 1):
            view.select(turn)  # the gauge shows the selected turn's call
            for name, value in panes(view).items():
                shown += assert_inert(value, name).shown
            gauges += Page(view.gauge.value).shown
        view.close()
    assert ("invented" + HOSTILE)[:39] + "…" in gauges  # the gauge names the call, as text
    assert VISIBLE in shown  # the reply, the results, the error texts: every character, escaped
    assert "invented" + VISIBLE in shown  # a tool name the model made up
    assert cut("model " + HOSTILE) in shown
    assert "blocked by policy: " + VISIBLE in shown  # a hook's reason
    assert "&lt;i&gt;" in shown and "<i>no markup" not in shown  # decoded once, never twice


def test_replay_of_a_sent_recording_is_inert_and_readable(tmp_path):
    view = replay(sent_recording(tmp_path))
    shown = marks = gauges = ""
    for turn in range(view.slider.max + 1):
        view.select(turn)  # the gauge shows the selected turn's call
        for name, value in panes(view).items():
            shown += assert_inert(value, name).shown
        marks += Page(view.timeline.value).shown
        gauges += Page(view.gauge.value).shown
    assert ("tool " + HOSTILE)[:60] in marks  # a timeline mark's title (its hover), as text
    assert "bad (1 of 2 calls): 0 of 5 retries · recovery gave up (skip)" in gauges  # turn 1's gauge
    assert cut(RUN_ID) in shown
    assert cut("tool " + HOSTILE) in shown and cut("model " + HOSTILE) in shown  # inspector
    assert VISIBLE + "</" not in shown
    view.close()


def test_control_characters_stay_visible():
    view = LiveView()
    engine, task = live_runs()[0]
    engine.subscribe(view)
    run_events((engine, task))
    view.select(1)
    assert "nul␀here" in Page(view.inspector.value).shown
    assert "\x00" not in view.inspector.value


@pytest.mark.parametrize("source", ["live", "sent"])
def test_report_is_inert_and_readable(tmp_path, source):
    if source == "live":
        recorder = Recorder()
        for engine, task in live_runs():
            engine.subscribe(recorder)
            run_events((engine, task))
        recording = recorder
        runs = 2
    else:
        recording = sent_recording(tmp_path)
        runs = 1
    markup = report_html(recording, title=HOSTILE)
    page = assert_inert(markup, "report")
    assert page.scripts == [] and "script" not in page.tags  # the report runs no script at all
    assert page.tags.count("section") == runs
    hrefs = [v or "" for _t, name, v in page.attrs if name == "href"]
    assert hrefs and all(v[1:] in page.ids for v in hrefs)  # every link finds its row
    # a timeline mark's hover label names the turn's tools, escaped
    assert re.search(r'<text class="tip[^>]*>turn \d+: [^<]*' + re.escape(html.escape(PIECES[0])), markup)
    shown = page.shown
    assert VISIBLE in shown
    if source == "sent":
        assert cut(RUN_ID) in shown and cut("tool " + HOSTILE) in shown
        assert ("section", "data-run", RUN_ID.translate(CONTROL_PICTURES)) in page.attrs


def test_report_ids_do_not_come_from_run_ids(tmp_path):
    """A run id with ``&``, ``"`` or ``\\`` once broke its plot: ids are the run's place instead."""
    page = Page(report_html(sent_recording(tmp_path)))
    assert page.ids and all(re.fullmatch(r"loopnb-r\d+(-t\d+)?", i) for i in page.ids)
    hrefs = [v or "" for _t, name, v in page.attrs if name == "href"]
    assert hrefs and all(v[1:] in page.ids for v in hrefs)


def test_recording_to_html_of_a_sent_recording(tmp_path):
    out = sent_recording(tmp_path).to_html(tmp_path / "sent.html")
    page = assert_inert(out.read_text(encoding="utf-8"), "to_html")
    assert VISIBLE in page.shown


def test_the_view_title_is_text():
    view = LiveView(title=HOSTILE)
    page = assert_inert(view.header.value, "header")
    assert page.shown == VISIBLE
    view.close()
