"""The openai-agents reader on the committed goldens: no Agents SDK needed.

``chat.jsonl`` was written by ``JsonlProcessor`` around the SDK's Chat Completions model (its
``generation`` spans keep the messages); ``responses.json`` is a JSON list of the exports of the
same six runs on the Responses model (its ``response`` spans keep only the usage), made by
``tests/golden/foreign/make_openai_agents.py``. Both read into the same turns.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb.cli import main
from loopnb.foreign._openai_agents import MARKS, from_openai_agents
from loopnb.foreign._transcript import RunWriter
from loopnb.record import Recording, RecordingError, RecordingWarning

GOLDEN = Path(__file__).parents[1] / "golden" / "foreign" / "openai-agents"
CHAT, RESPONSES = GOLDEN / "chat.jsonl", GOLDEN / "responses.json"
SHAPES = [pytest.param(CHAT, id="chat"), pytest.param(RESPONSES, id="responses")]

FIXED = "An error occurred while running the tool. Please try again."
TIMED_OUT = "Tool 'wait_for' timed out after 0.01 seconds."
FETCH = (
    "fetch failed: HTTP 503 from https://api.example.test/notes; "
    + "use read_file on the cached notes.txt instead"
)
NOTES = "Release notes: ship on Friday."
SERVER_ERROR = "The server had an error while processing your request."  # the sample's HTTP 500
NOT_FOUND = "Tool 'serch' not found."
S = "openai-agents:"

TURNS = [
    # run, turn, channel, producer, tools, error_text, source_status, tokens in/out
    ("recovers", 1, "ok", None, "transfer_to_reader", None, "ok", (100, 5)),
    ("recovers", 2, "soft", "tool_error", "read_file", FIXED, "ok", (120, 12)),
    (
        "recovers",
        3,
        "soft",
        "invalid_arguments",
        "read_file, serch",
        f"{FIXED}\n{NOT_FOUND}",
        "error",
        (140, 14),
    ),
    ("recovers", 4, "soft", "timeout", "read_file, wait_for", TIMED_OUT, "ok", (160, 16)),
    ("recovers", 5, "ok", None, None, None, "ok", (180, 9)),
    (
        "unknown-tool",
        1,
        "hard",
        "source_error",
        "list_releases",
        "Tool list_releases not found in agent reader",
        "tool_not_found",
        (90, 7),
    ),
    ("crash", 1, "ok", None, "read_file", None, "ok", (110, 11)),
    (
        "crash",
        2,
        "hard",
        "source_error",
        "deploy",
        "Error running tool deploy: deploy key missing for prod",
        "crashed",
        (130, 13),
    ),
    ("max-turns", 1, "soft", "tool_error", "fetch", FETCH, "ok", (95, 8)),
    ("max-turns", 2, "soft", "tool_error", "fetch", FETCH, "ok", (105, 8)),
    ("max-turns", 3, "hard", "loop_detected", None, "Max turns (2) exceeded", "max_turns", None),
    (
        "guardrail",
        1,
        "hard",
        "source_error",
        None,
        "Guardrail no_secrets triggered tripwire",
        "guardrail",
        None,
    ),
    ("model-error", 1, "ok", None, "read_file", None, "ok", (85, 9)),
    (
        "model-error",
        2,
        "hard",
        "source_error",
        None,
        f"Error code: 500 - {SERVER_ERROR}",
        "model_error",
        None,
    ),
]

CALLS = [
    # run, turn, tool, producer, source_status, executed, what the model read
    ("recovers", 1, "transfer_to_reader", None, "ok", True, '{"assistant": "reader"}'),
    ("recovers", 2, "read_file", "tool_error", "error", True, FIXED),
    ("recovers", 3, "read_file", "invalid_arguments", "error", False, FIXED),
    ("recovers", 3, "serch", "not_advertised", "missing", False, NOT_FOUND),
    ("recovers", 4, "read_file", None, "ok", True, NOTES),
    ("recovers", 4, "wait_for", "timeout", "ok", True, TIMED_OUT),
    ("crash", 1, "read_file", None, "ok", True, NOTES),
    ("max-turns", 1, "fetch", "tool_error", "error", True, FETCH),
    ("max-turns", 2, "fetch", "tool_error", "error", True, FETCH),
    ("model-error", 1, "read_file", None, "ok", True, NOTES),
]

DISAGREEMENTS = [
    # run, turn, tool, source_status, reason
    ("recovers", 2, "read_file", "error", "soft_shown_as_hard"),
    ("recovers", 2, "read_file", "error", "error_text_names_nothing"),
    ("recovers", 3, "read_file", "error", "soft_shown_as_hard"),
    ("recovers", 3, "serch", "missing", "missing_tool_record"),
    ("recovers", 3, "read_file", "error", "error_text_names_nothing"),
    ("recovers", 4, "wait_for", "ok", "soft_shown_as_success"),
    ("unknown-tool", 1, "list_releases", "tool_not_found", "unknown_tool_ended_run"),
    ("crash", 2, "deploy", "crashed", "panic_ended_run"),
    ("max-turns", 1, "fetch", "error", "soft_shown_as_hard"),
    ("max-turns", 2, "fetch", "error", "soft_shown_as_hard"),
]


def _names(rec: loopnb.Recording) -> dict[str, str]:
    """Each run id's sample name (the trace's workflow name, kept in the run's settings)."""
    return {e.run_id: e.settings["workflow_name"] for e in rec.event_objects if e.kind == "run_started"}


