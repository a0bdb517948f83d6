"""Outside an engine, an injected ``hang`` waits on ``inject``'s clock as ``slow`` does: a model's
request or a plain function given a ``FakeClock`` moves it, and no real time passes."""

from __future__ import annotations

import asyncio
import time

import pytest

from loopnb import Engine, FakeClock, ModelUnavailable, Recorder, ScriptedModel, faults, inject


def test_a_hung_model_request_waits_on_injects_clock() -> None:
    clock = FakeClock()
    model = inject(ScriptedModel(["done"]), faults.hang(30).first(1), clock=clock)
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable):
        asyncio.run(model.complete([], []))
    assert clock.monotonic() == pytest.approx(30.0) and time.perf_counter() - started < 1.0


def test_a_run_on_a_hung_model_goes_on_to_its_answer_in_no_real_time() -> None:
    clock = FakeClock()
    recorder = Recorder()
    model = inject(ScriptedModel(["done"]), faults.hang(30).first(1), clock=clock)
    started = time.perf_counter()
    assert Engine(model, clock=clock, observers=[recorder]).run("t").output == "done"
    assert time.perf_counter() - started < 1.0
    failed = recorder.events[recorder.events["kind"] == "model_failed"]
    assert failed["injected"].tolist() == ["hang(30.0).first(1)"]


def test_a_hung_plain_function_waits_on_injects_clock() -> None:
    def read(path: str) -> str:
        return path

    clock = FakeClock()
    hung = inject(read, faults.hang(30), clock=clock)
    started = time.perf_counter()
    with pytest.raises(Exception, match="did not answer for 30"):
        hung("a")
    assert clock.monotonic() == pytest.approx(30.0) and time.perf_counter() - started < 1.0
