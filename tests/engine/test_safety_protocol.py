"""One protocol for safety systems: loopnb's three are instances of it, and a user's plugs in beside them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

import loopnb
from loopnb import (
    Cancelled,
    ConvergenceDetector,
    Engine,
    FunctionModel,
    LoopDetected,
    LoopDetector,
    LoopnbWarning,
    Message,
    SafetySignal,
    SafetySystem,
    SafetyWatch,
    ScriptedModel,
    ToolCall,
    UserInputRequired,
)
from loopnb.engine._events import DetectorName
from loopnb.engine._safety import MaxTurns

from .conftest import Events, add, read_file

README = Path(loopnb.__file__).resolve().parents[1] / "README.md"


def adds(n: int) -> list[ToolCall]:
    return [ToolCall("add", {"a": i, "b": 1}) for i in range(n)]


class Says:
    """A user's safety system: its watch answers ``hook`` with ``signal`` from the ``at``-th time on
    (and counts how often it was asked)."""

    def __init__(self, hook: str, signal: object, *, at: int = 1, name: str = "says") -> None:
        self.hook, self.signal, self.at, self.name = hook, signal, at, name
        self.asked = 0

    def new_run(self) -> SafetyWatch:
        system = self

        def answer(watch: SafetyWatch, *args: object) -> object:
            system.asked += 1
            if system.asked < system.at:
                return None
            if isinstance(system.signal, BaseException):
                raise system.signal
            return system.signal

        return type("Watch", (SafetyWatch,), {self.hook: answer})()


def test_the_three_built_ins_are_safety_systems_named_once():
    systems = [LoopDetector(), ConvergenceDetector(), MaxTurns(3)]
    assert all(isinstance(system, SafetySystem) for system in systems)
    assert all(isinstance(system.new_run(), SafetyWatch) for system in systems)
    assert tuple(system.name for system in systems) == get_args(DetectorName)


def test_an_engine_asks_its_systems_in_order_the_users_last():
    budget = Says("before_call", None)
    engine = Engine(ScriptedModel(["done"]), max_turns=4, convergence=ConvergenceDetector(), safety=[budget])
    systems = engine.safety_systems()
    assert [type(s) for s in systems[:3]] == [LoopDetector, MaxTurns, ConvergenceDetector]
    assert systems[3] is budget
    assert engine.safety == (budget,)
    assert Engine(ScriptedModel(["done"]), loop_detector=None).safety_systems() == []


def test_max_turns_as_a_safety_system_of_ones_own_is_max_turns():
    kept, own = Events(), Events()
    for observer, kwargs in ((kept, {"max_turns": 2}), (own, {"safety": [MaxTurns(2)]})):
        engine = Engine(ScriptedModel(adds(5)), tools=[add], observers=[observer], **kwargs)
        with pytest.raises(LoopDetected, match="the run reached max_turns=2"):
            engine.run("task")
    assert [(e.detector, e.action, e.count) for e in kept.of("detector_fired")] == [("max_turns", "stop", 3)]
    assert [(e.detector, e.action) for e in own.of("detector_fired")] == [("max_turns", "stop")]


def test_a_refusal_is_read_in_place_of_the_result_and_the_call_never_runs(events):
    ran = []

    @loopnb.tool
    def spend(amount: int) -> str:
        """Spend money."""
        ran.append(amount)
        return "spent"

    engine = Engine(
        ScriptedModel([ToolCall("spend", {"amount": 1}), ToolCall("spend", {"amount": 2}), "done"]),
        tools=[spend],
        safety=[Says("before_call", SafetySignal("refuse", "the budget is spent"), at=2)],
        observers=[events],
    )
    result = engine.run("task")
    assert ran == [1]
    refused = result.tool_results[1]
    assert (refused.is_error, refused.producer) == (True, "loop_refusal")
    assert refused.content == "dispatch refused before execution: the budget is spent"
    assert [d.executed for d in events.of("tool_dispatched")] == [True, False]


@pytest.mark.parametrize("hook", ["at_turn", "before_call", "after_result"])
def test_a_warning_reaches_the_model_after_the_turns_results_and_the_run_goes_on(hook):
    seen: list[list[Message]] = []
    steps = iter([ToolCall("add", {"a": 1, "b": 2}), "done"])

    def model(messages, tools):
        seen.append([m for m in messages if isinstance(m, Message) and m.is_error])
        return next(steps)

    warn = SafetySignal("warn", "slow down: this is a warning")
    engine = Engine(FunctionModel(model), tools=[add], safety=[Says(hook, warn, at=1)])
    result = engine.run("task")
    assert result.output == "done"
    assert result.tool_results[0].content == "3"  # a warning never stops the call
    note = seen[1][0]
    assert (note.content, note.producer, note.role) == (warn.text, "convergence_warning", "user")
    assert result.messages.index(note) > result.messages.index(result.tool_results[0])


def test_a_warning_after_a_rejected_answer_is_read_with_the_rejection(events):
    engine = Engine(
        ScriptedModel(["maybe", "yes"]),
        done=lambda text: text == "yes",
        safety=[Says("after_rejection", SafetySignal("warn", "say yes"))],
        observers=[events],
    )
    engine.run("task")
    (turn, _) = events.turns()
    assert [(m.producer, m.content) for m in turn.feedback] == [
        ("completion_rejected", "answer rejected: the answer did not pass the completion check"),
        ("convergence_warning", "say yes"),
    ]


def test_a_stop_ends_the_run_hard_and_salvages_the_completed_turns(events):
    engine = Engine(
        ScriptedModel(adds(5)),
        tools=[add],
        safety=[Says("before_call", SafetySignal("stop", "three adds are enough"), at=4)],
        observers=[events],
    )
    with pytest.raises(LoopDetected) as info:
        engine.run("task")
    err = info.value
    assert err.message == "three adds are enough"
    assert [r.content for r in err.run.tool_results] == ["1", "2", "3"]
    assert err.run.turns == 4
    assert events.of("detector_fired") == []  # a user's system is recorded by what it did
    (hard,) = events.of("hard_error_raised")
    assert (hard.error, hard.message, hard.turn) == ("LoopDetected", "three adds are enough", 4)
    assert events.of("turn_finished")[-1].dropped


def test_ask_user_ends_the_run_with_user_input_required():
    engine = Engine(
        ScriptedModel(adds(3)),
        tools=[add],
        safety=[Says("after_result", SafetySignal("ask_user", "which numbers?"), at=2)],
    )
    with pytest.raises(UserInputRequired, match="which numbers") as info:
        engine.run("task")
    assert [r.content for r in info.value.run.tool_results] == ["1"]


BROKEN = [
    ("before_call", ZeroDivisionError("division by zero"), "before_call raised ZeroDivisionError"),
    ("after_result", SystemExit(3), "after_result raised SystemExit"),
    ("at_turn", "stop", "at_turn answered 'stop', not a SafetySignal or None"),
    (
        "after_result",
        SafetySignal("refuse", "no"),
        "after_result answered refuse, which only before_call may",
    ),
]


@pytest.mark.parametrize(("hook", "answer", "said"), BROKEN, ids=lambda v: str(v)[:30])
def test_a_broken_system_is_detached_with_a_warning_and_the_run_goes_on(hook, answer, said):
    broken = Says(hook, answer, name="budget")
    engine = Engine(ScriptedModel([*adds(3), "done"]), tools=[add], safety=[broken])
    with pytest.warns(LoopnbWarning, match=re.escape(f"safety system 'budget': {said}")) as caught:
        result = engine.run("task")
    assert result.output == "done"
    assert [r.content for r in result.tool_results] == ["1", "2", "3"]
    assert broken.asked == 1  # detached: never asked again in that run
    assert len(caught) == 1
    assert "it was detached from this run and the run goes on" in str(caught[0].message)


def test_a_system_whose_new_run_raises_sits_that_run_out():
    class Broken:
        name = "broken"

        def new_run(self) -> SafetyWatch:
            raise RuntimeError("no watch today")

    engine = Engine(ScriptedModel([*adds(1), "done"]), tools=[add], safety=[Broken()])
    with pytest.warns(
        LoopnbWarning, match="safety system 'broken': new_run raised RuntimeError: no watch today"
    ):
        assert engine.run("task").output == "done"


def test_ctrl_c_in_a_hook_ends_the_run_as_cancelled():
    engine = Engine(ScriptedModel(adds(2)), tools=[add], safety=[Says("before_call", KeyboardInterrupt())])
    with pytest.raises(Cancelled):
        engine.run("task")


def test_loopnbs_own_detectors_still_act_beside_a_users_system(events):
    engine = Engine(
        ScriptedModel([ToolCall("read_file", {"path": "src/mian.rs"})] * 6),
        tools=[read_file],
        safety=[Says("after_result", None)],
        observers=[events],
    )
    with pytest.raises(LoopDetected):
        engine.run("task")
    assert [e.action for e in events.of("detector_fired")] == ["refuse", "refuse", "stop"]


def test_the_runs_settings_name_the_users_systems(events):
    class Named(Says):
        def __repr__(self) -> str:
            return "CallBudget(search, 3)"

    Engine(ScriptedModel(["done"]), safety=[Named("at_turn", None)], observers=[events]).run("task")
    Engine(ScriptedModel(["done"]), observers=[events]).run("task")
    first, second = (e.settings for e in events.of("run_started"))
    assert first["safety"] == ["CallBudget(search, 3)"]
    assert "safety" not in second


@pytest.mark.parametrize("safety", ["loop", [object()], [LoopDetector, 3], 7])
def test_what_is_not_a_safety_system_is_refused_at_construction(safety):
    with pytest.raises(TypeError, match=r"Engine: (a safety system has a name|safety must be a list)"):
        Engine(ScriptedModel(["done"]), safety=safety)


def test_a_signal_says_what_is_wrong_with_it():
    with pytest.raises(ValueError, match="action must be one of refuse, stop, warn, ask_user; got 'halt'"):
        SafetySignal("halt", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str, got int"):
        SafetySignal("stop", 3)  # type: ignore[arg-type]


def test_the_readmes_example_stops_the_run_after_three_calls():
    section = README.read_text(encoding="utf-8").partition("## Adding a safety system")[2]
    code = section.partition("```python\n")[2].partition("```")[0]
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(code, str(README), "exec"), namespace)
    stopped = namespace["stopped"]
    assert isinstance(stopped, LoopDetected)
    assert stopped.message == "search was called more than 3 times"
    assert stopped.run is not None and [r.content for r in stopped.run.tool_results] == [
        f"no notes match 'retries {i}'" for i in range(3)
    ]


def test_a_run_a_users_system_acted_on_is_recorded_saved_and_loaded(tmp_path):
    recorder = loopnb.Recorder()
    engine = Engine(
        ScriptedModel(adds(4)),
        tools=[add],
        safety=[
            Says("before_call", SafetySignal("refuse", "not this one"), at=2, name="picky"),
            Says("at_turn", SafetySignal("stop", "enough"), at=4, name="patient"),
            Says("after_result", SafetySignal("warn", "careful"), name="chatty"),
        ],
        observers=[recorder],
    )
    with pytest.raises(LoopDetected, match="enough"):
        engine.run("task")
    turns = recorder.turns
    producers = ["convergence_warning", "loop_refusal", "loop_refusal", "loop_detected"]
    assert turns["producer"].astype(object).tolist() == producers
    assert recorder.events["kind"].eq("detector_fired").sum() == 0
    recorder.save(tmp_path / "run.jsonl")
    loaded = loopnb.load(tmp_path / "run.jsonl")
    assert loaded.turns["producer"].astype(object).tolist() == producers


class FailureCounter:
    """Counts the failed results of a run; idle (so asked about failures alone) unless ``busy``."""

    name = "failures"

    def __init__(self, *, busy: bool = False, idle_raises: bool = False) -> None:
        self.busy, self.idle_raises = busy, idle_raises
        self.seen: list[bool] = []

    def new_run(self) -> SafetyWatch:
        system = self

        class Watch(SafetyWatch):
            @property
            def idle(self) -> bool:
                if system.idle_raises:
                    raise RuntimeError("idle? who knows")
                return not system.busy

            def after_result(self, call, result):
                system.seen.append(result.is_error)

        return Watch()


def model_of_one_success_and_one_failure() -> ScriptedModel:
    return ScriptedModel(
        [ToolCall("read_file", {"path": "src/main.rs"}), ToolCall("read_file", {"path": "x"}), "ok"]
    )


def test_an_idle_watch_is_asked_about_failed_results_alone():
    quiet, busy = FailureCounter(), FailureCounter(busy=True)
    for counter in (quiet, busy):
        Engine(model_of_one_success_and_one_failure(), tools=[read_file], safety=[counter]).run("task")
    assert quiet.seen == [True]
    assert busy.seen == [False, True]


def test_the_loop_detector_is_idle_until_a_call_fails():
    watch = LoopDetector().new_run()
    assert watch.idle
    watch.after_result(ToolCall("t", {}), loopnb.ToolResult("no", is_error=True))
    assert not watch.idle
    watch.after_result(ToolCall("t", {}), loopnb.ToolResult("yes"))
    assert watch.idle


def test_a_watch_whose_idle_raises_is_detached():
    broken = FailureCounter(idle_raises=True)
    engine = Engine(model_of_one_success_and_one_failure(), tools=[read_file], safety=[broken])
    with pytest.warns(LoopnbWarning, match="safety system 'failures': idle raised RuntimeError: idle"):
        assert engine.run("task").output == "ok"
    assert broken.seen == []


def test_a_watch_of_any_class_with_the_hooks_it_needs_is_asked():
    class Plain:  # not a SafetyWatch: no idle, no other hooks
        def __init__(self) -> None:
            self.calls: list[str] = []

        def before_call(self, call):
            self.calls.append(call.name)

    watch = Plain()

    class System:
        name = "plain"

        def new_run(self):
            return watch

    result = Engine(ScriptedModel([*adds(2), "done"]), tools=[add], safety=[System()]).run("task")
    assert result.output == "done"
    assert watch.calls == ["add", "add"]


class Gatekeeper:
    """Refuses ``blocked`` calls while ``armed`` (a list the test changes as the run goes), and
    records which hooks it was asked."""

    name = "gate"

    def __init__(self, armed: object, *, blocked: str = "add") -> None:
        self.is_armed, self.blocked = armed, blocked
        self.asked: list[str] = []

    def new_run(self) -> SafetyWatch:
        system = self

        class Watch(SafetyWatch):
            @property
            def armed(self) -> bool:
                if isinstance(system.is_armed, Exception):
                    raise system.is_armed
                return system.is_armed  # type: ignore[return-value]

            def before_call(self, call):
                system.asked.append(f"before {call.arguments['a']}")
                return SafetySignal("refuse", "not now") if call.name == system.blocked else None

            def after_result(self, call, result):
                system.asked.append(f"after {call.arguments['a']}")

        return Watch()


def test_a_watch_not_armed_is_not_asked_before_a_call_but_is_asked_after_each():
    gate = Gatekeeper(False)
    result = Engine(ScriptedModel([*adds(2), "done"]), tools=[add], safety=[gate]).run("task")
    assert [r.producer for r in result.tool_results] == [None, None]  # nothing refused
    assert gate.asked == ["after 0", "after 1"]


def test_an_armed_watch_is_asked_before_each_call_and_refuses():
    gate = Gatekeeper(True)
    result = Engine(ScriptedModel([*adds(2), "done"]), tools=[add], safety=[gate]).run("task")
    assert [r.producer for r in result.tool_results] == ["loop_refusal", "loop_refusal"]
    assert gate.asked == ["before 0", "before 1"]  # a refused call is not dispatched, nor asked after


def test_armed_is_read_again_after_each_result():
    gate = Gatekeeper(False)

    class Arming(type(gate.new_run())):  # type: ignore[misc]
        def after_result(self, call, result):
            super().after_result(call, result)
            gate.is_armed = True  # the first result arms it: the second call is refused

    class System:
        name = "gate"

        def new_run(self):
            return Arming()

    result = Engine(ScriptedModel([*adds(2), "done"]), tools=[add], safety=[System()]).run("task")
    assert [r.producer for r in result.tool_results] == [None, "loop_refusal"]
    assert gate.asked == ["after 0", "before 1"]


@pytest.mark.parametrize("answer", [None, "no", 0])
def test_armed_answering_anything_but_false_counts_as_armed(answer):
    gate = Gatekeeper(answer)
    Engine(ScriptedModel([*adds(1), "done"]), tools=[add], safety=[gate]).run("task")
    assert gate.asked == ["before 0"]


def test_a_watch_whose_armed_raises_is_detached():
    gate = Gatekeeper(RuntimeError("armed? who knows"))
    engine = Engine(ScriptedModel([*adds(2), "done"]), tools=[add], safety=[gate])
    with pytest.warns(LoopnbWarning, match="safety system 'gate': armed raised RuntimeError: armed"):
        result = engine.run("task")
    assert result.output == "done" and gate.asked == []


def test_the_loop_detector_is_armed_once_a_streak_could_be_refused():
    watch = LoopDetector(warn_after=2).new_run()
    call, failed = ToolCall("t", {}), loopnb.ToolResult("no", is_error=True)
    assert not watch.armed
    watch.after_result(call, failed)
    assert not watch.armed and not watch.idle  # one failure: remembered, nothing to refuse yet
    watch.after_result(call, failed)
    assert watch.armed  # the next identical call is refused
    watch.after_result(call, loopnb.ToolResult("yes"))
    assert not watch.armed and watch.idle