def _value(v: Any) -> Any:
    return None if v is pd.NA or (isinstance(v, float) and pd.isna(v)) else v


@pytest.mark.parametrize("path", SHAPES)
def test_every_turn_reads_with_its_channel_producer_text_status_and_tokens(path):
    rec = loopnb.load(path)
    names = _names(rec)
    t = rec.turns
    got = [
        (
            names[r.run_id],
            r.turn,
            r.channel,
            _value(r.producer),
            _value(r.tools),
            _value(r.error_text),
            r.source_status,
            None if r.input_tokens is pd.NA else (r.input_tokens, r.output_tokens),
        )
        for r in t.itertuples()
    ]
    assert got == [(*row[:6], S + row[6], row[7]) for row in TURNS]
    assert list(t["dropped"]) == [row[2] == "hard" for row in TURNS]
    assert (t["recovery_attempts"] == 0).all()  # the SDK keeps no retry counter for tools


@pytest.mark.parametrize("path", SHAPES)
def test_every_call_reads_with_what_the_model_read_and_what_the_sdk_said(path):
    rec = loopnb.load(path)
    names = _names(rec)
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    got = [
        (names[r.run_id], r.turn, r.tool, _value(r.producer), r.source_status, bool(r.executed), r.text)
        for r in calls.itertuples()
    ]
    assert got == [(*row[:4], S + row[4], *row[5:]) for row in CALLS]
    assert calls["is_error"].tolist() == [row[3] is not None for row in CALLS]


@pytest.mark.parametrize("path", SHAPES)
def test_the_disagreements_row_by_row(path):
    rec = loopnb.load(path)
    names = _names(rec)
    rows = loopnb.audit(rec).disagreements()
    got = [(names[r.run_id], r.turn, r.tool, r.source_status, r.reason) for r in rows.itertuples()]
    assert got == [(*row[:3], S + row[3], row[4]) for row in DISAGREEMENTS]
    crash = rows[rows["reason"] == "panic_ended_run"].iloc[0]
    assert crash["channel"] == "hard" and pd.isna(crash["call_id"])
    unknown = rows[rows["reason"] == "unknown_tool_ended_run"].iloc[0]  # the table makes it soft
    assert unknown["channel"] == "hard"
    assert unknown["detail"] == "Tool list_releases not found in agent reader"
    assert set(rows["detail"]) >= {FIXED, TIMED_OUT, "no record of serch()"}


@pytest.mark.parametrize("path", SHAPES)
def test_each_trace_is_a_run_that_ends_as_the_sdk_ended_it(path):
    rec = loopnb.load(path)
    names = _names(rec)
    assert list(names.values()) == [
        "recovers",
        "unknown-tool",
        "crash",
        "max-turns",
        "guardrail",
        "model-error",
    ]
    assert rec.run_ids == list(names)
    assert rec.meta["source"] == {"format": "openai-agents", "version": None}
    ends = {names[e.run_id]: e for e in rec.event_objects if e.kind == "run_finished"}
    assert {n: (e.outcome, e.producer) for n, e in ends.items()} == {
        "recovers": ("ok", None),
        "unknown-tool": ("hard", "source_error"),
        "crash": ("hard", "source_error"),
        "max-turns": ("hard", "loop_detected"),
        "guardrail": ("hard", "source_error"),
        "model-error": ("hard", "source_error"),
    }
    assert ends["unknown-tool"].error == "ModelBehaviorError"
    assert ends["max-turns"].error == "MaxTurnsExceeded"
    assert ends["guardrail"].error == "InputGuardrailTripwireTriggered"
    starts = [e for e in rec.event_objects if e.kind == "run_started"]
    assert all(e.settings["group_id"] == starts[0].settings["group_id"] for e in starts)
    assert starts[0].settings["agents"] == ["triage", "reader"]
    assert starts[0].tools == ("transfer_to_reader", "read_file", "wait_for", "deploy", "fetch")


