"""The hard channel: each LoopError variant, where it is born, and what finalize salvages."""

from __future__ import annotations

import pickle

import pytest

from loopnb import (
    Cancelled,
    CancelToken,
    ContextBudget,
    ContextExceeded,
    ConvergenceDetector,
    Engine,
    FakeClock,
    FallbackExhausted,
    LoopDetected,
    LoopError,
    ModelAuthError,
    ModelContextOverflow,
    ModelReply,
    ModelUnavailable,
    Retry,
    ScriptedModel,
    ToolCall,
    ToolError,
    ToolRecoveryExhausted,
    UserInputRequired,
    tool,
)
from loopnb.engine._errors import HARD_PRODUCERS, channel_of

from .conftest import Events, read_file

GOOD = ToolCall("read_file", {"path": "src/main.rs"})
BAD = ToolCall("read_file", {"path": "src/mian.rs"})


def assert_finalized(err: LoopError, events: Events, *, turns_committed: int) -> None:
    """Completed turns commit, the in-flight turn drops, the run is reported hard, last."""
    run = err.run
    assert run is not None and run.output is None
    replies = [m for m in run.messages if m.role == "assistant"]
    assert len(replies) == turns_committed
    assert len(run.tool_results) == sum(len(r.tool_calls) for r in replies)
    assert events[-1].kind == "run_finished"
    assert events[-1].outcome == "hard" and events[-1].error == type(err).__name__
    hard_rows = [e for e in events.of("turn_finished") if e.channel == "hard"]
    assert len(hard_rows) == 1
    assert hard_rows[0].producer == err.producer and hard_rows[0].dropped
    assert len(events.of("run_finished")) == 1


def test_cancel_token_fired_by_a_tool_ends_the_run_at_the_next_checkpoint():
    token = CancelToken()

    @tool
    def stop_everything() -> str:
        """Fires the cancel token."""
        token.cancel("the user pressed stop")
        return "stopping"

    events = Events()
    model = ScriptedModel([GOOD, ToolCall("stop_everything"), "never reached"])
    engine = Engine(model, tools=[read_file, stop_everything], observers=[events])
    with pytest.raises(Cancelled) as info:
        engine.run("task", cancel=token)
    assert str(info.value) == "the user pressed stop"
    assert_finalized(info.value, events, turns_committed=2)


def test_cancel_fired_by_a_hook_stops_before_the_tool_runs():
    ran = []

    @tool
    def act() -> str:
        """Acts."""
        ran.append(1)
        return "acted"

    def kill_switch(call, ctx):
        ctx.cancel.cancel("kill switch")

    events = Events()
    engine = Engine(
        ScriptedModel([ToolCall("act"), "x"]), tools=[act], hooks=[kill_switch], observers=[events]
    )
    with pytest.raises(Cancelled) as info:
        engine.run("task")
    assert ran == []
    assert_finalized(info.value, events, turns_committed=0)


def test_keyboard_interrupt_inside_a_tool_becomes_cancelled():
    @tool
    def interrupted() -> str:
        """Simulates Ctrl-C arriving while the tool runs."""
        raise KeyboardInterrupt

    events = Events()
    engine = Engine(
        ScriptedModel([GOOD, ToolCall("interrupted"), "x"]),
        tools=[read_file, interrupted],
        observers=[events],
    )
    with pytest.raises(Cancelled) as info:
        engine.run("task")
    assert "interrupted" in str(info.value)
    assert_finalized(info.value, events, turns_committed=1)


def test_context_exceeded_discards_the_scratchpad_whole():
    @tool
    def dump() -> str:
        """Returns a lot of text."""
        return "x" * 4000

    events = Events()
    engine = Engine(
        ScriptedModel([ToolCall("dump"), ToolCall("dump"), "x"]),
        tools=[dump],
        system="You are terse.",
        context=ContextBudget(max_tokens=200),
        observers=[events],
    )
    with pytest.raises(ContextExceeded) as info:
        engine.run("Summarise the dump.")
    run = info.value.run
    assert [m.role for m in run.messages] == ["system", "user"]
    assert run.messages[1].content == "Summarise the dump."
    assert run.tool_results == []
    assert events[-1].scratchpad_discarded is True


