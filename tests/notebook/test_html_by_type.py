"""HTML by type (issue 25, item 6): a plain ``str`` that reaches a pane, a report or a comparison page is
escaped (and redacted) because of its type, whether or not the code that put it there called ``esc``.

Three properties. Filling a plain string into ``Html`` (a template, a join, a ``+``) makes it text. Each
fragment builder given a plain string, even where the code trusted its caller, shows it as text. And
every builder of the notebook layer (found by its return type, so that a new one cannot be missed),
drawn from hostile runs and recordings through the public sinks, returns ``Html`` with no element,
attribute or comment of the payload in it. Each output is parsed with ``html.parser``
(``test_escaping_sinks.Page``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    LoopError,
    ModelReply,
    ScriptedModel,
    ToolCall,
    ToolError,
    Usage,
    load,
    tool,
)
from loopnb.notebook import LiveView, replay, report_html
from loopnb.notebook._compare_view import CompareView
from loopnb.notebook._markup import code, status_html
from loopnb.notebook._state import Gauge, RunView, ViewState
from loopnb.notebook._svg import gauge_svg, svg
from loopnb.notebook._timeline import timeline_svg
from loopnb.record import Recorder
from tests.notebook.test_escaping_sinks import HOSTILE, VISIBLE, Page, assert_inert, live_runs, sent_recording

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
DRAWN_AT_IMPORT = {"_layout.jp", "_svg._node"}
"""Builders called only as their module is imported, on loopnb's own constants (the theme's colours,
the flowchart's steps): nothing from a run reaches them."""


def _html() -> Any:
    from loopnb.notebook import _html  # imported here: the tests of the builders run without it

    return _html


# -- the type -------------------------------------------------------------------------------------


def _combinations() -> dict[str, Callable[[str], Any]]:
    html = _html()
    Html = html.Html
    return {
        "format": lambda s: Html("<b>{}</b>").format(s),
        "format by name": lambda s: Html("<b>{text}</b>").format(text=s),
        "join": lambda s: Html("<br>").join([s, Html("<i>ours</i>")]),
        "markup + text": lambda s: Html("<b>") + s,
        "text + markup": lambda s: s + Html("<b>"),
        "%": lambda s: Html("<b>%s</b>") % s,
        "escape": Html.escape,
        "esc": html.esc,
    }


@pytest.mark.parametrize(
    "how", ["format", "format by name", "join", "markup + text", "text + markup", "%", "escape", "esc"]
)
def test_a_plain_string_filled_into_markup_is_text(how: str) -> None:
    out = _combinations()[how](HOSTILE)
    assert type(out) is _html().Html
    page = assert_inert(out, how)
    assert set(page.tags) <= {"b", "i", "br"} and page.attrs == [], how  # only the template's own
    assert page.shown.replace("ours", "") == VISIBLE, how  # every character, as it was written


def test_filling_in_redacts_as_esc_does() -> None:
    html = _html()
    said = f"the key is {SECRET} <b>"
    for out in (html.Html("{}").format(said), html.Html("") + said, html.esc(said)):
        assert SECRET not in out and "[REDACTED]" in out and "&lt;b&gt;" in out
    assert html.Html("{}").format(said) == html.esc(said)  # one escaping, whichever way it came in


def test_markup_is_kept_and_numbers_take_their_format() -> None:
    import numpy as np

    Html = _html().Html
    out = Html("{:.1f} {:,} {} {:g} {}").format(2.25, 12345, Html("<b>ours</b>"), np.float64(0.5), True)
    assert out == "2.2 12,345 <b>ours</b> 0.5 True"
    assert _html().esc(Html("<b>")) == "&lt;b&gt;"  # esc takes whatever it is given as text


# -- builders given a plain string ----------------------------------------------------------------


def _attr(markup: str, name: str) -> list[str]:
    return [value or "" for _tag, attr, value in Page(markup).attrs if attr == name]


def test_every_builder_shows_a_plain_string_given_to_it_as_text() -> None:
    """Fields the code filled in as trusted (an anchor, a status, a class) are text all the same."""
    shown = {
        "code": Page(code(HOSTILE)).shown,
        "status note": Page(status_html(ViewState(run=RunView(run_id="r")), note=HOSTILE)).shown,
        "gauge words": Page(gauge_svg(Gauge(), [HOSTILE[:130]])).shown + VISIBLE[130:],  # cut at 140
        "pane label": _attr(svg(10, 10, "x", HOSTILE, ""), "aria-label")[0],
        "gauge status": _attr(gauge_svg(Gauge(status=HOSTILE)), "data-status")[0],
    }
    for where, text in shown.items():
        if where == "gauge words":  # the gauge wraps a long line: its words are there, line by line
            assert "".join(VISIBLE.split()) in "".join(text.split()), where
            continue
        assert VISIBLE in text, where
    turns = replay(_run(ToolCall("good", {"q": "x"}), "done")).state.turns
    links = _attr(timeline_svg(turns, HOSTILE), "href")
    assert links and all(link.startswith("#" + VISIBLE + "-t") for link in links)
    markup = {
        "code": code(HOSTILE),
        "status": status_html(ViewState(run=RunView(run_id="r")), note=HOSTILE),
        "pane": svg(10, 10, HOSTILE, HOSTILE, ""),  # its class too: "loopnb-svg " then the payload, as text
        "gauge": gauge_svg(Gauge(status=HOSTILE)),
        "timeline": timeline_svg(turns, HOSTILE),
    }
    for where, out in markup.items():
        assert_inert(out, where)


# -- every builder, from hostile runs and recordings ----------------------------------------------


