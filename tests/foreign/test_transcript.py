"""The writer foreign readers use: its events read back into the same turns as a loopnb run's."""

import pytest

import loopnb
from loopnb.engine import ToolCall
from loopnb.foreign._transcript import RunWriter, status
from loopnb.record import Recording
from loopnb.record._disagree import names_nothing


def _run() -> Recording:
    run = RunWriter("r1", task="read the notes", at=100.0, models=("m",), tools=("read_file",))
    t = run.turn(at=100.0)
    t.reply(calls=[ToolCall("read_file", {"path": "nots.txt"}, id="a")], model="m", at=100.5)
    t.result(
        "a",
        "file nots.txt not found; did you mean notes.txt?",
        producer="tool_error",
        source_status=status("otlp", "ERROR"),
        at=101.0,
    )
    t.finish(at=101.0)
    t = run.turn(at=101.0)
    t.reply(calls=[ToolCall("read_file", {"path": "notes.txt"}, id="b")], model="m")
    t.result("b", "the notes", source_status=status("otlp", "OK"), at=102.0)
    t.finish()
    t = run.turn(at=103.0)
    t.reply(calls=[ToolCall("delete", {}, id="c")], model="m")
    events = run.end_hard("source_error", "KeyError: 'x'", error="KeyError", source_status="otlp:ERROR")
    return Recording.from_events(events, meta={"source": {"format": "otlp", "version": "1"}})


def test_the_writers_events_read_back_as_turns_with_their_channels():
    rec = _run()
    t = rec.turns
    assert list(t["channel"]) == ["soft", "ok", "hard"]
    assert t["producer"].tolist()[::2] == ["tool_error", "source_error"] and t["producer"].isna().tolist()[1]
    assert t["error_text"].iloc[0] == "file nots.txt not found; did you mean notes.txt?"
    assert t["error_text"].iloc[2] == "KeyError: 'x'" and bool(t["dropped"].iloc[2])
    assert t["source_status"].iloc[2] == "otlp:ERROR" and t["source_status"].isna().iloc[0]
    assert list(t["latency_ms"]) == [1000.0, 1000.0, 0.0]
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert list(calls["source_status"]) == ["otlp:ERROR", "otlp:OK"]
    assert rec.meta["source"]["format"] == "otlp"
    # the same fold every loopnb run goes through
    flows = loopnb.flow_counts(rec).set_index(["source", "target"])["count"]
    assert flows["adapt", "soft"] == 1 and flows["next", "ok"] == 1 and flows["adapt", "hard"] == 1


def test_a_saved_foreign_run_loads_back_with_what_the_source_said(tmp_path):
    rec = _run()
    again = loopnb.load(rec.save(tmp_path / "run.jsonl"))
    assert again.turns["source_status"].tolist()[2] == "otlp:ERROR"
    assert again.turns["source_status"].isna().tolist() == [True, True, False]
    assert (
        again.meta["source"] == {"format": "otlp", "version": "1"}
        and again.meta["format"] == "loopnb.recording"
    )


def test_time_never_runs_backwards_and_no_turn_follows_the_end():
    run = RunWriter("r", at=50.0)
    run.turn(at=10.0).reply("hi")
    run.finish("hi", at=5.0)
    assert [e.at for e in run.events] == [50.0] * len(run.events)
    with pytest.raises(ValueError, match="has ended"):
        run.turn()


@pytest.mark.parametrize(
    ("text", "vague"),
    [
        ("An error occurred while running the tool. Please try again.", True),
        ("", True),
        ("Unexpected error", True),
        ("file nots.txt not found", False),
        ("Unknown tool 'serch'; available: search, read", False),
    ],
)
def test_an_error_text_that_names_nothing(text, vague):
    assert names_nothing(text) is vague