def test_compaction_drops_old_turns_and_the_run_goes_on():
    @tool
    def chunk(i: int) -> str:
        """Returns a chunk."""
        return f"{i}:" + "y" * 300

    events = Events()
    engine = Engine(
        ScriptedModel([ToolCall("chunk", {"i": i}) for i in range(6)] + ["done"]),
        tools=[chunk],
        context=ContextBudget(max_tokens=250),
        observers=[events],
    )
    result = engine.run("read the chunks")
    assert result.output == "done"
    assert events.of("context_compacted"), "compaction should have run"
    assert result.messages[0].content == "read the chunks"  # the task is never dropped
    assert len(result.tool_results) == 6  # every call got its result, even if compacted away


def test_a_compactor_that_makes_no_progress_ends_the_run():
    @tool
    def chunk() -> str:
        """Returns a chunk."""
        return "z" * 800

    engine = Engine(
        ScriptedModel([ToolCall("chunk"), ToolCall("chunk"), "x"]),
        tools=[chunk],
        context=ContextBudget(max_tokens=300, compactor=lambda tail, target: tail),
    )
    with pytest.raises(ContextExceeded, match="no progress"):
        engine.run("task")


def test_a_model_context_overflow_compacts_then_ends_hard_when_nothing_is_left():
    model = ScriptedModel([GOOD, ModelContextOverflow("maximum context length exceeded", status=400)])
    with pytest.raises(ContextExceeded) as info:
        Engine(model, tools=[read_file]).run("task")
    assert info.value.run.messages[-1].content == "task"


def test_loop_detected_after_refusals():
    events = Events()
    engine = Engine(ScriptedModel([BAD] * 7), tools=[read_file], observers=[events])
    with pytest.raises(LoopDetected) as info:
        engine.run("task")
    producers = [r.producer for r in info.value.run.tool_results]
    assert producers == ["tool_error"] * 3 + ["loop_refusal"] * 2
    assert_finalized(info.value, events, turns_committed=5)
    assert [e.action for e in events.of("detector_fired")] == ["refuse", "refuse", "stop"]


def test_max_turns_ends_the_run_as_loop_detected():
    engine = Engine(ScriptedModel([GOOD] * 10), tools=[read_file], max_turns=3)
    with pytest.raises(LoopDetected, match="max_turns=3") as info:
        engine.run("task")
    assert info.value.run.turns == 4
    assert len(info.value.run.tool_results) == 3


@pytest.mark.parametrize(("action", "error"), [("stop", LoopDetected), ("ask_user", UserInputRequired)])
def test_convergence_stop_and_ask_user(action, error):
    events = Events()
    engine = Engine(
        ScriptedModel(["The answer is 42.", "The answer is 42!", "The answer is 42.", "x"]),
        done=lambda text: "show your working" if "because" not in text else None,
        convergence=ConvergenceDetector(window=3, threshold=0.9, action=action),
        observers=[events],
    )
    with pytest.raises(error) as info:
        engine.run("What is 6 x 7?")
    assert "nearly identical" in str(info.value)
    assert_finalized(info.value, events, turns_committed=2)
    assert events.of("detector_fired")[-1].action == action


def test_convergence_is_not_dodged_by_shouting_or_reflowing_the_same_answer():
    engine = Engine(
        ScriptedModel(["The answer is 42.", "THE ANSWER IS 42.", "the  answer\nis 42.", "x"]),
        done=lambda text: "show your working",
        convergence=ConvergenceDetector(window=3, threshold=0.9, action="stop"),
    )
    with pytest.raises(LoopDetected, match=r"nearly identical \(similarity 1\.00"):
        engine.run("What is 6 x 7?")


def test_convergence_warn_is_a_soft_note_and_the_run_goes_on():
    engine = Engine(
        ScriptedModel(["42", "42", "42", "42 because 6 x 7 = 42"]),
        done=lambda text: "show your working" if "because" not in text else None,
        convergence=ConvergenceDetector(window=3, action="warn"),
    )
    result = engine.run("What is 6 x 7?")
    assert result.output == "42 because 6 x 7 = 42"
    feedback = [m for m in result.messages if m.role == "user"][1:]
    assert [m.producer for m in feedback] == [
        "completion_rejected",
        "completion_rejected",
        "completion_rejected",
        "convergence_warning",
    ]
    assert feedback[0].content == "answer rejected: show your working"


