"""Properties of the loop that must hold whatever the tools, the model and the strategy do."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopnb import (
    AskUser,
    CircuitBreaker,
    ConvergenceDetector,
    Engine,
    Fail,
    FakeClock,
    LoopError,
    ModelUnavailable,
    Retry,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    tool,
)

from .conftest import Events

RELEASE = threading.Event()  # lets hung tool threads finish when the session ends

EXCEPTIONS = [
    ToolError,
    ValueError,
    KeyError,
    RuntimeError,
    TypeError,
    ZeroDivisionError,
    SystemExit,
    OSError,
]
BEHAVIOURS = st.one_of(
    st.tuples(
        st.just("return"), st.one_of(st.text(max_size=20), st.integers(), st.none(), st.lists(st.integers()))
    ),
    st.tuples(st.just("raise"), st.sampled_from(EXCEPTIONS)),
    st.tuples(st.just("hang"), st.just(None)),
    st.tuples(st.just("odd"), st.just(None)),
)


class Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


def make_tool(behaviours):
    """A tool whose n-th call does behaviours[n % len]."""
    calls = {"n": 0}

    @tool
    def act(x: int = 0) -> object:
        """Does something arbitrary."""
        kind, arg = behaviours[calls["n"] % len(behaviours)]
        calls["n"] += 1
        if kind == "return":
            return arg
        if kind == "raise":
            raise arg("boom")
        if kind == "hang":
            RELEASE.wait(2)
            return "late"
        return Unprintable()

    return act, calls


CALLS = st.one_of(
    st.builds(lambda x: ToolCall("act", {"x": x}), st.integers(0, 2)),
    st.just(ToolCall("act", {"x": "not an int"})),
    st.just(ToolCall("act", "{garbage")),
    st.just(ToolCall("missing_tool", {})),
)
STEPS = st.lists(
    st.one_of(
        CALLS,
        st.lists(CALLS, min_size=1, max_size=3),
        st.text(max_size=10),
        st.just(ModelUnavailable("503")),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(behaviours=st.lists(BEHAVIOURS, min_size=1, max_size=4), steps=STEPS, with_breaker=st.booleans())
def test_only_loop_errors_escape_and_the_stream_is_well_formed(behaviours, steps, with_breaker):
    act, _ = make_tool(behaviours)
    events = Events()
    engine = Engine(
        ScriptedModel(steps),
        tools=[act],
        timeout=0.02,
        observers=[events],
        breakers=CircuitBreaker(failure_threshold=2, cooldown=1) if with_breaker else None,
        clock=FakeClock() if with_breaker else None,
    )
    try:
        result = engine.run("task")
        run, outcome = result, "ok"
    except LoopError as err:  # the only thing allowed to escape
        run, outcome = err.run, "hard"
    # every tool call the model made (in committed turns) got exactly one result
    calls = [c for m in run.messages if m.role == "assistant" for c in m.tool_calls]
    assert len(run.tool_results) == len(calls)
    assert [r.call_id for r in run.tool_results] == [c.id for c in calls]
    # exactly one run-end event and it comes last; run_started first; seq numbers are dense
    assert events[0].kind == "run_started"
    assert [e.kind for e in events].count("run_finished") == 1 and events[-1].kind == "run_finished"
    assert events[-1].outcome == outcome
    assert [e.seq for e in events] == list(range(len(events)))
    # one turn_finished per turn, numbered 1..n
    turns = [e.turn for e in events if e.kind == "turn_finished"]
    assert turns == list(range(1, len(turns) + 1))
    assert len(turns) == run.turns


DECISIONS = st.one_of(
    st.builds(Retry, corrected_input=st.one_of(st.none(), st.just({"x": 1}))),
    st.builds(Skip),
    st.builds(AskUser),
    st.builds(Fail),
    st.just("nonsense"),
)


@settings(max_examples=80, deadline=None)
@given(
    answers=st.lists(DECISIONS, min_size=1, max_size=10), succeed_at=st.one_of(st.none(), st.integers(0, 8))
)
def test_no_strategy_can_make_one_call_run_more_than_six_times(answers, succeed_at):
    counter = {"n": 0}

    @tool
    def fragile(x: int = 0) -> str:
        """Fails until succeed_at."""
        counter["n"] += 1
        if succeed_at is not None and counter["n"] - 1 >= succeed_at:
            return "ok"
        raise ToolError("fragile failed")

    class Scripted:
        def __init__(self):
            self.i = 0

        def decide(self, failure, attempt, max_attempts):
            assert max_attempts == 5
            answer = answers[min(self.i, len(answers) - 1)]
            self.i += 1
            return answer

    engine = Engine(ScriptedModel([ToolCall("fragile"), "done"]), tools=[fragile], recovery=Scripted())
    try:
        engine.run("task")
    except LoopError as err:
        assert type(err).__name__ == "ToolRecoveryExhausted"
        assert err.attempts == 6
        assert counter["n"] == 6
    assert counter["n"] <= 6


@settings(max_examples=40, deadline=None)
@given(
    replies=st.lists(st.sampled_from(["42", "42.", "forty-two", "The answer is 42", "no idea"]), max_size=8)
)
def test_convergence_never_lets_a_rejected_answer_end_the_run(replies):
    engine = Engine(
        ScriptedModel(replies),
        done=lambda text: "not accepted",
        convergence=ConvergenceDetector(action="warn"),
    )
    try:
        engine.run("task")
        raise AssertionError("a run whose every answer is rejected cannot end ok")
    except LoopError as err:
        assert err.run.output is None
