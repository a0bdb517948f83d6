"""Faults in a model: the fallback chain takes each as it would a real failure, marked as injected."""

from __future__ import annotations

import pytest

from loopnb import (
    Engine,
    FakeClock,
    FallbackChain,
    FallbackExhausted,
    ModelUnavailable,
    Recorder,
    ScriptedModel,
    faults,
    inject,
)
from loopnb.faults import Fault


def run(fault: Fault | str, *, fallback: bool = False):
    clock = FakeClock()
    recorder = Recorder()
    model = inject(ScriptedModel(["done"]), fault, clock=clock)
    chain = FallbackChain([model, ScriptedModel(["from the backup"])]) if fallback else model
    try:
        output = Engine(chain, clock=clock, observers=[recorder]).run("t").output
    except FallbackExhausted as err:
        output = f"FallbackExhausted: {err}"
    failed = [
        (e.model, e.error, e.status, e.injected) for e in recorder.event_objects if e.kind == "model_failed"
    ]
    return output, failed, clock, recorder


def test_unavailable_is_a_model_unavailable_the_chain_backs_off_from() -> None:
    output, failed, clock, _ = run(faults.unavailable(429, retry_after=2).first(1))
    assert output == "done"
    assert failed == [
        ("scripted", "HTTP 429 Too Many Requests", 429, "unavailable(429, retry_after=2).first(1)")
    ]
    assert clock.monotonic() == 2.0  # the server's Retry-After, waited on the run's clock


def test_a_permanent_failure_spends_the_chain_and_the_next_model_answers() -> None:
    output, failed, _, _ = run(faults.unavailable(), fallback=True)
    assert output == "from the backup"
    assert [f[3] for f in failed] == ["unavailable()"] * len(failed) and failed


def test_error_and_crash_are_failures_of_the_model() -> None:
    output, failed, _, _ = run(faults.error("overloaded"))
    assert output.startswith(
        "FallbackExhausted: every model in the fallback chain is spent (scripted: overloaded"
    )
    assert failed[0] == ("scripted", "overloaded", None, 'error("overloaded")')
    output, failed, _, _ = run(faults.crash(ValueError("bad reply")).first(1))
    assert output == "done"
    assert failed == [("scripted", "ValueError: bad reply", None, 'crash(ValueError("bad reply")).first(1)')]


def test_hang_waits_then_times_out_and_slow_answers_late() -> None:
    output, failed, clock, _ = run(faults.hang(30).first(1))
    assert output == "done" and failed[0][1:] == ("no answer after 30s", None, "hang(30).first(1)")
    assert clock.monotonic() >= 30.0
    output, failed, clock, _ = run(faults.slow(3))
    assert (output, failed, clock.monotonic()) == ("done", [], 3.0)


def test_the_turn_that_met_an_injected_model_failure_is_marked() -> None:
    _, _, _, recorder = run(faults.unavailable().first(1))
    assert recorder.turns["injected"].tolist() == ["unavailable().first(1)"]


def test_an_injected_model_keeps_its_name_and_log_and_the_original_is_untouched() -> None:
    original = ScriptedModel(["done"])
    model = inject(original, faults.unavailable().first(1))
    assert model.name == original.name and model is not original
    with pytest.raises(ModelUnavailable) as caught:
        import asyncio

        asyncio.run(model.complete([], []))
    assert caught.value.injected == "unavailable().first(1)"
    assert [(i.tool, i.label) for i in model.injections] == [("scripted", "unavailable().first(1)")]
    assert Engine(original).run("t").output == "done"


def test_a_model_takes_one_fault_and_no_when() -> None:
    with pytest.raises(
        TypeError, match=r"a model takes one fault \(faults.unavailable\(\), ...\), not a mapping"
    ):
        inject(ScriptedModel(["x"]), {"scripted": faults.unavailable()})
    with pytest.raises(ValueError, match=r"wrong\(\) does not apply to a model"):
        inject(ScriptedModel(["x"]), faults.wrong("x"))
    with pytest.raises(ValueError, match=r"has \.when\(\.\.\.\), but a model 'scripted' has no arguments"):
        inject(ScriptedModel(["x"]), faults.error().when(a=1))
    with pytest.raises(TypeError, match=r"a FallbackChain is several models"):
        inject(FallbackChain([ScriptedModel(["x"])]), faults.unavailable())
