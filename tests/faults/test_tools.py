"""Faults in loopnb tools, acted out by the dispatcher: each kind on a scripted run, as the spec says."""

from __future__ import annotations

import inspect

import pytest

from loopnb import (
    Engine,
    FakeClock,
    Recorder,
    ScriptedModel,
    Tool,
    ToolCall,
    ToolError,
    faults,
    inject,
    tool,
)
from loopnb.faults import Fault


def make_read_file() -> Tool:
    @tool
    def read_file(path: str) -> str:
        """Read a UTF-8 text file."""
        if path != "src/main.rs":
            raise ToolError(f"file {path} not found")
        return "fn main() {}"

    return read_file


@tool
def list_dir(path: str) -> str:
    """List a directory."""
    return "src/main.rs"


def run(fault: Fault | str, *, timeout: float | None = None, calls: int = 2, clock: FakeClock | None = None):
    """A scripted run calling read_file ``calls`` times with the fault injected; (result, clock)."""
    clock = clock or FakeClock()
    steps: list = [ToolCall("read_file", {"path": "src/main.rs"}) for _ in range(calls)] + ["done"]
    engine = Engine(
        ScriptedModel(steps),
        tools=inject([make_read_file(), list_dir], {"read_file": fault}),
        clock=clock,
        timeout=timeout,
    )
    return engine.run("What does src/main.rs do?"), clock


def seen(result) -> list[tuple[str, bool, str | None, str | None]]:
    return [(r.content, r.is_error, r.producer, r.injected) for r in result.tool_results]


def test_error_is_the_tools_soft_error_with_that_text() -> None:
    result, _ = run(faults.error("disk busy").first(1))
    assert seen(result) == [
        ("disk busy", True, "tool_error", 'error("disk busy").first(1)'),
        ("fn main() {}", False, None, None),
    ]


def test_crash_is_a_panic_the_dispatcher_reports_softly() -> None:
    result, _ = run(faults.crash(ValueError("bad input")).first(1))
    assert seen(result)[0] == (
        'Tool "read_file" panicked: bad input',
        True,
        "tool_panic",
        'crash(ValueError("bad input")).first(1)',
    )


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_hang_outlasts_the_timeout_on_the_runs_clock(timeout: float | None) -> None:
    result, clock = run(faults.hang(30).first(1), timeout=timeout)
    first = seen(result)[0]
    if timeout is None:  # nothing to stop it: it fails after its seconds, as a socket's timeout does
        assert first == (
            'Tool "read_file" panicked: no answer after 30s',
            True,
            "tool_panic",
            "hang(30).first(1)",
        )
        assert clock.monotonic() == 30.0
    else:
        assert first == ("Tool 'read_file' timed out after 5s", True, "timeout", "hang(30).first(1)")
        assert clock.monotonic() == 5.0
    assert seen(result)[1] == ("fn main() {}", False, None, None)


def test_wrong_and_empty_are_plausible_results_with_no_error_flag() -> None:
    wrong, _ = run(faults.wrong("fn main() { panic!() }"), calls=1)
    assert seen(wrong) == [("fn main() { panic!() }", False, None, 'wrong("fn main() { panic!() }")')]
    empty, _ = run(faults.empty(), calls=1)
    assert seen(empty) == [("", False, None, "empty()")]
    shaped, _ = run(faults.wrong({"lines": 0}), calls=1)
    assert seen(shaped)[0][0] == '{"lines": 0}'


def test_slow_runs_the_real_tool_late_and_a_shorter_timeout_fires_first() -> None:
    result, clock = run(faults.slow(2), calls=1)
    assert seen(result) == [("fn main() {}", False, None, "slow(2)")] and clock.monotonic() == 2.0
    late, clock = run(faults.slow(2), calls=1, timeout=1.5)
    assert seen(late) == [("Tool 'read_file' timed out after 1.5s", True, "timeout", "slow(2)")]
    assert clock.monotonic() == 1.5


def test_slow_async_tool_under_a_timeout_gets_the_time_left() -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        return "page"

    clock = FakeClock()
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "x"}), "done"]),
        tools=inject([fetch], {"fetch": faults.slow(1)}),
        clock=clock,
        timeout=5,
    )
    assert [(r.content, r.injected) for r in engine.run("t").tool_results] == [("page", "slow(1)")]


def test_when_fails_only_the_calls_with_those_arguments() -> None:
    engine = Engine(
        ScriptedModel(
            [ToolCall("read_file", {"path": "a"}), ToolCall("read_file", {"path": "src/main.rs"}), "done"]
        ),
        tools=inject([make_read_file()], {"read_file": faults.error("locked").when(path="src/main.rs")}),
    )
    assert seen(engine.run("t")) == [
        ("file a not found", True, "tool_error", None),
        ("locked", True, "tool_error", 'error("locked").when(path="src/main.rs")'),
    ]


