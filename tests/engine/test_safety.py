"""Safety systems: the recovery ceiling, breakers, the fallback chain, the loop detector."""

from __future__ import annotations

import pytest

from loopnb import (
    MAX_RECOVERY_ATTEMPTS,
    AnalyseAndCorrect,
    AskUser,
    CircuitBreaker,
    ConvergenceDetector,
    Engine,
    Fail,
    FakeClock,
    FallbackChain,
    FallbackExhausted,
    LoopDetected,
    LoopDetector,
    ModelUnavailable,
    Retry,
    RetryWithBackoff,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    ToolRecoveryExhausted,
    tool,
)

from .conftest import Events, read_file


def counting_tool(succeed_on: int | None):
    """A tool that fails until its ``succeed_on``-th call (0-based), counting calls."""
    calls: list[dict] = []

    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        calls.append({"url": url})
        if succeed_on is not None and len(calls) - 1 >= succeed_on:
            return f"content of {url}"
        raise ToolError(f"fetch {url} failed (attempt {len(calls) - 1})")

    return fetch, calls


class Always:
    def __init__(self, decision):
        self.decision = decision
        self.seen: list[tuple[int, int]] = []

    def decide(self, failure, attempt, max_attempts):
        self.seen.append((attempt, max_attempts))
        return self.decision


# -- the recovery ceiling ----------------------------------------------------------------


def test_the_ceiling_is_five():
    assert MAX_RECOVERY_ATTEMPTS == 5


def test_a_strategy_that_retries_forever_is_stopped_after_exactly_six_calls():
    fetch, calls = counting_tool(succeed_on=None)
    strategy = Always(Retry())
    engine = Engine(ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]), tools=[fetch], recovery=strategy)
    with pytest.raises(ToolRecoveryExhausted) as info:
        engine.run("task")
    assert info.value.attempts == 6
    assert len(calls) == 6
    assert strategy.seen == [(a, 5) for a in range(6)]  # asked after attempts 0..5, told max 5


def test_a_strategy_that_succeeds_on_attempt_five():
    fetch, calls = counting_tool(succeed_on=5)
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "ok"]), tools=[fetch], recovery=Always(Retry())
    )
    result = engine.run("task")
    assert len(calls) == 6
    assert (result.tool_results[0].is_error, result.tool_results[0].attempts) == (False, 6)


@pytest.mark.parametrize("decision", [Skip(note="n"), AskUser(note="n"), Fail(note="n")])
def test_giving_up_returns_attempt_zero_verbatim_even_after_retries(decision):
    fetch, calls = counting_tool(succeed_on=None)

    class RetryTwiceThenGiveUp:
        def decide(self, failure, attempt, max_attempts):
            return Retry(corrected_input={"url": f"u{attempt}"}) if attempt < 2 else decision

    events = Events()
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]),
        tools=[fetch],
        recovery=RetryTwiceThenGiveUp(),
        observers=[events],
    )
    result = engine.run("task")
    first = result.tool_results[0]
    assert first.content == "fetch u failed (attempt 0)"  # attempt 0's text, not the last attempt's
    assert (first.producer, first.note, first.attempts) == ("recovery_gave_up", "n", 3)
    assert [c["url"] for c in calls] == ["u", "u0", "u1"]  # corrections went to the retries' input
    corrected = [e.corrected_input for e in events.of("recovery_decided") if e.decision == "retry"]
    assert corrected == [{"url": "u0"}, {"url": "u1"}]  # what the retries were sent, as recorded
    turn = events.turns()[0]
    assert turn.results == (first,)  # what the model read, put back together from the events
    assert result.messages[1].tool_calls[0].arguments == {"url": "u"}  # the record is untouched


@pytest.mark.parametrize("bad", [None, "retry", 42, Retry])
def test_a_decision_that_is_not_a_decision_counts_as_fail_and_is_recorded(bad):
    fetch, calls = counting_tool(succeed_on=None)
    events = Events()
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]),
        tools=[fetch],
        recovery=Always(bad),
        observers=[events],
    )
    result = engine.run("task")
    assert result.output == "x"
    assert len(calls) == 1
    decided = events.of("recovery_decided")
    assert [(d.decision, d.valid) for d in decided] == [("fail", False)]
    assert result.tool_results[0].producer == "recovery_gave_up"


def test_a_strategy_that_raises_counts_as_fail():
    fetch, _ = counting_tool(succeed_on=None)

    class Boom:
        def decide(self, failure, attempt, max_attempts):
            raise RuntimeError("strategy bug")

    result = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]), tools=[fetch], recovery=Boom()
    ).run("t")
    assert result.tool_results[0].note == "recovery strategy raised RuntimeError: strategy bug"


def test_retry_with_backoff_waits_on_the_injected_clock():
    calls = []

    @tool
    def slow() -> str:
        """Panics twice, then works."""
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return "ok"

    clock = FakeClock()
    engine = Engine(
        ScriptedModel([ToolCall("slow"), "done"]),
        tools=[slow],
        recovery=RetryWithBackoff(retries=3, base=0.5, factor=2),
        clock=clock,
    )
    result = engine.run("task")
    assert result.tool_results[0].content == "ok"
    assert clock.slept == [0.5, 1.0]


