"""``JsonlProcessor``: what it writes, when, and that it never gets in a run's way."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime

import pytest
from agents import Agent, RunConfig, Runner, custom_span, set_trace_processors, trace
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tracing import TracingProcessor

import loopnb
from loopnb import LoopnbWarning
from loopnb.integrations import openai_agents
from loopnb.integrations.openai_agents import JsonlProcessor
from tests.foreign.openai_agents_samples import Collect, read_file


@pytest.fixture(autouse=True)
def _no_processors_after():
    yield
    set_trace_processors([])


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _run(processors, **config):
    set_trace_processors(processors)
    model = ScriptedModel(
        [[function_call("read_file", {"path": "notes.txt"}, call_id="c1")], [assistant_message("Friday")]],
        emit_traces=True,
    )
    agent = Agent(name="a", model=model, tools=[read_file])
    return Runner.run_sync(agent, "when?", run_config=RunConfig(**config))


def test_each_finished_span_and_trace_is_one_line_of_its_export(tmp_path):
    path = tmp_path / "deep" / "er" / "traces.jsonl"  # the folders are made
    collected = Collect()
    _run([JsonlProcessor(path), collected])
    assert _lines(path) == [item.export() for item in collected.items]
    kinds = [line["object"] for line in _lines(path)]
    assert kinds[-1] == "trace" and kinds.count("trace") == 1 and set(kinds[:-1]) == {"trace.span"}
    assert [t.channel for t in loopnb.load(path).turns.itertuples()] == ["ok", "ok"]


def test_it_appends_to_a_file_and_reopens_after_shutdown(tmp_path):
    path = tmp_path / "traces.jsonl"
    processor = JsonlProcessor(path)
    _run([processor])
    first = len(_lines(path))
    processor.shutdown()
    _run([processor])
    processor.force_flush()
    _run([JsonlProcessor(path)])
    assert len(_lines(path)) == 3 * first
    assert len(loopnb.load(path).run_ids) == 3


def test_a_run_with_tracing_off_writes_nothing(tmp_path):
    path = tmp_path / "traces.jsonl"
    _run([JsonlProcessor(path)], tracing_disabled=True)
    assert not path.exists()


def test_data_json_cannot_write_is_kept_as_its_repr_and_a_cycle_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "traces.jsonl"
    processor = JsonlProcessor(path)
    set_trace_processors([processor])
    loop: dict[str, object] = {}
    loop["self"] = loop
    with trace("odd data"):
        with custom_span("when", {"at": datetime(2026, 1, 2, tzinfo=UTC), "ids": {3}}):
            pass
        left_out = r"JsonlProcessor\(.*\): span span_\w+ left out: Circular"
        with pytest.warns(LoopnbWarning, match=left_out), custom_span("cycle", loop):
            pass
    lines = _lines(path)
    assert [line["object"] for line in lines] == ["trace.span", "trace"]
    assert lines[0]["span_data"]["data"] == {
        "at": "datetime.datetime(2026, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)",
        "ids": "{3}",
    }


def test_spans_ending_on_many_threads_each_get_a_whole_line(tmp_path):
    path = tmp_path / "traces.jsonl"
    processor = JsonlProcessor(path)
    set_trace_processors([processor])

    def work(n: int) -> None:
        with trace(f"thread {n}"):
            for i in range(100):
                with custom_span("step", {"n": n, "i": i, "pad": "x" * 500}):
                    pass

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = _lines(path)  # a line two threads interleaved would not parse
    assert len(lines) == 6 * 101
    steps = sorted(
        (x["span_data"]["data"]["n"], x["span_data"]["data"]["i"])
        for x in lines
        if x["object"] == "trace.span"
    )
    assert steps == [(n, i) for n in range(6) for i in range(100)]


def test_it_is_a_tracing_processor_and_the_package_imports_without_the_sdk():
    assert issubclass(JsonlProcessor, TracingProcessor)
    assert repr(JsonlProcessor("t.jsonl")) == "JsonlProcessor('t.jsonl')"
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        openai_agents.Nothing  # noqa: B018
    probe = (
        "import sys, loopnb.integrations, loopnb.integrations.openai_agents; "
        "print('agents' in sys.modules); loopnb.integrations.openai_agents.JsonlProcessor; "
        "print('agents' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