def test_first_counts_per_run_so_each_run_starts_again() -> None:
    tools = inject([make_read_file()], {"read_file": faults.error("x").first(1)})
    for _ in range(2):
        engine = Engine(
            ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"})] * 2 + ["done"]), tools=tools
        )
        assert [r.is_error for r in engine.run("t").tool_results] == [True, False]
    assert len(tools.injections) == 2
    assert {i.run_id for i in tools.injections} != {""} and len({i.run_id for i in tools.injections}) == 2


def test_the_log_names_each_call() -> None:
    tools = inject([make_read_file()], {"read_file": faults.error("x").first(1)})
    result = Engine(ScriptedModel([ToolCall("read_file", {"path": "a"}, id="c-7"), "done"]), tools=tools).run(
        "t"
    )
    (entry,) = tools.injections
    assert (entry.call_id, entry.tool, entry.label) == ("c-7", "read_file", 'error("x").first(1)')
    assert result.tool_results[0].call_id == "c-7"


def test_recovery_retries_ask_the_plan_again() -> None:
    from loopnb import RetryWithBackoff

    engine = Engine(
        ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"}), "done"]),
        tools=inject([make_read_file()], {"read_file": faults.error("busy").first(2)}),
        recovery=RetryWithBackoff(on=("tool_error",)),
        clock=FakeClock(),
    )
    (result,) = engine.run("t").tool_results
    assert (result.content, result.is_error, result.injected) == ("fn main() {}", False, None)


def test_the_original_tool_and_list_are_untouched() -> None:
    original = make_read_file()
    tools = [original, list_dir]
    injected = inject(tools, {"read_file": faults.error("x")})
    assert tools == [original, list_dir] and original.stand_in is None
    assert injected[0] is not original and injected[1] is list_dir
    assert injected[0].name == "read_file" and injected[0].spec == original.spec
    assert inspect.signature(injected[0].fn) == inspect.signature(original.fn)
    clean = Engine(ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"}), "done"]), tools=[original])
    assert not clean.run("t").tool_results[0].is_error


def test_one_tool_injected_and_injected_twice() -> None:
    read_file = make_read_file()
    once = inject(read_file, faults.error("first plan").first(1))
    twice = inject(once, {"read_file": faults.error("second plan").first(1)})
    assert isinstance(once, Tool) and once.stand_in.injections == []
    engine = Engine(
        ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"})] * 3 + ["done"]), tools=[twice]
    )
    assert [r.content for r in engine.run("t").tool_results] == ["second plan", "first plan", "fn main() {}"]


def test_a_tuple_stays_a_tuple_and_functions_in_a_list_become_tools() -> None:
    def read(path: str) -> str:
        """Read."""
        return "x"

    assert isinstance(inject((list_dir,), {"list_dir": faults.empty()}), tuple)
    (made,) = inject([read], {"read": faults.error("no")})
    assert isinstance(made, Tool) and made.name == "read"


def test_a_key_naming_no_tool_lists_the_tools_it_has() -> None:
    with pytest.raises(ValueError) as caught:
        inject([make_read_file(), list_dir], {"read_fiel": faults.error()})
    assert str(caught.value) == (
        "inject: a list of tools has no tool named 'read_fiel'; its tools are read_file, list_dir; "
        "did you mean 'read_file'?"
    )
    with pytest.raises(ValueError, match=r"its tools are read_file, list_dir$"):
        inject([make_read_file(), list_dir], {"search": faults.error()})


def test_one_fault_for_several_tools_must_say_which() -> None:
    with pytest.raises(TypeError, match=r"name the one each fault is for: \{'read_file': fault\}"):
        inject([make_read_file(), list_dir], faults.error())


def test_a_models_fault_on_a_tool_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unavailable\(\) does not apply to a list of tools"):
        inject([make_read_file()], {"read_file": faults.unavailable()})


def test_labels_are_taken_in_place_of_faults() -> None:
    result, _ = run('error("disk busy").first(1)')
    assert seen(result)[0][3] == 'error("disk busy").first(1)'


def test_the_recorded_events_and_turns_carry_the_label() -> None:
    recorder = Recorder()
    engine = Engine(
        ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"})] * 2 + ["done"]),
        tools=inject([make_read_file()], {"read_file": faults.error("disk busy").first(1)}),
        observers=[recorder],
    )
    engine.run("t")
    turns = recorder.turns
    assert turns["injected"].iloc[0] == 'error("disk busy").first(1)'
    assert turns["injected"].isna().tolist() == [False, True, True]
    events = recorder.events
    dispatched = events[events["kind"] == "tool_dispatched"]
    assert dispatched["injected"].iloc[0] == 'error("disk busy").first(1)'
    assert dispatched["injected"].isna().iloc[1]
