"""The OpenTelemetry reader on the committed goldens (no OpenTelemetry or pydantic-ai needed).

The goldens (``tests/golden/foreign/make_otlp.py``) are pydantic-ai's own instrumentation of real
runs, in the spec's OTLP/JSON, protobuf's JSON and ``span.to_json()`` lines, and spans in
OpenInference's and the previous GenAI conventions' shapes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb.foreign import _otlp
from loopnb.record import Recording, RecordingError
from loopnb.record._disagree import mark_of

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "otlp"
PYDANTIC = GOLDEN / "pydantic_ai.otlp.json"
PROTOBUF = GOLDEN / "pydantic_ai.pb.json"
V2 = GOLDEN / "pydantic_ai_v2.spans.jsonl"
OPENINFERENCE = GOLDEN / "openinference.otlp.jsonl"
LEGACY = GOLDEN / "legacy_genai.console.txt"
ALL = [PYDANTIC, PROTOBUF, V2, OPENINFERENCE, LEGACY]

COLS = ["turn", "channel", "producer", "error_text", "source_status", "tools", "recovery_attempts"]
COLS += ["model", "input_tokens", "output_tokens"]
M = "scripted-model"
VALIDATION = (
    '[{"type":"missing","loc":["path"],"msg":"Field required","input":{"pth":3}},'
    '{"type":"extra_forbidden","loc":["pth"],"msg":"Extra inputs are not permitted","input":3}]'
)
NOTS = "file nots.txt not found; did you mean notes.txt?"
UNKNOWN = "Unknown tool name: 'serch'. Available tools: 'delete', 'read_file'"
LIMIT = (
    "UsageLimitExceeded: The next request would exceed the request_limit of 1. Consider raising the limit,"
    " or see the docs on usage limits for budget-aware patterns:"
    " https://pydantic.dev/docs/ai/core-concepts/agent/#usage-limits"
)
RETRIES = (
    "UnexpectedModelBehavior: Tool 'read_file' exceeded max retries count of 1. Consider raising the retry"
    " limit, or see the docs on tool retries: https://pydantic.dev/docs/ai/tools-toolsets/tools-advanced/#tool-retries"
)


def row(
    run: int,
    turn: int,
    channel: str,
    producer: str | None,
    text: str | None,
    tools: str | None,
    tokens: tuple[int, int],
    *,
    said: str = "otlp:UNSET",
    attempts: int = 0,
    model: str = M,
) -> tuple[Any, ...]:
    """One expected turn row, in the order of ``COLS`` after the run's index."""
    return (run, turn, channel, producer, text, said, tools, attempts, model, *tokens)


PYDANTIC_TURNS = [
    row(0, 1, "soft", "tool_error", NOTS, "read_file", (53, 6), attempts=1),
    row(0, 2, "soft", "not_advertised", UNKNOWN, "serch", (66, 11)),
    row(0, 3, "soft", "invalid_arguments", VALIDATION, "read_file", (77, 15), attempts=2),
    row(0, 4, "ok", None, None, "read_file", (108, 21)),
    row(0, 5, "ok", None, None, None, (109, 25)),
    row(1, 1, "hard", "source_error", "KeyError: 'x'", "delete", (52, 5), said="otlp:ERROR:execute_tool"),
    row(2, 1, "ok", None, None, "read_file", (53, 6)),  # the call ran; the limit refused the next request
    row(2, 2, "hard", "loop_detected", LIMIT, None, (None, None), said="otlp:ERROR:invoke_agent", model=None),
    row(
        3,
        1,
        "soft",
        "tool_error",
        "file a.txt not found; did you mean notes.txt?",
        "read_file",
        (53, 6),
        attempts=1,
    ),
    row(
        3,
        2,
        "hard",
        "tool_recovery_exhausted",
        RETRIES,
        "read_file",
        (66, 12),
        said="otlp:ERROR:invoke_agent",
    ),
]
PYDANTIC_DISAGREEMENTS = [
    (0, 2, "c2", "serch", "otlp:missing", "soft", "missing_tool_record"),
    (1, 1, None, "delete", "otlp:ERROR:execute_tool", "hard", "panic_ended_run"),
]