def test_the_chat_model_kept_the_messages_so_its_turns_have_text_models_and_call_ids():
    rec = loopnb.load(CHAT)
    t = rec.turns
    replied = t[t["channel"] != "hard"]
    assert set(replied["model"]) == {"gpt-scripted"}
    assert t["reply_text"].dropna().tolist() == ["The notes say: ship on Friday."]
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert calls["call_id"].tolist()[:6] == ["call_h", "call_1", "call_2", "call_3", "call_4", "call_5"]
    start = next(e for e in rec.event_objects if e.kind == "run_started")
    assert start.task == "What do the release notes say?" and start.system == "Hand over to the reader."
    assert start.models == ("gpt-scripted",)
    invalid = next(e for e in rec.event_objects if e.kind == "model_replied" and e.turn == 3)
    assert invalid.reply.tool_calls[0].arguments == '{"path": "notes.txt"'  # not a JSON object
    ended = next(e for e in rec.event_objects if e.kind == "run_finished")
    assert ended.output == "The notes say: ship on Friday."


def test_the_responses_model_kept_no_reply_so_calls_come_from_the_function_spans():
    rec = loopnb.load(RESPONSES)
    t = rec.turns
    assert t["model"].isna().all() and t["reply_text"].isna().all()
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert calls["call_id"].str.startswith("span_").all()  # the function span's id stands in
    invalid = next(e for e in rec.event_objects if e.kind == "model_replied" and e.turn == 3)
    assert invalid.reply.tool_calls[0].arguments == '{"path": "notes.txt"'


@pytest.mark.parametrize("path", SHAPES)
def test_times_come_from_the_spans_and_run_forward(path):
    rec = loopnb.load(path)
    for _, events in rec.events.groupby("run_id", sort=False):
        assert events["at"].is_monotonic_increasing
    t = rec.turns
    assert (t["latency_ms"] >= 0).all() and t["started_at"].dt.year.min() >= 2025
    first = json.loads(CHAT.read_text(encoding="utf-8").splitlines()[0])
    assert first["object"] == "trace.span" and first["started_at"].endswith("+00:00")


def test_every_status_written_has_a_mark():
    statuses = set()
    for path in (CHAT, RESPONSES):
        rec = loopnb.load(path)
        statuses |= set(rec.turns["source_status"].dropna()) | set(rec.events["source_status"].dropna())
    assert {s.removeprefix(S) for s in statuses} <= set(MARKS)
    assert MARKS["crashed"] == "crash" and MARKS["missing"] == "missing" and MARKS["error"] == "error"


