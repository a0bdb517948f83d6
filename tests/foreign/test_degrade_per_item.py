"""Reading other frameworks' files degrades per item (DESIGN.md, third round; issue 26, item 1).

For every reader, a committed golden with one item damaged: ``load(path)`` (``errors="warn"``, the
default) skips that item with a ``RecordingWarning`` naming the file, the item and why, lists it
in ``meta["unread"]``, and reads every other turn as the golden reads; ``errors="raise"`` raises
a ``RecordingError`` naming the path and the item; a file of which nothing can be read is still a
``RecordingError``. The readers of objects in memory (``from_pydantic_ai`` and its kin) take
``errors=`` the same way.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb import RecordingError, RecordingWarning

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign"
SKIPPED = "skipped, the rest is read (meta['unread'] lists it)"
COLUMNS = ["run_id", "turn", "channel", "producer", "tools", "error_text", "source_status", "input_tokens"]


def _re(text: str) -> str:
    return re.escape(text)


def warned(load: Any, *args: Any, **kwargs: Any) -> tuple[loopnb.Recording, list[str]]:
    """What ``load(*args, **kwargs)`` read, and the texts of the warnings it gave."""
    with pytest.warns(RecordingWarning) as caught:
        rec = load(*args, **kwargs)
    return rec, [str(w.message) for w in caught]


def rows(rec: loopnb.Recording, *, drop: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The recording's turns (``COLUMNS``), less the turns of runs ``drop`` names (a run id, or
    a ``(run_id, turn)`` pair)."""
    turns = rec.turns[COLUMNS].astype(object).where(rec.turns[COLUMNS].notna(), None)
    return [
        row
        for row in turns.itertuples(index=False, name=None)
        if row[0] not in drop and (row[0], row[1]) not in drop
    ]


