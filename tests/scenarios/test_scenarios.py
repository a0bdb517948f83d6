"""Every built-in scenario ends as it declares, with the exact texts of DESIGN.md's channel table."""

from __future__ import annotations

import time

import pytest

from loopnb import (
    Cancelled,
    ContextExceeded,
    FakeClock,
    FallbackExhausted,
    LoopDetected,
    Message,
    ModelReply,
    ScriptedModel,
    ToolCall,
    ToolRecoveryExhausted,
    ToolResult,
    scenarios,
)
from loopnb.engine._events import (
    BreakerTransitioned,
    ModelFailed,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    ToolDispatched,
)
from loopnb.scenarios import Outcome, Scenario

ALL = scenarios.names()
SEEDED = [n for n in ALL if n != "hanging_tool"]  # the one with a real 0.2 s timeout


def run(name: str, **kw: object) -> Outcome:
    return scenarios.get(name).run(**kw)  # type: ignore[arg-type]


def contents(outcome: Outcome) -> list[str]:
    return [r.content for r in outcome.run.tool_results]


def calls(outcome: Outcome) -> list[tuple[str, object]]:
    return [
        (c.name, c.arguments)
        for item in outcome.run.messages
        if isinstance(item, ModelReply)
        for c in item.tool_calls
    ]


# -- the registry and the declared endings -------------------------------------------------


def test_the_registry_holds_every_scenario_the_issues_ask_for() -> None:
    asked = {
        "mistyped_path", "hallucinated_tool", "registry_miss", "invalid_arguments", "panicking_tool",
        "hanging_tool", "hook_veto", "cancelled_run", "context_overflow",  # issue 2
        "stubborn_loop", "converging_answers", "flaky_tool_breaker", "fallback_chain",
        "recovery_ceiling", "recovery_success",  # issue 3
    }  # fmt: skip
    assert asked <= set(ALL)
    assert list(scenarios.SCENARIOS) == ALL
    assert all(scenarios.get(n).name == n for n in ALL)


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="mistyped_path"):
        scenarios.get("no_such_scenario")


@pytest.mark.parametrize("name", ALL)
def test_each_scenario_ends_as_declared_well_under_a_second(name: str) -> None:
    t0 = time.perf_counter()
    outcome = run(name)
    elapsed = time.perf_counter() - t0
    assert outcome.as_expected, outcome.mismatch()
    assert outcome.mismatch() is None
    assert elapsed < 0.6, f"{name} took {elapsed:.3f}s"
    ends = [e for e in outcome.events if isinstance(e, RunFinished)]
    assert len(ends) == 1 and outcome.events[-1] is ends[0]
    assert isinstance(outcome.events[0], RunStarted)
    assert [t.turn for t in outcome.turns] == list(range(1, len(outcome.turns) + 1))
    if outcome.error is None:
        assert outcome.run.output is not None and outcome.ending == "ok"
        assert all(t.channel != "hard" for t in outcome.turns)
    else:
        assert outcome.ending == outcome.error.producer == outcome.scenario.ending
        assert outcome.turns[-1].channel == "hard" and outcome.turns[-1].dropped
        assert outcome.run is outcome.error.run


@pytest.mark.parametrize("name", SEEDED)
@pytest.mark.parametrize("seed", range(6))
def test_the_declared_ending_holds_whatever_the_seed(name: str, seed: int) -> None:
    outcome = run(name, seed=seed)
    assert outcome.as_expected, (seed, outcome.mismatch())


@pytest.mark.parametrize("name", SEEDED)
def test_a_scenario_replays_identically(name: str) -> None:
    a, b = run(name), run(name)
    assert (contents(a), calls(a), a.output, a.ending) == (contents(b), calls(b), b.output, b.ending)


# -- the exact texts, row by row -----------------------------------------------------------


def test_mistyped_path_is_the_specs_first_example() -> None:
    o = run("mistyped_path")
    assert calls(o) == [("read_file", {"path": "src/mian.rs"}), ("read_file", {"path": "src/main.rs"})]
    assert o.run.tool_results[0].is_error and contents(o) == ["file src/mian.rs not found", "fn main() {}"]
    assert not o.run.tool_results[1].is_error
    assert o.output == "src/main.rs is `fn main() {}`: it prints nothing."
    assert [t.channel for t in o.turns] == ["soft", "ok", "ok"]