def test_analyse_and_correct_fixes_a_typo_against_known_paths():
    engine = Engine(
        ScriptedModel([ToolCall("read_file", {"path": "src/mian.rs"}), "done"]),
        tools=[read_file],
        recovery=AnalyseAndCorrect(candidates={"path": ["src/main.rs", "README.md"]}),
    )
    result = engine.run("task")
    first = result.tool_results[0]
    assert (first.is_error, first.content, first.attempts) == (False, "fn main() {}", 2)
    assert first.note == "analysis: path='src/mian.rs' looks like a typo of 'src/main.rs'"


def test_analyse_and_correct_coerces_arguments_to_the_schema():
    @tool
    def scale(factor: int, label: str) -> str:
        """Scale something."""
        return f"{label} x{factor}"

    engine = Engine(
        ScriptedModel([ToolCall("scale", {"factor": "3", "lable": "img"}), "done"]),
        tools=[scale],
        recovery=AnalyseAndCorrect(),
    )
    assert engine.run("task").tool_results[0].content == "img x3"


# -- breakers ------------------------------------------------------------------------------


def test_breaker_transitions_closed_open_half_open_closed():
    clock = FakeClock()
    seen = []
    breaker = CircuitBreaker(failure_threshold=2, cooldown=10, clock=clock)
    breaker.listeners.append(lambda b, prev, new: seen.append((prev, new)))
    assert breaker.allow() and breaker.state == "closed"
    breaker.record_failure()
    assert breaker.state == "closed"
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.cooldown_left() == 10
    clock.advance(9.5)
    assert not breaker.allow() and breaker.cooldown_left() == pytest.approx(0.5)
    clock.advance(0.5)
    assert breaker.allow() and breaker.state == "half_open"
    breaker.record_failure()  # a failed trial opens it again, for a fresh cooldown
    assert breaker.state == "open" and breaker.cooldown_left() == 10
    clock.advance(10)
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.failures == 0
    assert seen == [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
    ]


def test_a_success_resets_the_failure_count():
    breaker = CircuitBreaker(failure_threshold=2, clock=FakeClock())
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    assert breaker.state == "closed"


@pytest.mark.parametrize(
    "kwargs",
    [{"failure_threshold": 0}, {"failure_threshold": -1}, {"cooldown": -0.1}, {"failure_threshold": 1.5}],
)
def test_bad_breaker_settings_are_refused_at_construction(kwargs):
    with pytest.raises((ValueError, TypeError), match="CircuitBreaker"):
        CircuitBreaker(**kwargs)


def test_a_flaky_tool_trips_its_breaker_and_recovers_after_the_cooldown():
    state = {"healthy": False}

    @tool
    def status() -> str:
        """Service status."""
        if not state["healthy"]:
            raise ToolError("service unavailable (503)")
        return "all good"

    clock = FakeClock()
    events = Events()

    def model_step(messages, tools):
        if len([m for m in messages if m.role == "tool"]) == 4:
            clock.advance(31)  # the model waits out the cooldown
            state["healthy"] = True
        done = any(m.role == "tool" and not m.is_error for m in messages)
        return "recovered" if done else ToolCall("status")

    from loopnb import FunctionModel

    engine = Engine(
        FunctionModel(model_step),
        tools=[status],
        breakers=CircuitBreaker(failure_threshold=3, cooldown=30),
        clock=clock,
        loop_detector=None,
        observers=[events],
    )
    result = engine.run("check the service")
    assert [r.producer for r in result.tool_results] == ["tool_error"] * 3 + ["breaker_open", None]
    moves = [(e.target, e.previous, e.state) for e in events.of("breaker_transitioned") if e.scope == "tool"]
    assert moves == [
        ("status", "closed", "open"),
        ("status", "open", "half_open"),
        ("status", "half_open", "closed"),
    ]


def test_recovery_retries_count_once_toward_the_breaker():
    fetch, calls = counting_tool(succeed_on=None)
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]),
        tools=[fetch],
        recovery=RetryWithBackoff(retries=3, base=0, on=("tool_error",)),
        breakers=CircuitBreaker(failure_threshold=2),
        clock=FakeClock(),
    )
    engine.run("task")
    assert len(calls) == 4
    assert engine.tool_breakers["fetch"].failures == 1


# -- the fallback chain --------------------------------------------------------------------


def test_fallback_moves_to_the_next_model_at_once_within_the_same_turn():
    events, clock = Events(), FakeClock()
    down = ScriptedModel([ModelUnavailable("503", status=503)] * 3, name="primary")
    backup = ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"}), "done"], name="backup")
    engine = Engine(FallbackChain([down, backup]), tools=[read_file], observers=[events], clock=clock)
    result = engine.run("task")
    assert result.output == "done"
    assert result.models == ("backup",)
    # Asked once; still backing off on the second turn (no time passed), so not asked again.
    assert [e.model for e in events.of("model_failed")] == ["primary"]
    assert clock.slept == []
    turns = events.turns()
    assert [t.model for t in turns] == ["backup", "backup"]
    assert turns[0].breakers == {"primary": "closed", "backup": "closed"}
    assert engine.chain.breakers["primary"].failures == 1


