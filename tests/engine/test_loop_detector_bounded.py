"""The loop detector on long runs that fail many ways: its fast key agrees with ``call_key``, its
memory stays bounded (DESIGN.md: it may forget a call not seen in the last 1,000), and forgetting
never hides a loop that is still going."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import Engine, LoopDetected, LoopDetector, ScriptedModel, ToolCall, ToolError, tool
from loopnb.engine._safety import FORGET_AFTER, call_key, lookup_key

atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, float("inf")]),
    st.sampled_from(["", "1", "a", "true", "é"]),
)
values = st.recursive(
    atoms,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2),
    max_leaves=4,
)
arguments = st.dictionaries(st.sampled_from(["n", "path", "x"]), values, max_size=3)


def spelled(args: dict[str, object], as_text: bool) -> object:
    return json.dumps(args) if as_text else args


@settings(max_examples=400, deadline=None, derandomize=True)
@given(arguments, arguments, st.booleans(), st.booleans(), st.sampled_from(["get", "put"]))
def test_the_fast_key_agrees_with_call_key(
    a: dict[str, object], b: dict[str, object], ta: bool, tb: bool, name: str
) -> None:
    first = ToolCall("get", spelled(a, ta))
    second = ToolCall(name, spelled(b, tb))
    assert (lookup_key(first) == lookup_key(second)) == (call_key(first) == call_key(second))


def test_whole_numbers_and_json_text_share_a_key_but_true_is_not_one() -> None:
    keys = {lookup_key(ToolCall("get", args)) for args in ({"n": 1}, {"n": 1.0}, '{"n": 1}', '{"n":1.0}')}
    assert len(keys) == 1
    assert lookup_key(ToolCall("get", {"n": True})) != lookup_key(ToolCall("get", {"n": 1}))
    assert lookup_key(ToolCall("get", {"n": "1"})) != lookup_key(ToolCall("get", {"n": 1}))


@tool
def read(path: str) -> str:
    """Read a file."""
    if path.startswith("missing/"):
        raise ToolError(f"{path} not found")
    return "contents"


class _Kept(LoopDetector):
    watch = None

    def new_run(self):  # type: ignore[no-untyped-def]
        self.watch = super().new_run()
        return self.watch


def test_a_run_failing_thousands_of_ways_keeps_only_the_recent_ones() -> None:
    steps = [ToolCall("read", {"path": f"missing/{i}"}) for i in range(5000)]
    kept = _Kept()
    Engine(ScriptedModel([*steps, "done"]), tools=[read], loop_detector=kept).run("read them")
    held = len(kept.watch.streaks)  # type: ignore[attr-defined]
    assert FORGET_AFTER <= held <= FORGET_AFTER + 64  # forgotten in batches, every 64 calls


def test_forgetting_never_hides_a_loop_that_is_still_going() -> None:
    # 2,000 different failures, then the same failing call six times: the sixth still ends the run
    noise = [ToolCall("read", {"path": f"missing/{i}"}) for i in range(2000)]
    loop = [ToolCall("read", {"path": "missing/again"})] * 6
    try:
        Engine(ScriptedModel([*noise, *loop, "done"]), tools=[read]).run("read them")
    except LoopDetected as exc:
        produced = [r.producer for r in exc.run.tool_results[-5:]]
        assert produced == ["tool_error"] * 3 + ["loop_refusal"] * 2
    else:
        raise AssertionError("the loop went unnoticed")


def test_a_call_seen_again_within_the_window_keeps_its_count() -> None:
    # the failing call comes back every 900 calls: never forgotten, so its fourth time is refused
    steps: list[object] = []
    for round_ in range(4):
        steps.append(ToolCall("read", {"path": "missing/again"}))
        steps += [ToolCall("read", {"path": f"missing/{round_}-{i}"}) for i in range(899)]
    result = Engine(ScriptedModel([*steps, "done"]), tools=[read]).run("read them")
    again = [
        r.producer
        for r, c in zip(result.tool_results, steps, strict=False)
        if c.arguments == {"path": "missing/again"}
    ]  # type: ignore[union-attr]
    assert again == ["tool_error"] * 3 + ["loop_refusal"]