def test_hallucinated_tool_is_pre_answered_and_nothing_is_dispatched() -> None:
    o = run("hallucinated_tool")
    first, second = calls(o)[:2]
    assert first[0] != "read_file" and second == ("read_file", {"path": "README.md"})
    result = o.run.tool_results[0]
    assert result.content == f"tool '{first[0]}' is not available" and result.attempts == 0
    dispatched = [e for e in o.events if isinstance(e, ToolDispatched)]
    assert dispatched[0].executed is False


def test_registry_miss_names_the_alternatives_and_suggests_one() -> None:
    o = run("registry_miss")
    assert contents(o)[0] == (
        "Tool not found: fetch_file. Available: read_file, list_dir Did you mean 'read_file'?"
    )
    assert calls(o)[1] == ("read_file", {"path": "notes.txt"})


def test_invalid_arguments_name_the_field_and_the_model_fixes_it_from_the_schema() -> None:
    o = run("invalid_arguments")
    text = contents(o)[0]
    assert text.startswith("invalid arguments for tool 'head':\n- ")
    assert text.endswith("expected arguments: {path: string, lines: integer}")
    assert o.run.tool_results[0].producer == "invalid_arguments"
    assert calls(o)[1] == ("head", {"path": "server.log", "lines": 3})


def test_panicking_tool_is_caught_and_reported_as_text() -> None:
    o = run("panicking_tool")
    assert contents(o)[:2] == ['Tool "word_stats" panicked: division by zero'] * 2
    assert (
        o.output is not None and 'I could not word_stats(empty.txt): Tool "word_stats" panicked' in o.output
    )


def test_hanging_tool_times_out_and_the_run_continues() -> None:
    t0 = time.perf_counter()
    o = run("hanging_tool")
    assert time.perf_counter() - t0 < 0.6
    assert contents(o) == [
        "Tool 'search_logs' timed out after 0.2s",
        "09:02:45 ERROR upstream timeout: payments",
    ]
    assert o.output == "search_logs(ERROR) returned: 09:02:45 ERROR upstream timeout: payments."


def test_hook_veto_is_read_as_blocked_by_policy_and_routed_around() -> None:
    o = run("hook_veto")
    veto = "blocked by policy: outbound requests are limited to https://docs.example.org/"
    assert contents(o)[0] == veto
    assert o.output is not None and veto in o.output and "Release checklist" in o.output


def test_cancelled_run_salvages_the_completed_turn_and_drops_the_in_flight_one() -> None:
    o = run("cancelled_run")
    assert isinstance(o.error, Cancelled)
    assert str(o.error) == "the operator pressed stop: the agent reached for drop_table"
    assert contents(o) == ["Release checklist: bump the version, tag, push."]
    assert isinstance(o.run.messages[-1], ToolResult)  # the drop_table turn never committed
    assert not any(c[0] == "drop_table" for c in calls(o))


def test_context_overflow_discards_the_scratchpad_whole() -> None:
    o = run("context_overflow")
    assert isinstance(o.error, ContextExceeded)
    assert [type(m) for m in o.run.messages] == [Message, Message]
    assert [m.role for m in o.run.messages] == ["system", "user"]  # type: ignore[union-attr]
    assert o.run.tool_results == []
    assert next(e for e in o.events if isinstance(e, RunFinished)).scratchpad_discarded


def test_vague_error_repeats_until_refused_then_gives_up_on_the_step() -> None:
    o = run("vague_error")
    assert contents(o)[:3] == ["failed"] * 3
    assert contents(o)[3].startswith("dispatch refused before execution: loop detected: ")
    assert calls(o)[4] == ("read_file", {"path": "server.log"})