def test_replay_report_flows_and_the_cli_work_on_a_golden(tmp_path, capsys):
    rec = loopnb.load(CHAT)
    view = loopnb.replay(rec)
    assert view.runs is not None and len(view.runs.options) == 6
    assert "run 6 of 6" in view.header.value
    report = rec.to_html(tmp_path / "agents.html").read_text(encoding="utf-8")
    assert "Tool list_releases not found in agent reader" in report and "tool_error" in report
    flows = loopnb.flow_counts(rec).set_index(["source", "target"])["count"]
    assert flows["adapt", "soft"] == 5 and flows["adapt", "hard"] == 4  # unknown tool, crash, guardrail, 500
    assert flows["watch", "hard2"] == 1  # max turns: the loop watch's stop
    summary = loopnb.audit(rec).summary()
    assert summary is not None
    assert main(["audit", str(CHAT)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"runs ended hard +5 +source_error 4, loop_detected 1", out), out


def test_load_many_reads_a_folder_of_both_shapes_beside_a_loopnb_recording(tmp_path):
    for path in (CHAT, RESPONSES):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    own = RunWriter("own", task="hello")
    own.turn().reply("hi")
    Recording.from_events(own.finish("hi"), meta={}).save(tmp_path / "own.jsonl")
    many = loopnb.load_many(sorted(tmp_path.iterdir()))  # a folder alone lists only .jsonl and .parquet
    assert len(many) == 2 * len(TURNS) + 1
    by_file = many.groupby("source", sort=False)["channel"].apply(list)
    assert [len(c) for c in by_file] == [len(TURNS), 1, len(TURNS)]  # chat, own, responses
    assert by_file.iloc[0] == by_file.iloc[2] == [row[2] for row in TURNS]
    foreign = many[many["run_id"] != "own"]
    assert foreign["source_status"].str.startswith(S).all()


def _items(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_in_memory_reader_reads_export_dicts_like_the_file():
    rec = from_openai_agents(_items(CHAT))
    assert rec.turns.drop(columns=["seq"]).equals(loopnb.load(CHAT).turns.drop(columns=["seq"]))


def test_two_runs_in_one_trace_are_two_runs():
    items = _items(CHAT)
    first = items[0]["trace_id"]
    crash = next(i["trace_id"] for i in items if i.get("span_data", {}).get("name") == "deploy")
    merged = [
        {**i, "trace_id": first} if i.get("trace_id") == crash else i for i in items if i.get("id") != crash
    ]
    rec = from_openai_agents(merged)
    assert rec.run_ids[:2] == [f"{first}:1", f"{first}:2"]
    t = rec.turns
    assert list(t[t["run_id"] == f"{first}:2"]["channel"]) == ["ok", "hard"]


def test_a_trace_without_turn_spans_groups_calls_by_model_span():
    """Older SDKs, and ``include_task_and_turn_spans=False``, keep no turn spans."""
    items = [i for i in _items(CHAT) if i.get("span_data", {}).get("type") != "custom"]
    rec = from_openai_agents(items)
    names = _names(rec)
    got = [(names[r.run_id], r.turn, r.channel, _value(r.producer)) for r in rec.turns.itertuples()]
    assert got[:4] == [
        ("recovers", 1, "ok", None),
        ("recovers", 2, "soft", "tool_error"),
        ("recovers", 3, "soft", "invalid_arguments"),
        ("recovers", 4, "soft", "timeout"),
    ]
    unknown = rec.turns[[names[r] == "unknown-tool" for r in rec.turns["run_id"]]].iloc[0]
    assert unknown["channel"] == "hard" and unknown["source_status"] == S + "unanswered"
    assert unknown["error_text"] == (
        "the trace ends before list_releases ran: the trace does not say why the run stopped"
    )


def _as_openai_agents_0_2(items: list[dict[str, Any]], *, sensitive: bool = True) -> list[dict[str, Any]]:
    """The chat golden's ``model-error`` trace as openai-agents 0.2 traced it: no turn spans, and
    no error on the generation that raised nor on the agent span; without sensitive data, no
    span keeps its input either."""
    trace = next(i["id"] for i in items if i.get("workflow_name") == "model-error")
    out = []
    for item in items:
        if item.get("trace_id", item.get("id")) != trace or item.get("span_data", {}).get("type") == "custom":
            continue
        if item.get("object") == "trace.span":
            data = {**item["span_data"]} if sensitive else {**item["span_data"], "input": None}
            item = {**item, "span_data": data, "error": None}
        out.append(item)
    return out


def test_a_model_request_that_got_no_response_ends_the_run_though_nothing_marks_it():
    """openai-agents 0.2 marks no error when the model's server fails: the last generation span
    kept the request and no output, and the run read as a clean one."""
    rec = from_openai_agents(_as_openai_agents_0_2(_items(CHAT)))
    t = rec.turns
    assert list(t["channel"]) == ["ok", "hard"]
    last = t.iloc[-1]
    assert (last["producer"], last["source_status"]) == ("source_error", S + "model_error")
    assert last["error_text"] == (
        "the model request got no response; the trace does not say why (its generation span kept "
        "the request, no output and no error)"
    )
    assert rec.event_objects[-1].error == "SourceError"


def test_a_generation_span_that_kept_nothing_is_not_read_as_a_failed_request():
    """Without sensitive data every generation span keeps neither input nor output: that says
    nothing about the request, so the run is not ended on it."""
    rec = from_openai_agents(_as_openai_agents_0_2(_items(CHAT), sensitive=False))
    assert "model_error" not in "".join(rec.turns["source_status"].dropna())


def test_a_damaged_line_is_named(tmp_path):
    lines = CHAT.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(RecordingError, match=r"bad.jsonl, line 2: not JSON"):
        loopnb.load(bad, format="openai-agents", errors="raise")


def test_a_torn_last_line_is_left_out_with_a_warning(tmp_path):
    data = CHAT.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data + data.splitlines()[0][:40])
    with pytest.warns(RecordingWarning, match="torn last line"):
        rec = loopnb.load(torn)
    assert len(rec.turns) == len(TURNS)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"id": "x"}], r"item 1: expected a Trace.export\(\) or Span.export\(\) object"),
        (
            [{"object": "trace.span", "id": "s", "trace_id": "t"}],
            r"item 1: a span needs a string 'id' and a 'span_data'",
        ),
        ([{"object": "trace", "id": 3}], r"item 1: expected .* with a string trace id"),
        ([], "no spans or traces found"),
    ],
)
def test_unexpected_content_says_what_was_expected_where(tmp_path, items, message):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(RecordingError, match=message) as info:
        loopnb.load(path, format="openai-agents", errors="raise")
    assert str(path) in str(info.value)


def test_the_backend_exporters_payload_reads_too(tmp_path):
    path = tmp_path / "payload.json"
    path.write_text(json.dumps({"data": _items(CHAT)}), encoding="utf-8")
    assert len(loopnb.load(path).turns) == len(TURNS)