def plain(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def turn_rows(rec: Recording) -> list[tuple[Any, ...]]:
    runs = {r: i for i, r in enumerate(rec.meta["run_ids"])}
    rows = rec.turns[["run_id", *COLS]].itertuples(index=False)
    return [(runs[r[0]], *map(plain, r[1:])) for r in rows]


def disagreement_rows(rec: Recording) -> list[tuple[Any, ...]]:
    runs = {r: i for i, r in enumerate(rec.meta["run_ids"])}
    rows = loopnb.audit(rec).disagreements().itertuples(index=False)
    return [(runs[r.run_id], *map(plain, r[1:7])) for r in rows]


def calls(rec: Recording) -> pd.DataFrame:
    events = rec.events
    return events[events["kind"] == "tool_dispatched"].reset_index(drop=True)


@pytest.mark.parametrize("path", [PYDANTIC, PROTOBUF])
def test_pydantic_ais_spans_read_turn_by_turn_in_both_json_encodings(path):
    rec = loopnb.load(path)
    assert turn_rows(rec) == PYDANTIC_TURNS
    assert disagreement_rows(rec) == PYDANTIC_DISAGREEMENTS
    encoding = "otlp-json" if path == PYDANTIC else "protobuf-json"
    assert rec.meta["source"] == {"format": "otlp", "version": "pydantic-ai 2.68.0", "encoding": encoding}


def test_both_encodings_give_the_same_frames():
    spec, pb = loopnb.load(PYDANTIC), loopnb.load(PROTOBUF)
    pd.testing.assert_frame_equal(spec.turns, pb.turns)
    pd.testing.assert_frame_equal(spec.events, pb.events)


def test_each_call_keeps_what_its_span_said_and_the_retry_counter():
    c = calls(loopnb.load(PYDANTIC))
    assert list(c["call_id"]) == ["c1", "c2", "c3", "c4", "s1"]
    # ERROR under a run span that went on: handled, as the conventions mark it
    assert list(c["source_status"]) == [
        "otlp:ERROR:handled",
        "otlp:missing",
        "otlp:ERROR:handled",
        "otlp:UNSET",
        "otlp:ERROR:handled",
    ]
    assert list(c["is_error"]) == [True, True, True, False, True]
    # the unknown tool never ran; the invalid arguments stopped before the tool ran
    assert list(c["executed"]) == [True, False, False, True, True]
    assert list(c["attempt"]) == [1, 0, 2, 0, 1]  # pydantic_ai.tool.retry.attempt
    assert c["text"].iloc[3] == "hi"


def test_the_runs_task_tools_models_and_outputs():
    rec = loopnb.load(PYDANTIC)
    started = [e for e in rec.event_objects if e.kind == "run_started"]
    finished = [e for e in rec.event_objects if e.kind == "run_finished"]
    assert [s.task for s in started] == ["read the notes", "delete x", "read the notes", "read a file"]
    assert started[0].tools == ("read_file", "delete") and started[0].models == (M,)
    assert [s.settings for s in started] == [
        {"agent": a} for a in ("reader", "deleter", "limited", "stubborn")
    ]
    assert [f.outcome for f in finished] == ["ok", "hard", "hard", "hard"]
    assert finished[0].output == "the notes say hi"
    assert [f.error for f in finished[1:]] == ["KeyError", "UsageLimitExceeded", "UnexpectedModelBehavior"]


def test_times_come_from_the_spans():
    t = loopnb.load(PYDANTIC).turns
    first = t["started_at"].iloc[0]
    assert first == pd.Timestamp("2026-03-01 09:00:00.001", tz="UTC")
    assert (t.loc[t["model"].notna(), "latency_ms"] > 0).all()  # a turn of a model request
    assert t["started_at"].is_monotonic_increasing or t["run_id"].nunique() > 1


def test_the_older_instrumentation_names_and_a_rejected_structured_output():
    rec = loopnb.load(V2)
    rows = turn_rows(rec)
    # agent run / running tool / tool_arguments / tool_response: the same four first turns
    assert [r[:4] + r[5:] for r in rows[:4]] == [r[:4] + r[5:] for r in PYDANTIC_TURNS[:4]]
    assert [r[2:4] for r in rows] == [
        ("soft", "tool_error"),
        ("soft", "not_advertised"),
        ("soft", "invalid_arguments"),
        ("ok", None),
        ("soft", "invalid_arguments"),
        ("ok", None),
        ("hard", "source_error"),
    ]
    assert rows[1][4] == "Unknown tool name: 'serch'. Available tools: 'delete', 'final_result', 'read_file'"
    assert rows[4][6] == "final_result" and rows[4][4].startswith('[{"type":"int_parsing","loc":["notes"]')
    c = calls(rec)
    assert list(c["source_status"])[-2:] == ["otlp:missing", "otlp:output"]
    finished = [e for e in rec.event_objects if e.kind == "run_finished"]
    assert finished[0].output == '{"notes":2}'
    assert disagreement_rows(rec) == [
        (0, 2, "c2", "serch", "otlp:missing", "soft", "missing_tool_record"),
        (0, 5, "o1", "final_result", "otlp:missing", "soft", "missing_tool_record"),
        (1, 1, None, "delete", "otlp:ERROR:execute_tool", "hard", "panic_ended_run"),
    ]
    assert rec.meta["source"]["encoding"] == "sdk-json"


def test_openinference_spans():
    rec = loopnb.load(OPENINFERENCE)
    oi = "oi-model"
    assert turn_rows(rec) == [
        row(0, 1, "soft", "tool_error", "no file matches 'nots'; try 'notes'", "search", (40, 8), model=oi),
        row(
            0,
            2,
            "soft",
            "not_advertised",
            "Error: tool 'serch' not found; available tools: search",
            "serch",
            (50, 8),
            model=oi,
        ),
        row(
            0,
            3,
            "soft",
            "invalid_arguments",
            "search: field 'query' is required",
            "search",
            (60, 8),
            model=oi,
        ),
        row(0, 4, "ok", None, None, "search", (70, 8), model=oi),
        row(0, 5, "ok", None, None, None, (80, 8), model=oi),
        row(
            1,
            1,
            "hard",
            "source_error",
            "RuntimeError: index is locked",
            "search",
            (40, 8),
            model=oi,
            said="otlp:ERROR:execute_tool",
        ),
    ]
    assert disagreement_rows(rec) == [
        (0, 1, "call_1", "search", "otlp:UNSET", "soft", "soft_shown_as_success"),
        (0, 2, "call_2", "serch", "otlp:missing", "soft", "missing_tool_record"),
        (1, 1, None, "search", "otlp:ERROR:execute_tool", "hard", "panic_ended_run"),
    ]
    started = rec.event_objects[0]
    assert started.task == "find the notes" and started.tools == ("search",)
    assert next(e.output for e in rec.event_objects if e.kind == "run_finished") == "the notes say hi"
    c = calls(rec)
    assert c["text"].iloc[3] == "notes.txt: hi"  # the TOOL span had no call id: paired by name


def test_the_previous_genai_names_and_a_trace_with_no_agent_span():
    rec = loopnb.load(LEGACY)
    lm = "legacy-model"
    assert turn_rows(rec) == [
        row(0, 1, "soft", "tool_error", "nots.txt: no such file", "read_file", (30, 6), model=lm),
        row(
            0,
            2,
            "soft",
            "not_advertised",
            "unknown tool grep; tools are read_file, delete",
            "grep",
            (35, 6),
            model=lm,
        ),
        row(
            0,
            3,
            "soft",
            "invalid_arguments",
            "read_file() missing argument 'path'",
            "read_file",
            (40, 6),
            model=lm,
        ),
        row(0, 4, "ok", None, None, "read_file", (45, 6), model=lm),
        row(0, 5, "ok", None, None, None, (50, 6), model=lm),
        row(
            1,
            1,
            "hard",
            "source_error",
            "PermissionError: notes.txt is read-only",
            "delete",
            (30, 6),
            model=lm,
            said="otlp:ERROR:execute_tool",
        ),
    ]
    assert disagreement_rows(rec) == [
        (0, 1, "k1", "read_file", "otlp:OK", "soft", "soft_shown_as_success"),  # OK, with error.type
        (0, 2, "k2", "grep", "otlp:missing", "soft", "missing_tool_record"),
        (0, 3, "k3", "read_file", "otlp:ERROR", "soft", "soft_shown_as_hard"),
        (1, 1, None, "delete", "otlp:ERROR:execute_tool", "hard", "panic_ended_run"),
    ]
    assert next(e.output for e in rec.event_objects if e.kind == "run_finished") == "the notes say hi"


def test_every_status_written_has_a_mark():
    for path in ALL:
        rec = loopnb.load(path)
        said = set(rec.turns["source_status"].dropna()) | set(calls(rec)["source_status"].dropna())
        assert all(mark_of(s) is not None for s in said), path
    assert set(_otlp.MARKS.values()) <= {"ok", "error", "retry", "missing", "crash", "ended"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("shape", ["list", "console", "lines"])
def test_span_to_json_dicts_as_a_list_printed_one_after_another_or_one_a_line(tmp_path, shape):
    spans = _lines(V2)
    text = {
        "list": json.dumps(spans),
        "console": "".join(json.dumps(s, indent=4) + "\n" for s in spans),
        "lines": "\n".join(json.dumps(s) for s in spans),
    }[shape]
    path = tmp_path / "spans.txt"
    path.write_text(text)
    pd.testing.assert_frame_equal(loopnb.load(path).turns, loopnb.load(V2).turns)


def _snake(node: Any) -> Any:
    """OTLP/JSON with protobuf's field names (``preserving_proto_field_name``)."""
    if isinstance(node, list):
        return [_snake(v) for v in node]
    if not isinstance(node, dict):
        return node
    if "key" in node and "value" in node:
        return {"key": node["key"], "value": _snake(node["value"])}
    return {"".join(f"_{c.lower()}" if c.isupper() else c for c in k): _snake(v) for k, v in node.items()}


def test_a_collectors_file_exporter_lines_and_snake_case_keys(tmp_path):
    request = json.loads(PYDANTIC.read_text())
    scoped = request["resourceSpans"][0]["scopeSpans"][0]
    batches = (scoped["spans"][:9], scoped["spans"][9:])  # a run's spans split over two exports
    lines = tmp_path / "collector.jsonl"
    lines.write_text(
        "\n".join(json.dumps({"resourceSpans": [{"scopeSpans": [{**scoped, "spans": b}]}]}) for b in batches)
    )
    pd.testing.assert_frame_equal(loopnb.load(lines).turns, loopnb.load(PYDANTIC).turns)
    snaked = tmp_path / "snake.json"
    snaked.write_text(json.dumps(_snake(request)))
    assert '"resource_spans"' in snaked.read_text() and '"start_time_unix_nano"' in snaked.read_text()
    pd.testing.assert_frame_equal(loopnb.load(snaked).turns, loopnb.load(PYDANTIC).turns)


def test_spans_without_content_still_tell_soft_from_hard(tmp_path):
    """``include_content=False`` keeps no messages, arguments or results: the calls come from
    the tool spans, an ERROR a next request followed is soft, and the crash is still hard."""
    kept = (
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.result",
        "pydantic_ai.all_messages",
    )
    request = json.loads(PYDANTIC.read_text())
    for span in request["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"] = [a for a in span["attributes"] if a["key"] not in kept]
    path = tmp_path / "no-content.json"
    path.write_text(json.dumps(request))
    rec = loopnb.load(path)
    rows = [r[:4] for r in turn_rows(rec)]
    # the unknown tool left no trace at all: its turn reads as a request with no call
    assert rows == [
        (0, 1, "soft", "tool_error"),
        (0, 2, "ok", None),
        (0, 3, "soft", "invalid_arguments"),
        (0, 4, "ok", None),
        (0, 5, "ok", None),
        (1, 1, "hard", "source_error"),
        (2, 1, "ok", None),
        (2, 2, "hard", "loop_detected"),
        (3, 1, "soft", "tool_error"),
        (3, 2, "hard", "tool_recovery_exhausted"),
    ]
    assert rec.turns["error_text"].iloc[0] == NOTS  # from the exception event's message
    assert rec.event_objects[0].task == ""


def test_from_otel_reads_the_dicts_of_any_encoding():
    spans = _lines(V2)
    pd.testing.assert_frame_equal(loopnb.from_otel(spans).turns, loopnb.load(V2).turns)
    request = json.loads(PROTOBUF.read_text())
    assert turn_rows(loopnb.from_otel([request])) == PYDANTIC_TURNS
    assert loopnb.from_otel([]).turns.empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"', "not JSON"),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "00000000000000a1", "name": "x"}]}]}]}',
            "resourceSpans[0].scopeSpans[0].spans[0]: a span needs traceId and spanId",
        ),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "'
            + "a1" * 8
            + '"}]}]}]}',
            "id 'xyz' is neither 32 hex digits nor the base64 of 16 bytes",
        ),
        ('{"resourceSpans": {"scopeSpans": []}}', "resourceSpans should be a list"),
        ('{"resourceSpans": [{"scopeSpans": "none"}]}', "resourceSpans[0]: scopeSpans should be a list"),
        ('{"resourceSpans": []}\n{"resourceSpans": [}', "line 2"),
        (
            '{"name": "x", "context": {"trace_id": "0x01", "span_id": "0x02"}, "kind": "SpanKind.INTERNAL"}',
            "span: id '0x01' is neither",
        ),
        (
            '{"name": "x", "context": {"trace_id": "0x' + "1" * 32 + '", "span_id": "0x' + "2" * 16 + '"},'
            ' "kind": "SpanKind.INTERNAL", "start_time": "yesterday"}',
            "the start time should be an ISO 8601 timestamp, found str 'yesterday'",
        ),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "'
            + "1" * 32
            + '", "spanId": "'
            + "2" * 16
            + '", "startTimeUnixNano": "soon"}]}]}]}',
            "the start time in nanoseconds should be a whole number of 64 bits, found str 'soon'",
        ),
    ],
)
def test_a_damaged_file_names_the_path_where_and_what(tmp_path, text, message):
    path = tmp_path / "spans.json"
    path.write_text(text)
    with pytest.raises(RecordingError) as caught:
        loopnb.load(path, format="otlp", errors="raise")
    assert str(path) in str(caught.value) and message in str(caught.value)