def written(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


# -- pydantic-ai: a message history ------------------------------------------------------------


PYDANTIC_AI = GOLDEN / "pydantic-ai" / "recovered.json"
OUTCOME = '"outcome": expected a string, found list'


def _damaged_history() -> list[Any]:
    """The golden with message 7's return part (what the model read for turn 3's call) damaged."""
    history = json.loads(PYDANTIC_AI.read_text())
    history[6]["parts"][0]["outcome"] = ["retried"]
    return history


def test_pydantic_ai_a_part_that_cannot_be_read_is_skipped_and_its_turn_keeps_the_rest(tmp_path):
    path = written(tmp_path / "history.json", _damaged_history())
    rec, said = warned(loopnb.load, path)
    assert said == [f"{path}: message 7, part 1: {OUTCOME}; {SKIPPED}"]
    assert rec.meta["unread"] == [{"where": "message 7, part 1", "why": OUTCOME}]
    golden = loopnb.load(PYDANTIC_AI)
    (run,) = golden.run_ids
    assert rows(rec, drop=((run, 3),)) == rows(golden, drop=((run, 3),))
    turn = rec.turns[rec.turns["turn"] == 3].iloc[0]  # its reply is read; what answered it is not
    assert (turn["tools"], turn["channel"], turn["source_status"]) == (
        "read_file",
        "ok",
        "pydantic-ai:missing",
    )
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: message 7, part 1: {OUTCOME}')}$"):
        loopnb.load(path, errors="raise")


def test_pydantic_ai_in_memory_takes_errors_the_same_way():
    rec, said = warned(loopnb.from_pydantic_ai, _damaged_history())
    assert said == [f"message 7, part 1: {OUTCOME}; {SKIPPED}"]
    assert rec.meta["unread"] == [{"where": "message 7, part 1", "why": OUTCOME}]
    with pytest.raises(RecordingError, match=f"^{_re(f'message 7, part 1: {OUTCOME}')}$"):
        loopnb.from_pydantic_ai(_damaged_history(), errors="raise")


def test_pydantic_ai_a_history_with_nothing_readable_is_an_error(tmp_path):
    path = written(tmp_path / "history.json", [1, {"kind": "reply", "parts": []}])
    with pytest.raises(RecordingError) as caught:
        loopnb.load(path, format="pydantic-ai")
    assert str(caught.value) == (
        f"{path}: nothing readable: none of its messages could be read (2 skipped; the first, message 1:"
        ' expected an object with "kind" and a "parts" list)'
    )


# -- Inspect AI: samples, events, .eval members --------------------------------------------------


INSPECT_JSON = GOLDEN / "inspect" / "notes.json"
INSPECT_EVAL = GOLDEN / "inspect" / "notes.eval"
RECOVER = "samples[0] (sample 'recover', epoch 1)"


def test_inspect_a_sample_that_cannot_be_read_is_skipped_and_the_others_read(tmp_path):
    log = json.loads(INSPECT_JSON.read_text())
    log["samples"][0]["events"] = {"no": "list"}
    path = written(tmp_path / "log.json", log)
    rec, said = warned(loopnb.load, path)
    assert said == [f"{path}: {RECOVER}: events: expected list, found dict; {SKIPPED}"]
    assert rec.meta["unread"] == [{"where": RECOVER, "why": "events: expected list, found dict"}]
    golden = loopnb.load(INSPECT_JSON)
    recover = golden.run_ids[0]
    assert recover not in rec.run_ids
    assert rows(rec) == rows(golden, drop=(recover,))
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: {RECOVER}, events: expected list')}"):
        loopnb.load(path, errors="raise")


def test_inspect_an_event_that_cannot_be_read_is_skipped_and_its_sample_keeps_the_rest(tmp_path):
    log = json.loads(INSPECT_JSON.read_text())
    log["samples"][0]["events"][8]["timestamp"] = "noon"  # a model event: its turn loses its time
    path = written(tmp_path / "log.json", log)
    rec, said = warned(loopnb.load, path)
    why = "timestamp: expected an ISO 8601 time, found 'noon'"
    assert said == [f"{path}: {RECOVER}, events[8]: {why}; {SKIPPED}"]
    assert rec.meta["unread"] == [{"where": f"{RECOVER}, events[8]", "why": why}]
    assert rows(rec) == rows(loopnb.load(INSPECT_JSON))  # every turn read, the same
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: {RECOVER}, events[8].timestamp: expected')}"):
        loopnb.load(path, errors="raise")
    rec, _ = warned(loopnb.from_inspect, log)  # in memory, the same
    assert rec.meta["unread"] == [{"where": f"{RECOVER}, events[8]", "why": why}]
    with pytest.raises(RecordingError, match=_re(f"{RECOVER}, events[8].timestamp")):
        loopnb.from_inspect(log, errors="raise")


def test_inspect_an_eval_member_that_does_not_unpack_is_skipped(tmp_path):
    data = bytearray(INSPECT_EVAL.read_bytes())
    with zipfile.ZipFile(INSPECT_EVAL) as zf:
        info = next(i for i in zf.infolist() if i.filename.startswith("samples/recover"))
    data[info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2] ^= 0xFF
    path = tmp_path / "log.eval"
    path.write_bytes(bytes(data))
    rec, said = warned(loopnb.load, path)
    member = f"member {info.filename}"
    assert [item["where"] for item in rec.meta["unread"]] == [member]
    assert said[0].startswith(f"{path}: {member}: ")
    golden = loopnb.load(INSPECT_EVAL)
    recover = next(r for r in golden.run_ids if r not in rec.run_ids)
    assert rows(rec) == rows(golden, drop=(recover,))
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: {member} ')}"):
        loopnb.load(path, errors="raise")


def test_inspect_a_log_with_no_sample_readable_is_an_error(tmp_path):
    log = json.loads(INSPECT_JSON.read_text())
    for sample in log["samples"]:
        sample["events"] = 7
    path = written(tmp_path / "log.json", log)
    with pytest.raises(RecordingError, match=_re(f"{path}: nothing readable: none of its samples")):
        loopnb.load(path)


# -- OpenAI Agents SDK: spans and traces -----------------------------------------------------------


AGENTS = GOLDEN / "openai-agents" / "chat.jsonl"


def test_openai_agents_a_line_that_is_not_json_is_skipped(tmp_path):
    lines = AGENTS.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    rec, said = warned(loopnb.load, path)
    assert [item["where"] for item in rec.meta["unread"]] == ["line 2"]
    assert said[0].startswith(f"{path}: line 2: not JSON (")
    assert rows(rec) == rows(loopnb.load(AGENTS))
    with pytest.raises(RecordingError, match=_re(f"{path}, line 2: not JSON")):
        loopnb.load(path, errors="raise")


def test_openai_agents_a_span_field_that_cannot_be_read_is_read_as_absent(tmp_path):
    items = [json.loads(line) for line in AGENTS.read_text(encoding="utf-8").splitlines()]
    i = next(i for i, item in enumerate(items) if item.get("span_data", {}).get("usage"))
    items[i]["span_data"]["usage"]["input_tokens"] = "many"
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in items), encoding="utf-8")
    where = f"line {i + 1}, span {items[i]['id']} (generation)"
    why = "span_data.usage.input_tokens: expected a whole number of tokens, found str 'many'"
    rec, said = warned(loopnb.load, path)
    assert said == [f"{path}: {where}: {why}; {SKIPPED}"]
    assert rec.meta["unread"] == [{"where": where, "why": why}]
    # the turn keeps what could be read: all but the model span's tokens (its turn span has its own)
    assert [r[:-1] for r in rows(rec)] == [r[:-1] for r in rows(loopnb.load(AGENTS))]
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: {where}: {why}')}$"):
        loopnb.load(path, errors="raise")
    rec, _ = warned(loopnb.from_openai_agents, items)  # in memory, the same
    assert rec.meta["unread"] == [{"where": f"item {i + 1}, span {items[i]['id']} (generation)", "why": why}]
    with pytest.raises(RecordingError, match=_re(why)):
        loopnb.from_openai_agents(items, errors="raise")