def test_recovery_past_the_ceiling_is_hard_with_six_total_calls():
    calls = []

    @tool
    def flaky(path: str) -> str:
        """Always fails."""
        calls.append(path)
        raise ToolError("still broken")

    class Forever:
        def decide(self, failure, attempt, max_attempts):
            return Retry()

    events = Events()
    engine = Engine(
        ScriptedModel([GOOD, ToolCall("flaky", {"path": "a"}), "x"]),
        tools=[read_file, flaky],
        recovery=Forever(),
        observers=[events],
    )
    with pytest.raises(ToolRecoveryExhausted) as info:
        engine.run("task")
    assert info.value.attempts == 6
    assert len(calls) == 6
    assert_finalized(info.value, events, turns_committed=1)


def test_fallback_exhausted_when_the_only_model_fails():
    events = Events()
    engine = Engine(ScriptedModel([GOOD]), tools=[read_file], observers=[events])
    with pytest.raises(FallbackExhausted, match="script exhausted after 1 steps") as info:
        engine.run("task")
    assert_finalized(info.value, events, turns_committed=1)


def test_fallback_exhausted_names_the_variable_after_an_auth_error():
    model = ScriptedModel([ModelAuthError("401 invalid key", status=401, env_var="OPENAI_API_KEY")] * 3)
    with pytest.raises(FallbackExhausted) as info:
        Engine(model).run("task")
    assert info.value.env_var == "OPENAI_API_KEY"
    assert str(info.value).count("set OPENAI_API_KEY") == 1
    assert model.remaining == 2  # a refused key opens the breaker at once: one request, not three


def test_a_model_that_returns_garbage_is_a_model_failure_not_a_crash():
    class Broken:
        name = "broken"

        async def complete(self, messages, tools):
            return {"text": "not a reply"}

    with pytest.raises(FallbackExhausted, match="returned dict, not a ModelReply"):
        Engine(Broken(), clock=FakeClock()).run("task")


def test_a_model_that_raises_anything_is_a_model_failure():
    class Broken:
        name = "broken"

        async def complete(self, messages, tools):
            raise ZeroDivisionError("bug in the adapter")

    with pytest.raises(FallbackExhausted, match="ZeroDivisionError: bug in the adapter"):
        Engine(Broken(), clock=FakeClock()).run("task")


def test_every_hard_variant_has_a_producer_on_the_hard_channel():
    variants = [
        Cancelled,
        ContextExceeded,
        LoopDetected,
        UserInputRequired,
        ToolRecoveryExhausted,
        FallbackExhausted,
    ]
    assert sorted(v.producer for v in variants) == sorted(HARD_PRODUCERS)
    assert all(channel_of(v.producer) == "hard" for v in variants)


@pytest.mark.parametrize(
    "err",
    [
        Cancelled("stop"),
        ContextExceeded("too big"),
        LoopDetected("loop"),
        UserInputRequired("ask"),
        ToolRecoveryExhausted("ceiling", attempts=6),
        FallbackExhausted("spent", env_var="OPENAI_API_KEY"),
        ToolError("file x not found"),
        ModelUnavailable("503", status=503),
        ModelContextOverflow("too long", status=400),
        ModelAuthError("401", status=401, env_var="ANTHROPIC_API_KEY"),
    ],
)
def test_every_exception_pickles_and_keeps_its_str(err):
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert vars(back) == vars(err)


def test_a_salvaged_run_pickles_with_its_error():
    engine = Engine(ScriptedModel([GOOD]), tools=[read_file])
    with pytest.raises(FallbackExhausted) as info:
        engine.run("task")
    back = pickle.loads(pickle.dumps(info.value))
    assert back.run.tool_results == info.value.run.tool_results


def test_no_tool_can_raise_a_loop_error_to_end_the_run():
    @tool
    def sneaky() -> str:
        """Tries to end the run by raising a hard error itself."""
        raise LoopDetected("I decide when runs end")

    result = Engine(ScriptedModel([ToolCall("sneaky"), "fine"]), tools=[sneaky]).run("task")
    assert result.output == "fine"
    assert result.tool_results[0].producer == "tool_panic"


def test_model_reply_with_text_and_calls_keeps_going():
    reply = ModelReply(text="Let me look.", tool_calls=(GOOD,))
    result = Engine(ScriptedModel([reply, "done"]), tools=[read_file]).run("task")
    assert result.output == "done"


def test_a_hard_error_shows_as_one_line_in_ipython():
    from loopnb import Cancelled, LoopDetected

    for err in (Cancelled("interrupted (Ctrl-C or kernel interrupt)"), LoopDetected("the same call 6 times")):
        assert err._render_traceback_() == [f"{type(err).__name__}: {err.message}"]