def test_stubborn_loop_is_refused_twice_then_stopped() -> None:
    o = run("stubborn_loop")
    assert isinstance(o.error, LoopDetected)
    assert contents(o)[:3] == ["file config.yaml not found"] * 3
    assert all(c.startswith("dispatch refused before execution: loop detected: ") for c in contents(o)[3:])
    assert len(contents(o)) == 5 and len(o.turns) == 6
    executed = [e for e in o.events if isinstance(e, ToolDispatched) and e.executed]
    assert len(executed) == 3


def test_converging_answers_are_rejected_then_stopped() -> None:
    o = run("converging_answers")
    assert isinstance(o.error, LoopDetected)
    assert str(o.error).startswith("convergence detected: your last 3 answers are nearly identical")
    rejected = [f.content for t in o.turns for f in t.feedback]
    assert rejected == ["answer rejected: cite the source: link the census table the figure comes from"] * 2


def test_flaky_tool_trips_its_breaker_and_recovers_after_the_cooldown() -> None:
    clock = FakeClock()
    o = run("flaky_tool_breaker", clock=clock)
    assert contents(o)[2] == "tool temporarily unavailable: circuit breaker open"
    moves = [
        (e.previous, e.state) for e in o.events if isinstance(e, BreakerTransitioned) and e.scope == "tool"
    ]
    assert moves == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]
    assert clock.monotonic() == 30.0 and clock.slept == [30.0]
    assert o.turns[-1].breakers["service_status"] == "closed"


def test_fallback_chain_moves_to_the_backup_then_is_exhausted() -> None:
    o = run("fallback_chain")
    assert isinstance(o.error, FallbackExhausted)
    assert [t.model for t in o.turns] == ["primary", "backup", None]
    assert [e.model for e in o.events if isinstance(e, ModelFailed)] == ["primary", "backup"]
    assert str(o.error) == (
        "every model in the fallback chain is spent (primary: breaker open, 60s of cooldown left; "
        "backup: connection refused by the backup's server)"
    )


def test_recovery_ceiling_is_six_calls_then_tool_recovery_exhausted() -> None:
    o = run("recovery_ceiling")
    assert isinstance(o.error, ToolRecoveryExhausted) and o.error.attempts == 6
    executed = [e for e in o.events if isinstance(e, ToolDispatched) and e.executed]
    assert [e.attempt for e in executed] == [0, 1, 2, 3, 4, 5]
    decisions = [e for e in o.events if isinstance(e, RecoveryDecided)]
    assert [d.decision for d in decisions] == ["retry"] * 6 and decisions[-1].max_attempts == 5


def test_recovery_success_corrects_the_retrys_input_never_the_record() -> None:
    o = run("recovery_success")
    sent = calls(o)[0]
    assert sent[0] == "read_file" and sent[1] != {"path": "src/lib.rs"}  # the typo stays on record
    decision = next(e for e in o.events if isinstance(e, RecoveryDecided))
    assert decision.decision == "retry" and decision.corrected_input == {"path": "src/lib.rs"}
    result = o.run.tool_results[0]
    assert (
        not result.is_error and result.attempts == 2 and result.note and result.note.startswith("analysis:")
    )
    assert o.turns[0].recovery_attempts == 1


# -- engine(), overrides and observers -----------------------------------------------------


def test_engine_gives_a_fresh_engine_and_overrides_replace_its_arguments() -> None:
    s = scenarios.get("mistyped_path")
    engine = s.engine(model=ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"}), "done"]))
    result = engine.run(s.task)
    assert result.output == "done" and [r.content for r in result.tool_results] == ["fn main() {}"]
    assert s.engine() is not s.engine()


def test_extra_observers_see_every_event_and_the_outcome_keeps_them_too() -> None:
    seen: list[object] = []
    o = run("stubborn_loop", observers=[seen.append])
    assert seen == list(o.events)


def test_a_scenario_is_a_plain_frozen_description() -> None:
    s = scenarios.get("stubborn_loop")
    assert isinstance(s, Scenario) and s.ending == "loop_detected"
    assert s.soft == frozenset({"tool_error", "loop_refusal"})
    assert "stubborn_loop" in s.describe() and "loop_detected" in s.describe()
    with pytest.raises(AttributeError):
        s.name = "other"  # type: ignore[misc]
