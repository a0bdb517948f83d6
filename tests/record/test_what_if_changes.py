"""``what_if`` under a changed policy: where the replay diverges, what the model would read, what
the change saves; and the clear errors for a change it cannot make."""

from __future__ import annotations

import time
from typing import Any

import pytest

import loopnb
from loopnb import (
    AnalyseAndCorrect,
    CircuitBreaker,
    LoopDetector,
    RetryWithBackoff,
    ToolError,
    scenarios,
    tool,
)

NOT_FOUND = "file config.yaml not found"


def recorded(name: str) -> list[Any]:
    return list(scenarios.get(name).run().events)


@pytest.fixture(scope="module")
def stubborn() -> list[Any]:
    """The stubborn loop: 3 tool errors, 2 refusals, stopped hard on turn 6 (default detector)."""
    return recorded("stubborn_loop")


# -- the loop detector: off, default, tighter --------------------------------------------------


def test_with_the_loop_detector_off_the_model_reads_the_error_where_it_was_refused(stubborn):
    comparison = loopnb.what_if(stubborn, loop_detector=None)
    found = comparison.what_if
    assert found.turn == 4
    assert found.how == "soft (loop_refusal) -> soft (tool_error)"
    assert (
        found.read_then is not None and "dispatch refused before execution: loop detected" in found.read_then
    )
    assert found.read_now == f"read_file -> error (tool_error): {NOT_FOUND}"
    assert (found.ended, found.saved) == (None, None)  # it stopped: the next reply answers a refusal
    assert len(found.replay.turns) == 4 and comparison.first_divergence == 4
    assert "what the model would do next is not in the recording" in found.text()


def test_with_the_default_detector_nothing_changes(stubborn):
    found = loopnb.what_if(stubborn, loop_detector=LoopDetector()).what_if
    assert found.turn is None and found.ended == "loop_detected"
    assert found.saved == loopnb.analysis._whatif_report.Savings(0, 0, 0, None, None)


def test_a_tighter_detector_stops_the_run_three_turns_sooner(stubborn):
    comparison = loopnb.what_if(stubborn, loop_detector=LoopDetector(warn_after=2, stop_after=2))
    found = comparison.what_if
    assert found.turn == 3 and found.ended == "loop_detected"
    assert found.how == "soft (tool_error) -> hard (loop_detected)"
    assert found.read_then == f"read_file -> error (tool_error): {NOT_FOUND}"
    assert found.read_now is not None and "(3 identical calls in a row)" in found.read_now
    saved = found.saved
    assert saved is not None
    assert (saved.turns, saved.calls, saved.executions) == (3, 3, 1)  # turn 3's call never ran
    assert comparison.totals["turns"].tolist() == [6, 3]
    assert comparison.totals["side"].tolist() == ["recorded", "what if"]
    assert comparison.first_divergence == 3


def test_a_detector_that_refuses_sooner_diverges_softly_and_projects_to_its_stop(stubborn):
    tighter = LoopDetector(warn_after=2, stop_after=3)
    found = loopnb.what_if(stubborn, loop_detector=tighter).what_if
    assert found.turn == 3 and found.how == "soft (tool_error) -> soft (loop_refusal)"
    assert found.saved is None and not found.projected
    projected = loopnb.what_if(stubborn, loop_detector=tighter, to_end=True).what_if
    assert projected.turn == 3 and projected.projected
    assert projected.ended == "loop_detected" and len(projected.replay.turns) == 4
    assert projected.saved is not None and projected.saved.turns == 2


def test_projected_with_no_detector_the_run_outlasts_the_recording(stubborn):
    found = loopnb.what_if(stubborn, loop_detector=None, to_end=True).what_if
    assert found.turn == 4 and found.ran_out == 7
    assert found.ended is None and found.saved is None
    producers = found.replay.turns["producer"].tolist()
    assert producers == ["tool_error"] * 6  # every refusal now runs, and fails the same way
    assert "past the recorded replies" in found.text()