def test_a_file_of_something_else_read_as_otlp_says_what_it_found(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"runs": [], "version": 3}')
    with pytest.raises(
        RecordingError, match=re.escape("expected resourceSpans or a span.to_json() dict, found keys runs")
    ):
        loopnb.load(path, format="otlp", errors="raise")
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(RecordingError, match="empty: no spans"):
        loopnb.load(tmp_path / "empty.json", format="otlp", errors="raise")
    with pytest.raises(RecordingError, match="expected an OpenTelemetry ReadableSpan, found object"):
        loopnb.from_otel([object()], errors="raise")


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_load_detects_each_golden_and_the_tools_work_on_it(path):
    rec = loopnb.load(path)
    assert rec.meta["source"]["format"] == "otlp"
    flows = loopnb.flow_counts(rec).set_index(["source", "target"])["count"]
    t = rec.turns
    exhausted = int((t["producer"] == "tool_recovery_exhausted").sum())  # it counts as soft too
    assert flows["adapt", "soft"] == int((t["channel"] == "soft").sum()) + exhausted
    assert flows["failed", "adapt"] == flows["adapt", "soft"] + flows["adapt", "hard"]
    summary = loopnb.audit(rec).summary()
    assert not summary.empty


def test_replay_and_the_report_of_a_trace(tmp_path):
    rec = loopnb.load(PYDANTIC)
    view = loopnb.replay(rec, run_id=rec.meta["run_ids"][0])
    assert [t.channel for t in view.state.turns] == ["soft", "soft", "soft", "ok", "ok"]
    page = rec.to_html(tmp_path / "report.html")
    html = Path(page or tmp_path / "report.html").read_text(encoding="utf-8")
    assert "serch" in html and "did you mean notes.txt?" in html and "UsageLimitExceeded" in html


def test_load_many_reads_the_goldens_side_by_side(tmp_path):
    frame = loopnb.load_many([PYDANTIC, V2, OPENINFERENCE, LEGACY])
    assert len(frame) == 10 + 7 + 6 + 6
    assert frame["source_status"].str.startswith("otlp:").all()
    for path in (V2, OPENINFERENCE):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert len(loopnb.load_many(tmp_path)) == 7 + 6  # a folder: its .jsonl files
