"""The loop detector asks nothing of a call while no streak is long enough to act on (issue 30,
item 2), and says exactly what the rule says: counted per call, a success or a different failure
text starting over, refused from ``warn_after`` on, stopped past ``stop_after``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import LoopDetector, ToolCall
from loopnb.engine import _safety
from loopnb.engine._messages import ToolResult
from loopnb.engine._safety import FORGET_AFTER, LoopWatch

KEYS = ("a", "b", "c")
OUTCOMES = (None, "not found", "denied")  # None: the call succeeds; else the failure's text


def by_the_rule(steps: list[tuple[str, str | None]], warn_after: int, stop_after: int) -> list[str]:
    """What happens to each call, by DESIGN.md's rule, worked out by hand (no forgetting: fewer
    than ``FORGET_AFTER`` calls)."""
    streaks: dict[str, tuple[str, int]] = {}
    said = []
    for key, text in steps:
        last, count = streaks.get(key, ("", 0))
        if count >= stop_after:
            said.append(f"stop {count + 1}")
            break
        if count >= warn_after:
            streaks[key] = (last, count + 1)
            said.append(f"refuse {count + 1}")
            continue
        if text is None:
            streaks.pop(key, None)
            said.append("ok")
        else:
            streaks[key] = (text, count + 1 if last == text else 1)
            said.append("failed")
    return said


def asked(watch: LoopWatch, steps: list[tuple[str, str | None]]) -> list[str]:
    """The watch asked before and after each call, as an engine with a busy watch asks it."""
    said = []
    for key, text in steps:
        call = ToolCall("read", {"path": key})
        signal = watch.before_call(call)
        if signal is not None:
            said.append(f"{signal.action} {signal.count}")
            if signal.action == "stop":
                break
            continue
        result = ToolResult("contents" if text is None else text, is_error=text is not None)
        watch.after_result(call, result)
        said.append("failed" if text is not None else "ok")
        warn_after = watch.detector.warn_after
        assert watch.long_streaks == sum(count >= warn_after for _, count, _ in watch.streaks.values())
    return said


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(OUTCOMES)), max_size=40),
    st.integers(1, 3),
    st.integers(0, 2),
)
def test_the_watch_says_what_the_rule_says(steps, warn_after, more) -> None:
    detector = LoopDetector(warn_after=warn_after, stop_after=warn_after + more)
    assert asked(detector.new_run(), steps) == by_the_rule(steps, warn_after, warn_after + more)


def test_before_a_call_nothing_is_built_or_looked_up_while_no_streak_could_act(monkeypatch) -> None:
    built: list[ToolCall] = []
    lookup_key = _safety.lookup_key
    monkeypatch.setattr(_safety, "lookup_key", lambda call: built.append(call) or lookup_key(call))
    watch = LoopDetector().new_run()  # refuses from the 4th identical failure
    steps = [ToolCall("read", {"path": p}) for p in ("x", "y", "x", "z", "y")]
    for call in steps:
        assert watch.before_call(call) is None
        assert built == []  # two failures of one call at most: nothing to refuse, whatever the call
        watch.after_result(call, ToolResult("missing", is_error=True))
        assert built == [call]  # its key, built once, after it
        built.clear()
    assert watch.long_streaks == 0 and [count for _, count, _ in watch.streaks.values()] == [2, 1, 2]
    again = ToolCall("read", {"path": "x"})
    watch.after_result(again, ToolResult("missing", is_error=True))  # x: 3 in a row
    assert watch.long_streaks == 1
    built.clear()
    signal = watch.before_call(again)
    assert signal is not None and (signal.action, signal.count) == ("refuse", 4) and built == [again]


def test_forgetting_disarms_what_it_drops() -> None:
    watch = LoopDetector(warn_after=1, stop_after=3).new_run()  # every failing call is armed at once
    for i in range(3 * FORGET_AFTER):
        call = ToolCall("read", {"path": f"missing/{i}"})
        assert watch.before_call(call) is None
        watch.after_result(call, ToolResult("missing", is_error=True))
    assert FORGET_AFTER <= len(watch.streaks) <= FORGET_AFTER + 64
    assert watch.long_streaks == len(watch.streaks)