def test_max_turns_ends_the_run_before_the_model_is_asked(stubborn):
    found = loopnb.what_if(stubborn, max_turns=2).what_if
    assert found.turn == 3 and found.ended == "loop_detected"
    assert (
        found.read_now
        == "the run ended hard (loop_detected): the run reached max_turns=2 without a final reply"
    )
    assert found.saved is not None and (found.saved.turns, found.saved.calls) == (3, 4)


# -- tools made to succeed or fail; another error text -----------------------------------------


def test_a_tool_made_to_succeed_with_a_fixed_text(stubborn):
    found = loopnb.what_if(stubborn, tools={"read_file": "retries: 3"}).what_if
    assert found.turn == 1 and found.how == "soft (tool_error) -> ok"
    assert found.read_now == "read_file -> ok: retries: 3"


def test_a_tool_made_to_succeed_by_a_real_function(stubborn):
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: retries: 3"

    found = loopnb.what_if(stubborn, tools=[read_file]).what_if
    assert found.read_now == "read_file -> ok: config.yaml: retries: 3"
    by_function = loopnb.what_if(stubborn, tools={"read_file": read_file.fn}).what_if
    assert by_function.read_now == found.read_now


def test_a_tool_made_to_fail():
    found = loopnb.what_if(recorded("mistyped_path"), tools={"read_file": ToolError("disk on fire")}).what_if
    assert found.turn == 1 and found.how == "soft (tool_error) both, but the text the model reads differs"
    assert found.read_now == "read_file -> error (tool_error): disk on fire"


def test_another_error_text_for_a_tool_and_for_every_tool():
    events = recorded("vague_error")
    text = "restart {service}: {error} (the unit is masked; unmask it first)"
    found = loopnb.what_if(events, error_text={"restart": text}).what_if
    assert found.turn == 1
    assert found.read_then == "restart -> error (tool_error): failed"
    assert (
        found.read_now
        == "restart -> error (tool_error): restart payments: failed (the unit is masked; unmask it first)"
    )
    every = loopnb.what_if(events, error_text={"tool_error": "{error}: see the logs"}).what_if
    assert every.read_now == "restart -> error (tool_error): failed: see the logs"


def test_an_error_text_leaves_a_run_whose_tools_never_fail_as_it_was():
    found = loopnb.what_if(recorded("hook_veto"), error_text={"tool_error": "nope: {error}"}).what_if
    assert found.turn is None and found.ended == "ok"


# -- recovery, breakers, timeouts, convergence -------------------------------------------------


def test_without_the_runaway_strategy_the_model_reads_the_error_instead_of_the_run_ending():
    found = loopnb.what_if(recorded("recovery_ceiling"), recovery=None).what_if
    assert found.turn == 1 and found.how == "hard (tool_recovery_exhausted) -> soft (tool_error)"
    assert found.read_now == "push -> error (tool_error): remote rejected main: protected branch"


def test_a_strategy_with_a_lower_ceiling_of_its_own_gives_up_after_two_retries():
    events = recorded("recovery_ceiling")
    strategy = RetryWithBackoff(retries=2, on=["tool_error"])
    started = time.perf_counter()
    comparison = loopnb.what_if(events, recovery=strategy, to_end=True)
    assert time.perf_counter() - started < 5  # the back-off is slept on the replay's FakeClock
    found = comparison.what_if
    assert found.turn == 1 and found.how == "hard (tool_recovery_exhausted) -> soft (recovery_gave_up)"
    assert found.read_now is not None and "[note: still failing after 2 retries]" in found.read_now
    # projected: the run would go on to a turn 2 the recording has no reply for
    assert (found.ended, found.saved, found.ran_out) == (None, None, 2)
    assert comparison.totals["retries"].tolist() == [5, 2]


def test_a_recovery_strategy_where_there_was_none_corrects_the_typo():
    strategy = AnalyseAndCorrect(candidates={"path": lambda: list(scenarios.FILES)})
    found = loopnb.what_if(recorded("mistyped_path"), recovery=strategy).what_if
    assert found.turn == 1 and found.how == "soft (tool_error) -> ok"
    assert found.read_now is not None and found.read_now.startswith("read_file -> ok: fn main() {}")