def test_fallback_exhausted_when_every_model_is_down():
    a = ScriptedModel([ModelUnavailable("a down")] * 5, name="a")
    b = ScriptedModel(["first answer"] + [ModelUnavailable("b down")] * 5, name="b")
    chain = FallbackChain([a, b], breaker=CircuitBreaker(failure_threshold=1, cooldown=60))
    engine = Engine(chain, clock=FakeClock(), done=lambda t: t == "never")
    with pytest.raises(FallbackExhausted) as info:
        engine.run("task")
    message = str(info.value)
    assert "a: " in message and "b: b down" in message


def test_a_model_past_its_cooldown_gets_a_half_open_trial():
    clock = FakeClock()
    a = ScriptedModel([ModelUnavailable("a down"), "a is back"], name="a")
    b = ScriptedModel(["b answers"], name="b")
    chain = FallbackChain([a, b], breaker=CircuitBreaker(failure_threshold=1, cooldown=30))
    first = Engine(chain, clock=clock).run("one")
    assert first.output == "b answers"
    clock.advance(30)
    second = Engine(chain, clock=clock).run("two")
    assert second.output == "a is back"
    assert chain.breakers["a"].state == "closed"


def test_an_empty_fallback_chain_is_refused():
    with pytest.raises(ValueError, match="at least one model"):
        FallbackChain([])


def test_a_non_model_in_a_chain_is_refused():
    with pytest.raises(TypeError, match="is not a model"):
        FallbackChain([object()])


# -- the loop detector ---------------------------------------------------------------------


def test_a_success_of_the_same_call_resets_its_streak():
    outcomes = iter([False, False, True, False, False, False])

    @tool
    def ping(host: str) -> str:
        """Ping a host."""
        if not next(outcomes):
            raise ToolError(f"{host} unreachable")
        return "pong"

    call = ToolCall("ping", {"host": "db"})
    result = Engine(ScriptedModel([call] * 6 + ["done"]), tools=[ping]).run("task")
    assert [r.producer for r in result.tool_results] == ["tool_error"] * 2 + [None] + ["tool_error"] * 3


def test_a_success_of_another_call_does_not_reset_the_streak():
    good, bad = ToolCall("read_file", {"path": "src/main.rs"}), ToolCall("read_file", {"path": "x"})
    result = Engine(ScriptedModel([bad, bad, bad, good, bad, "done"]), tools=[read_file]).run("task")
    assert result.tool_results[-1].producer == "loop_refusal"


def test_a_different_failure_text_restarts_the_count():
    texts = iter(["a", "b", "a", "b", "a", "b", "a"])

    @tool
    def flaky() -> str:
        """Fails differently each time."""
        raise ToolError(next(texts))

    result = Engine(ScriptedModel([ToolCall("flaky")] * 7 + ["done"]), tools=[flaky]).run("task")
    assert all(r.producer == "tool_error" for r in result.tool_results)


def test_thresholds_are_configurable():
    bad = ToolCall("read_file", {"path": "x"})
    engine = Engine(
        ScriptedModel([bad] * 3), tools=[read_file], loop_detector=LoopDetector(warn_after=1, stop_after=2)
    )
    with pytest.raises(LoopDetected) as info:
        engine.run("task")
    assert [r.producer for r in info.value.run.tool_results] == ["tool_error", "loop_refusal"]


def test_arguments_are_compared_canonically():
    a = ToolCall("read_file", {"path": "x", "extra": 1})
    b = ToolCall("read_file", {"extra": 1, "path": "x"})
    from loopnb.engine._safety import call_key

    assert call_key(a) == call_key(b)


@pytest.mark.parametrize(
    "kwargs", [{"warn_after": 0}, {"stop_after": 0}, {"warn_after": 4, "stop_after": 3}, {"warn_after": "3"}]
)
def test_bad_loop_thresholds_are_refused(kwargs):
    with pytest.raises((ValueError, TypeError), match="LoopDetector"):
        LoopDetector(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"threshold": 0}, {"threshold": 1.5}, {"window": 1}, {"window": 0}, {"action": "explode"}]
)
def test_bad_convergence_settings_are_refused(kwargs):
    with pytest.raises((ValueError, TypeError), match="ConvergenceDetector"):
        ConvergenceDetector(**kwargs)


def test_the_loop_detector_can_be_turned_off():
    bad = ToolCall("read_file", {"path": "x"})
    result = Engine(ScriptedModel([bad] * 8 + ["gave up"]), tools=[read_file], loop_detector=None).run("t")
    assert [r.producer for r in result.tool_results] == ["tool_error"] * 8