def test_openai_agents_a_file_with_nothing_readable_is_an_error(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"object": "trace.span", "id": "s", "trace_id": "t"}\n{"object": "nope"}\n')
    with pytest.raises(RecordingError, match=_re(f"{path}: nothing readable: none of its spans and traces")):
        loopnb.load(path, format="openai-agents")


# -- OpenTelemetry: values, spans, a request's attributes -----------------------------------------


OTLP = GOLDEN / "otlp" / "pydantic_ai.otlp.json"
OPENINFERENCE = GOLDEN / "otlp" / "openinference.otlp.jsonl"
SPANS = "resourceSpans[0].scopeSpans[0].spans"


def _otlp() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    request = json.loads(OTLP.read_text())
    return request, request["resourceSpans"][0]["scopeSpans"][0]["spans"]


def test_otlp_a_span_that_cannot_be_read_is_skipped_and_its_call_reads_as_unrecorded(tmp_path):
    request, spans = _otlp()
    i = next(i for i, s in enumerate(spans) if s["name"] == "execute_tool read_file" and not s.get("events"))
    spans[i]["startTimeUnixNano"] = "soon"  # turn 4's tool span
    path = written(tmp_path / "spans.json", request)
    why = "the start time in nanoseconds should be a whole number of 64 bits, found str 'soon'"
    rec, said = warned(loopnb.load, path)
    assert said == [f"{path}: {SPANS}[{i}]: {why}; {SKIPPED}"]
    assert rec.meta["unread"] == [{"where": f"{SPANS}[{i}]", "why": why}]
    golden = loopnb.load(OTLP)
    run = golden.run_ids[0]
    assert rows(rec, drop=((run, 4),)) == rows(golden, drop=((run, 4),))
    calls = rec.events[(rec.events["kind"] == "tool_dispatched") & (rec.events["turn"] == 4)]
    assert calls["source_status"].tolist() == ["otlp:missing"]  # the call, read without its span
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: {SPANS}[{i}]: {why}')}$"):
        loopnb.load(path, errors="raise")


