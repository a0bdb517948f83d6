"""A displayed ``BackgroundRun`` says the state it is in when displayed, and its line keeps up.

The cell that starts a run usually ends (and displays the run) before its first turn; the line
must not stay "running, turns=0" after the run ended: the widget is rewritten as the run goes,
and the text beside it, what a front end without widgets shows, is the state as of the display,
so ``bg.wait()`` then ``bg`` shows how the run ended.
"""

from __future__ import annotations

from loopnb import CancelToken, Engine, ScriptedModel, ToolCall, ToolError, tool
from loopnb.notebook import BackgroundRun, NotebookRunner

from .test_background import WAIT, Turns, launched


@tool
def read_file(path: str) -> str:
    """Read a file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def _runner(*steps: object) -> NotebookRunner:
    return NotebookRunner(Engine(ScriptedModel(list(steps)), tools=[read_file]), view=False)


def test_displayed_after_the_end_it_shows_how_the_run_ended():
    bg = _runner(
        ToolCall("read_file", {"path": "src/mian.rs"}), ToolCall("read_file", {"path": "src/main.rs"}), "done"
    ).start("t")
    assert bg.wait(WAIT)
    bundle = bg._repr_mimebundle_()
    assert bundle["text/plain"] == "BackgroundRun(done: ok, turns=3)"
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_a_hard_ending_names_its_producer():
    bg = _runner(*[ToolCall("read_file", {"path": "src/mian.rs"})] * 6).start("t")
    assert bg.wait(WAIT) and bg.error is not None
    assert repr(bg) == "BackgroundRun(done: hard (loop_detected), turns=5)"
    stopped = _runner("done").start("t", paused=True)
    stopped.stop()
    assert stopped.wait(WAIT) and repr(stopped) == "BackgroundRun(done: hard (cancelled), turns=0)"


def test_a_line_displayed_while_running_ends_showing_the_end():
    run, turns, _ = launched(2, paused=False)
    turns.wait_began()
    bundle = run._repr_mimebundle_()
    label = run._labels[-1]
    assert bundle["text/plain"] == "BackgroundRun(running, turns=0)" and "running, turns=0" in label.value
    turns.end()
    turns.wait_began()
    turns.end()
    assert run.wait(WAIT)
    assert label.value == "<code>BackgroundRun(done: ok, turns=2)</code>"
    assert run._repr_mimebundle_()["text/plain"] == "BackgroundRun(done: ok, turns=2)"  # displayed again


def test_a_line_made_as_the_run_ends_still_shows_the_end():
    """The run ends between the line's text being read and the line joining the displayed ones:
    the worker's last rewrite misses it, so the display itself must bring it up to date."""
    token = CancelToken()
    run = BackgroundRun(cancel=token, paused=False)
    turns = Turns(1, token)
    run.launch(turns, None, None)  # type: ignore[arg-type]
    turns.wait_began()
    original = run._label_html
    calls = 0

    def label_html() -> str:
        nonlocal calls
        calls += 1
        text = original()
        if calls == 1:  # the text of the new line, read while the run still goes
            turns.end()
            assert run._thread is not None
            run._thread.join(WAIT)  # the worker is gone: its last rewrite is done
            assert run.done
        return text

    run._label_html = label_html  # type: ignore[method-assign]
    bundle = run._repr_mimebundle_()
    assert "running" not in run._labels[-1].value, "the line stayed as it was before the run ended"
    assert run._labels[-1].value == "<code>BackgroundRun(done: ok, turns=1)</code>"
    assert bundle["text/plain"] == "BackgroundRun(done: ok, turns=1)"


def test_an_outdated_write_is_corrected_by_the_thread_that_made_it():
    """A thread that wrote a line for a state that moved on meanwhile writes the newer line."""
    run, _, _ = launched(1, paused=True)
    run._repr_mimebundle_()
    label = run._labels[-1]
    states = iter(["<code>old</code>", "<code>new</code>"])
    run._label_html = lambda: next(states, "<code>new</code>")  # type: ignore[method-assign]
    run._relabel()
    assert label.value == "<code>new</code>"
    run.stop()
    assert run.wait(WAIT)