def builders() -> dict[str, Callable[..., Any]]:
    """Every function of the notebook layer that returns ``Html``, by its annotation."""
    import loopnb.notebook

    found = {}
    for name in sorted(m.name for m in pkgutil.iter_modules(loopnb.notebook.__path__)):
        module = importlib.import_module(f"loopnb.notebook.{name}")
        for attr, fn in vars(module).items():
            ours = inspect.isfunction(fn) and fn.__module__ == module.__name__
            if ours and fn.__annotations__.get("return") == "Html":
                found[f"{name}.{attr}"] = fn
    return found


@contextlib.contextmanager
def spied(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """Every builder wrapped, wherever a module of the notebook layer holds it: what each returned."""
    drawn: dict[str, list[Any]] = {name: [] for name in builders()}
    for name, fn in builders().items():

        def spy(*args: Any, _fn: Callable[..., Any] = fn, _name: str = name, **kwargs: Any) -> Any:
            out = _fn(*args, **kwargs)
            drawn[_name].append(out)
            return out

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("loopnb.notebook"):
                for attr, value in list(vars(module).items()):
                    if value is fn:
                        monkeypatch.setattr(module, attr, spy)
    yield drawn


@tool
def bad(q: str) -> str:
    """Fails with hostile text and a key."""
    raise ToolError(f"{HOSTILE} key={SECRET}")


@tool
def good(q: str) -> str:
    """Answers with hostile text."""
    return HOSTILE


def _run(*steps: Any, run_id: str = "r-" + HOSTILE, model: str = "model " + HOSTILE) -> Recorder:
    """One run of ``steps`` (each reply reports tokens, so that the report prices the run)."""
    replies = [
        ModelReply(text=s, usage=Usage(3, 5))
        if isinstance(s, str)
        else ModelReply(tool_calls=(s,), usage=Usage(3, 5), text=HOSTILE)
        for s in steps
    ]
    recorder = Recorder(redact=None)
    engine = Engine(
        ScriptedModel(replies, name=model),
        [bad, good],
        clock=FakeClock(),
        breakers=CircuitBreaker(failure_threshold=1, cooldown=60),
    )
    engine.subscribe(recorder)
    with contextlib.suppress(LoopError):
        engine.run(HOSTILE, run_id=run_id)
    return recorder


def _as_if_from_elsewhere(recorder: Recorder, tmp_path: Path) -> Any:
    """The run as another framework's file would hold it: each call with the source's own status."""
    events = [
        dataclasses.replace(e, source_status=HOSTILE) if e.kind == "tool_dispatched" else e
        for e in recorder.event_objects
    ]
    sent = Recorder(redact=None)
    for event in events:
        sent(event)
    return load(sent.save(tmp_path / "elsewhere.jsonl"))


def _draw_everything(tmp_path: Path) -> list[str]:
    """Every sink, from hostile runs: the live view, replay, the picture, the reports, comparisons."""
    out: list[str] = []
    for engine, task in live_runs():
        view = LiveView()
        engine.subscribe(view)
        with contextlib.suppress(LoopError):
            engine.run(task)
        for turn in range(view.slider.max + 1):
            view.select(turn)
        view.set_note(HOSTILE, paused=1)
        out.append(view._repr_mimebundle_()["text/html"])
        view.close()
    a = _run(ToolCall("bad", {"q": HOSTILE}), ToolCall("good", {"q": HOSTILE}), HOSTILE)
    b = _run(ToolCall("good", {"q": HOSTILE}), "done " + HOSTILE, run_id="b-" + HOSTILE)
    for source in (sent_recording(tmp_path), a):
        view = replay(source)
        for turn in range(view.slider.max + 1):
            view.select(turn)
        view.close()
    both = Recorder(redact=None)
    for event in (*a.event_objects, *b.event_objects):
        both(event)
    out += [report_html(both, title=HOSTILE), report_html(_as_if_from_elsewhere(a, tmp_path))]
    for c in (
        loopnb.compare(a, b, labels=(HOSTILE, "b " + HOSTILE)),
        loopnb.compare(a.turns, b, labels=(HOSTILE, "b")),  # a side with its turns frame only
        loopnb.what_if(a, tools={"bad": HOSTILE}),
    ):
        view = CompareView(c)
        for row in range(1, len(c.turns) + 1):
            view.select(row)
        out += [c._repr_html_(), c.to_html(tmp_path / "c.html").read_text(encoding="utf-8")]
        view.close()
    return out


def test_every_builder_drawn_from_hostile_runs_returns_inert_html(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    Html = _html().Html
    with spied(monkeypatch) as drawn:
        pages = _draw_everything(tmp_path)
    missed = {name for name, outs in drawn.items() if not outs} - DRAWN_AT_IMPORT
    assert not missed, f"builders no hostile run reached: {sorted(missed)}"
    for name, outs in drawn.items():
        for out in outs:
            assert type(out) is Html, name
            assert_inert(out, name)
    shown = ""
    for page in pages:  # what leaves: plain strings, and the payload readable in them
        assert type(page) is str
        shown += assert_inert(page, "page").shown
    assert VISIBLE in shown and SECRET not in shown


def test_what_leaves_for_a_front_end_or_a_file_is_a_plain_string(tmp_path: Path) -> None:
    a = _run(ToolCall("bad", {"q": HOSTILE}), "done")
    view = replay(a)
    values = [
        view.status.value,
        view.flow.value,
        view.timeline.value,
        view.inspector.value,
        view.header.value,
    ]
    c = loopnb.compare(a, a, labels=("a", "b"))
    compare = CompareView(c)
    values += [compare.header.value, compare.inspectors[0].value, compare.caption.value]
    values += [report_html(a), c._repr_html_(), view._repr_mimebundle_()["text/html"]]
    assert all(type(v) is str for v in values)  # a caller's ``+`` or ``replace`` means text as it is
    view.close()
    compare.close()