def test_otlp_a_request_attribute_that_cannot_be_read_leaves_the_rest_of_its_turn(tmp_path):
    request, spans = _otlp()
    i = next(i for i, s in enumerate(spans) if s["traceId"].endswith("03") and s["name"].startswith("chat"))
    usage = next(kv for kv in spans[i]["attributes"] if kv["key"] == "gen_ai.usage.input_tokens")
    usage["value"] = {"stringValue": "many"}
    path = written(tmp_path / "spans.json", request)
    where = f"span {int(spans[i]['spanId'], 16):016x} {spans[i]['name']!r}"
    why = "gen_ai.usage.input_tokens: expected a whole number of tokens, found str 'many'"
    rec, said = warned(loopnb.load, path)
    assert rec.meta["unread"] == [{"where": f"{SPANS}[{i}], {where}", "why": why}]
    assert said == [f"{path}: {SPANS}[{i}], {where}: {why}; {SKIPPED}"]
    golden = loopnb.load(OTLP)
    run = golden.run_ids[2]
    assert rows(rec, drop=(run,)) == rows(golden, drop=(run,))
    assert [r[:-1] for r in rows(rec) if r[0] == run] == [r[:-1] for r in rows(golden) if r[0] == run]
    assert rec.turns[rec.turns["run_id"] == run]["input_tokens"].isna().all()
    with pytest.raises(RecordingError, match=f"^{_re(f'{path}: {SPANS}[{i}], {where}, {why}')}$"):
        loopnb.load(path, errors="raise")
    rec, _ = warned(loopnb.from_otel, [request])  # in memory, the same
    assert [item["why"] for item in rec.meta["unread"]] == [why]
    with pytest.raises(RecordingError, match=_re(why)):
        loopnb.from_otel([request], errors="raise")


def test_otlp_a_line_that_is_not_json_is_skipped_and_reading_resumes_at_the_next(tmp_path):
    first, second = OPENINFERENCE.read_text().splitlines()
    path = tmp_path / "spans.jsonl"
    path.write_text(f"{second[:200]}\n{first}\n")  # the second trace cut short, then the first
    rec, said = warned(loopnb.load, path, format="otlp")
    assert [item["where"] for item in rec.meta["unread"]] == ["line 1"]
    assert said[0].startswith(f"{path}: line 1: is not JSON: ")
    golden = loopnb.load(OPENINFERENCE)
    assert rows(rec) == rows(golden, drop=(golden.run_ids[1],))
    with pytest.raises(RecordingError, match=_re(f"{path}, line 1: value 1 is not JSON")):
        loopnb.load(path, format="otlp", errors="raise")


def test_otlp_a_file_with_nothing_readable_is_an_error_that_says_what_was_expected(tmp_path):
    path = written(tmp_path / "spans.json", {})
    with pytest.raises(RecordingError) as caught:
        loopnb.load(path, format="otlp")
    assert str(caught.value) == (
        f"{path}: top level: expected resourceSpans or a span.to_json() dict, found an empty object"
    )
    path = written(tmp_path / "spans.json", {"resourceSpans": [{"scopeSpans": 7}, 3]})
    with pytest.raises(
        RecordingError, match=_re(f"{path}: nothing readable: none of its spans could be read")
    ):
        loopnb.load(path, format="otlp")


# -- LangGraph: checkpoints and writes -------------------------------------------------------------


LANGGRAPH = GOLDEN / "langgraph" / "threads.sqlite"
LATEST = "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'legacy'"


