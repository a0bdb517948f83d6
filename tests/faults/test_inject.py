"""loopnb.inject on loopnb's own targets: each fault kind, each schedule, marked where recorded."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time

import pytest

from loopnb import (
    Engine,
    FakeClock,
    FallbackChain,
    Recorder,
    ScriptedModel,
    ToolCall,
    audit,
    faults,
    inject,
    tool,
)


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
def list_dir() -> str:
    """List the folder."""
    return "a.txt, b.txt"


READ = [ToolCall("read_file", {"path": "a.txt"})]


def run(tools, replies, **engine):
    """Run a scripted model over ``tools``: the recorder, and the run's result."""
    rec = Recorder()
    engine = Engine(ScriptedModel(replies), tools=tools, observers=[rec], clock=FakeClock(), **engine)
    result = engine.run("read a.txt")
    return rec, result


def dispatched(rec):
    e = rec.events
    return e[e["kind"] == "tool_dispatched"][["turn", "text", "is_error", "producer", "injected"]]


def test_error_first_two_then_the_real_tool_and_each_failure_is_labelled():
    tools = inject([read_file, list_dir], {"read_file": faults.error("disk busy").first(2)})
    rec, result = run(tools, [READ, READ, READ, "done"])
    d = dispatched(rec)
    assert d["text"].tolist() == ["disk busy", "disk busy", "contents of a.txt"]
    assert d["producer"].astype(object).tolist()[:2] == ["tool_error", "tool_error"]
    assert d["injected"].tolist()[:2] == ['error("disk busy").first(2)'] * 2
    assert d["injected"].isna().tolist() == [False, False, True]
    turns = rec.turns
    assert turns["injected"].tolist()[:2] == ['error("disk busy").first(2)'] * 2
    assert turns["injected"].isna().tolist()[2:] == [True, True]
    assert result.output == "done"
    assert [i.call for i in tools[0].injections] == [1, 2]


def test_crash_is_a_panic_and_hang_outlasts_the_timeout():
    crashing = inject(read_file, faults.crash(OSError("bad sector")))
    rec, _ = run([crashing], [READ, "done"])
    row = dispatched(rec).iloc[0]
    assert row["producer"] == "tool_panic" and row["injected"] == 'crash(OSError("bad sector"))'
    assert "bad sector" in row["text"]

    hanging = inject([read_file], {"read_file": faults.hang(5)})
    started = time.perf_counter()
    rec, _ = run(hanging, [READ, "done"], timeout=0.05)
    assert time.perf_counter() - started < 2.0  # the timeout ended the call, not the hang
    row = dispatched(rec).iloc[0]
    assert row["producer"] == "timeout" and row["injected"] == "hang(5.0)"


def test_implicit_faults_look_like_success():
    for fault, seen in ((faults.wrong("0 bytes"), "0 bytes"), (faults.empty(), "")):
        rec, _ = run(inject([read_file], {"read_file": fault}), [READ, "done"])
        row = dispatched(rec).iloc[0]
        assert row["text"] == seen and not row["is_error"] and row["injected"] == fault.label
        assert rec.turns["channel"].tolist() == ["ok", "ok"]  # invisible to the channel table


def test_slow_advances_a_fake_clock_then_runs_the_tool():
    clock = FakeClock()
    tools = inject([read_file], {"read_file": faults.slow(2.5)}, clock=clock)
    rec = Recorder()
    Engine(ScriptedModel([READ, "done"]), tools=tools, observers=[rec], clock=clock).run("x")
    e = rec.events
    row = e[e["kind"] == "tool_dispatched"].iloc[0]
    assert row["text"] == "contents of a.txt" and row["latency_ms"] == pytest.approx(2500.0)


def test_unavailable_tool_fails_softly_with_its_status():
    rec, _ = run(inject([read_file], {"read_file": faults.unavailable(429, retry_after=3)}), [READ, "done"])
    row = dispatched(rec).iloc[0]
    assert row["is_error"] and "HTTP 429" in row["text"] and "retry after 3 s" in row["text"]


def test_when_only_fails_matching_calls():
    tools = inject([read_file], {"read_file": faults.error("locked").when(path="b.txt")})
    calls = [
        ToolCall("read_file", {"path": "a.txt"}, id="1"),
        ToolCall("read_file", {"path": "b.txt"}, id="2"),
    ]
    rec, _ = run(tools, [calls, "done"])
    assert dispatched(rec)["text"].tolist() == ["contents of a.txt", "locked"]


def test_sometimes_is_reproducible_by_seed_and_differs_across_seeds():
    def fired(seed):
        wrapped = inject(read_file, faults.error("flaky").sometimes(0.5), seed=seed)
        for _ in range(64):
            with contextlib.suppress(Exception):
                wrapped("a.txt")
        return [i.call for i in wrapped.injections]

    assert fired(3) == fired(3)
    assert fired(3) != fired(4)
    assert 16 < len(fired(3)) < 48