def test_breakers_off_or_tighter():
    events = recorded("flaky_tool_breaker")
    off = loopnb.what_if(events, breakers=None).what_if
    assert off.turn == 3 and off.how == "soft (breaker_open) -> soft (tool_error)"
    tighter = loopnb.what_if(events, breakers=CircuitBreaker(failure_threshold=1, cooldown=30.0)).what_if
    assert tighter.turn == 2 and tighter.how == "soft (tool_error) -> soft (breaker_open)"


def test_a_shorter_timeout_and_none():
    events = recorded("hanging_tool")
    shorter = loopnb.what_if(events, timeout=0.05).what_if
    assert shorter.turn == 1
    assert shorter.read_now == "search_logs -> error (timeout): Tool 'search_logs' timed out after 0.05s"
    unbounded = loopnb.what_if(events, timeout=None).what_if
    assert unbounded.turn == 1 and unbounded.read_now is not None
    assert "timed out in the recording" in unbounded.read_now


def test_without_convergence_the_third_rejection_is_soft():
    found = loopnb.what_if(recorded("converging_answers"), convergence=None).what_if
    assert found.turn == 3 and found.how == "hard (loop_detected) -> soft (completion_rejected)"


# -- what cannot be asked -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "error", "words"),
    [
        (
            {"loop_detectr": None},
            TypeError,
            ["'loop_detectr'", "loop_detector, recovery", "Did you mean 'loop_detector'"],
        ),
        (
            {"loop_detector": "off"},
            TypeError,
            ["loop_detector=", "a LoopDetector, or None (off)", "str 'off'"],
        ),
        ({"max_turns": 0}, TypeError, ["max_turns=", "an int >= 1, or None", "got int 0"]),
        ({"timeout": -1}, TypeError, ["timeout=", "seconds > 0"]),
        ({"recovery": "retry"}, TypeError, ["recovery=", "decide(failure, attempt, max_attempts)"]),
        ({"breakers": {"read_file": 3}}, TypeError, ["breakers=", "CircuitBreaker"]),
        ({"tools": {"read_file": 3}}, TypeError, ["tools=", "a ToolError"]),
        (
            {"tools": {"write_file": "ok"}},
            ValueError,
            ["'write_file' is not a tool of the recorded run", "read_file"],
        ),
        (
            {"error_text": {"read_file": "{file} gone"}},
            ValueError,
            ["uses file", "a template may use error, path"],
        ),
        ({"error_text": {"loop_refusal": "x"}}, ValueError, ["'loop_refusal'", "the engine words its other"]),
        ({"error_text": "failed"}, TypeError, ["error_text=", "{error}"]),
        ({"to_end": "yes"}, TypeError, ["to_end=", "True or False"]),
    ],
)
def test_a_bad_change_names_the_keyword_and_what_it_takes(stubborn, changes, error, words):
    with pytest.raises(error) as caught:
        loopnb.what_if(stubborn, **changes)
    for word in words:
        assert word in str(caught.value)


def test_a_turns_frame_or_several_runs_are_refused_clearly(stubborn):
    recorder = loopnb.Recorder()
    for name in ("mistyped_path", "stubborn_loop"):
        scenarios.get(name).run(observers=[recorder])
    with pytest.raises(TypeError, match="needs the run's events: a turns frame"):
        loopnb.what_if(recorder.turns)
    with pytest.raises(ValueError, match=r"holds 2 runs .*pick one with run="):
        loopnb.what_if(recorder)
    second = recorder.run_ids[1]
    assert loopnb.what_if(recorder, run=second, loop_detector=None).what_if.turn == 4
    with pytest.raises(ValueError, match="has no run 'nope'"):
        loopnb.what_if(recorder, run="nope")
    with pytest.raises(TypeError, match="takes a Recording, a Recorder"):
        loopnb.what_if(42)


def test_the_findings_in_the_picture_are_escaped(stubborn):
    hostile = "<img src=x onerror=alert(1)>"
    comparison = loopnb.what_if(stubborn, tools={"read_file": hostile})
    assert comparison.what_if.read_now == f"read_file -> ok: {hostile}"
    page = comparison._repr_html_()
    assert hostile not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "WhatIf(tools: diverges at turn 1)" in repr(comparison)