def _database(tmp_path: Path, *statements: str) -> tuple[Path, str]:
    path = tmp_path / "threads.sqlite"
    shutil.copyfile(LANGGRAPH, path)
    conn = sqlite3.connect(path)
    (latest,) = conn.execute(LATEST).fetchone()
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path, str(latest)


def test_langgraph_a_checkpoint_that_cannot_be_read_leaves_its_thread_read_up_to_the_one_before(tmp_path):
    path, latest = _database(
        tmp_path, f"UPDATE checkpoints SET checkpoint = x'c1' WHERE checkpoint_id = ({LATEST})"
    )
    where = f"thread legacy, checkpoint {latest}"
    rec, said = warned(loopnb.load, path)
    assert [item["where"] for item in rec.meta["unread"]] == [where]
    assert said == [f"{path}: {where}: {rec.meta['unread'][0]['why']}; {SKIPPED}"]
    assert rec.meta["unread"][0]["why"].startswith("a checkpoint that does not decode")
    golden = loopnb.load(LANGGRAPH)
    assert rows(rec, drop=("legacy",)) == rows(golden, drop=("legacy",))
    legacy = rec.turns[rec.turns["run_id"] == "legacy"]
    assert 0 < len(legacy) <= len(golden.turns[golden.turns["run_id"] == "legacy"])
    end = legacy.iloc[-1]
    assert (end["channel"], end["source_status"]) == ("hard", "langgraph:unanswered")
    assert end["error_text"] == (
        "the trace does not say why the run stopped: the thread's later checkpoints could not be read"
        " (meta['unread'] lists them), and no pending write says more"
    )
    with pytest.raises(
        RecordingError, match=f"^{_re(f'{path}: {where}: a checkpoint that does not decode')}"
    ):
        loopnb.load(path, errors="raise")


def test_langgraph_a_write_that_cannot_be_read_is_listed(tmp_path):
    path, _ = _database(
        tmp_path, "UPDATE writes SET value = 7 WHERE thread_id = 'crashed' AND channel = '__error__'"
    )
    rec, said = warned(loopnb.load, path)
    (item,) = rec.meta["unread"]
    assert (
        item["where"].startswith("thread crashed, checkpoint ")
        and "write '__error__' of task" in item["where"]
    )
    assert item["why"] == "column value holds INTEGER 7, expected a BLOB of msgpack"
    assert said == [f"{path}: {item['where']}: {item['why']}; the write is skipped"]
    golden = loopnb.load(LANGGRAPH)
    assert rows(rec, drop=("crashed",)) == rows(golden, drop=("crashed",))
    with pytest.raises(RecordingError, match=_re(f"{path}: {item['where']}: {item['why']}")):
        loopnb.load(path, errors="raise")


def test_langgraph_a_database_with_no_checkpoint_readable_is_an_error(tmp_path):
    path, _ = _database(tmp_path, "UPDATE checkpoints SET checkpoint = x'c1'")
    with pytest.raises(RecordingError, match=_re(f"{path}: nothing readable: none of its checkpoints")):
        loopnb.load(path)


# -- every reader ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [PYDANTIC_AI, INSPECT_JSON, INSPECT_EVAL, AGENTS, OTLP, OPENINFERENCE, LANGGRAPH],
    ids=lambda p: p.name,
)
def test_an_undamaged_golden_lists_nothing_unread(path):
    assert loopnb.load(path).meta["unread"] == []


def test_errors_must_be_warn_or_raise():
    with pytest.raises(ValueError, match="errors must be 'warn' or 'raise'"):
        loopnb.load(OTLP, errors="skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="errors must be 'warn' or 'raise'"):
        loopnb.from_otel([], errors="ignore")


def test_the_frames_of_a_degraded_load_build(tmp_path):
    """A skipped item leaves no half-written turn: both frames build, one row per turn."""
    path = written(tmp_path / "history.json", _damaged_history())
    rec, _ = warned(loopnb.load, path)
    assert len(rec.turns) == rec.meta["n_turns"] and isinstance(rec.events, pd.DataFrame)