def test_original_is_untouched_and_a_callable_keeps_its_signature():
    def search(query: str, limit: int = 5) -> list[str]:
        return [query] * limit

    wrapped = inject(search, faults.wrong([]).first(1))
    assert inspect.signature(wrapped) == inspect.signature(search)
    assert wrapped("x", limit=2) == [] and wrapped("x", 2) == ["x", "x"]
    assert search("x", 1) == ["x"]
    assert [i.label for i in wrapped.injections] == ["wrong([]).first(1)"]
    tools = [read_file, list_dir]
    inject(tools, {"read_file": "error('x')"})
    assert tools == [read_file, list_dir] and read_file("a") == "contents of a"

    async def fetch(url: str) -> str:
        return url

    afetch = inject(fetch, "crash('down')")
    assert inspect.iscoroutinefunction(afetch) and inspect.signature(afetch) == inspect.signature(fetch)
    with pytest.raises(RuntimeError, match="down"):
        asyncio.run(afetch("u"))


def test_a_key_that_names_no_tool_lists_the_tools_and_guesses():
    with pytest.raises(KeyError) as info:
        inject([read_file, list_dir], {"read_fil": faults.error("x")})
    said = str(info.value)
    assert "no tool is named 'read_fil'" in said and "did you mean 'read_file'?" in said
    assert "read_file, list_dir" in said


def test_a_model_fails_as_its_fault_says_and_the_chain_records_it():
    primary = ScriptedModel(["from primary"], name="primary")
    backup = ScriptedModel(["from backup"], name="backup")
    down = inject(primary, faults.unavailable(503).first(1))
    rec = Recorder()
    result = Engine(FallbackChain([down, backup]), tools=[], observers=[rec], clock=FakeClock()).run("hi")
    assert result.output == "from backup"
    e = rec.events
    failed = e[e["kind"] == "model_failed"].iloc[0]
    assert failed["model"] == "primary" and failed["status"] == 503
    assert failed["injected"] == "unavailable(503).first(1)"
    assert rec.turns["injected"].tolist() == ["unavailable(503).first(1)"]
    with pytest.raises(ValueError, match="is a tool's fault"):
        inject(primary, faults.wrong("x"))


def test_recovery_rate_and_false_success():
    rec = Recorder()
    transient = inject([read_file, list_dir], {"read_file": faults.error("busy").first(1)})
    Engine(ScriptedModel([READ, READ, "done"]), tools=transient, observers=[rec], clock=FakeClock()).run("a")
    permanent = inject([read_file, list_dir], {"read_file": faults.error("gone")})
    replies = [READ, [ToolCall("list_dir", {})], "all good"]
    Engine(ScriptedModel(replies), tools=permanent, observers=[rec], clock=FakeClock()).run("b")
    a = audit(rec)
    by_fault = a.recovery_rate(by="fault").set_index("fault")
    assert by_fault.loc['error("busy").first(1)', "rate"] == 1.0
    assert by_fault.loc['error("gone")', "recovered"] == 0
    by_tool = a.recovery_rate(by="tool").set_index("tool")
    assert (by_tool.loc["read_file", "soft_errors"], by_tool.loc["read_file", "recovered"]) == (2, 1)
    assert list(a.recovery_rate().columns) == ["run_id", "soft_errors", "recovered", "rate"]
    false = a.false_success()
    assert list(false.columns) == ["run_id", "tool", "turn", "error_text", "final_output"]
    assert false[["tool", "turn", "error_text", "final_output"]].values.tolist() == [
        ["read_file", 1, "gone", "all good"]
    ]


def test_injected_survives_jsonl_and_parquet(tmp_path):
    from loopnb import load

    rec, _ = run(inject([read_file], {"read_file": faults.error("disk busy").first(1)}), [READ, READ, "done"])
    recording = rec.recording() if hasattr(rec, "recording") else None
    assert recording is not None
    for name in ("run.jsonl", "run.parquet"):
        path = recording.save(tmp_path / name)
        back = load(path)
        assert back.turns["injected"].tolist()[:1] == ['error("disk busy").first(1)']
        assert back.turns["injected"].isna().tolist()[1:] == [True, True]


def test_flow_counts_split_injected_from_natural_failures():
    from loopnb import flow_counts, scenarios

    rec = Recorder()
    scenarios.get("mistyped_path").run(observers=[rec], faults={"read_file": faults.error("busy").first(2)})
    flows = flow_counts(rec, split_injected=True).set_index("edge")
    soft = flows.loc[flows["source"].eq("adapt") & flows["target"].eq("soft")].iloc[0]
    assert (soft["count"], soft["injected"], soft["natural"]) == (3, 2, 1)  # two injected, the typo natural
    assert (flows["injected"] + flows["natural"]).equals(flows["count"])
    assert "injected" not in flow_counts(rec).columns
