"""pydantic-ai histories read as turns, from the committed goldens: no pydantic-ai needed.

The goldens are real runs (``tests/golden/foreign/make_pydantic_ai.py``); every expected value
here is written out by hand from the channel table and the texts pydantic-ai sends a model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import loopnb
from loopnb import RecordingError, load
from loopnb.foreign._pydantic_ai import MARKS
from loopnb.foreign._pydantic_ai_text import return_text

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "pydantic-ai"
COLUMNS = ["channel", "producer", "tools", "error_text", "source_status", "recovery_attempts"]
NOTS = '{"error":"file nots.txt not found; did you mean notes.txt?"}'
INVALID = (
    '{"error":[{"type":"missing","loc":["path"],"msg":"Field required","input":{"pth":3}},'
    '{"type":"extra_forbidden","loc":["pth"],"msg":"Extra inputs are not permitted","input":3}]}'
)
FEEDBACK = (
    "Your previous response failed the application's validation (this is automated feedback, not a "
    "message from the user):\n<pyai:retry_feedback>\nquote the notes in your answer\n</pyai:retry_feedback>"
)
CRASH = (
    "the history ends with delete() called and no result: the history does not say why the run stopped"
    " (from_pydantic_ai(..., error=exc) names it)"
)
S = "pydantic-ai:"

TURNS = {
    "recovered": [
        ["soft", "tool_error", "read_file", NOTS, S + "retried/model_retry", 1],
        [
            "soft",
            "not_advertised",
            "serch",
            '{"error":"Unknown tool name: \'serch\'. Available tools: '
            "'delete', 'read_file', 'write_file'\"}",
            S + "retried/unknown_tool",
            1,
        ],
        ["soft", "invalid_arguments", "read_file", INVALID, S + "retried/validation_error", 2],
        ["soft", "tool_error", "write_file", '{"error":"disk full: cannot write out.txt"}', S + "failed", 0],
        ["ok", None, "read_file", None, S + "success", 0],
        ["soft", "completion_rejected", None, FEEDBACK, None, 0],
        ["ok", None, None, None, None, 0],
    ],
    "crashed": [
        ["soft", "tool_error", "read_file", NOTS, S + "retried/model_retry", 1],
        ["hard", "source_error", "delete", CRASH, S + "unanswered", 0],
    ],
    "exhausted": [
        [
            "soft",
            "tool_error",
            "read_file",
            '{"error":"file a.txt not found; did you mean notes.txt?"}',
            S + "retried/model_retry",
            1,
        ],
        [
            "hard",
            "tool_recovery_exhausted",
            "read_file",
            "Tool 'read_file' exceeded max retries count of 1: the history ends with read_file() called"
            " again after its last allowed retry",
            S + "retries_exceeded",
            0,
        ],
    ],
    "resumed": [
        [
            "hard",
            "source_error",
            "delete",
            "the run ended with delete() in flight: pydantic-ai marked the calls interrupted",
            S + "interrupted",
            0,
        ],
        [
            "hard",
            "user_input_required",
            "remove_all",
            "the run stopped for approval or an external result of remove_all() (DeferredToolRequests)",
            S + "deferred",
            0,
        ],
        ["ok", None, None, None, None, 0],
    ],
    "legacy": [
        [
            "soft",
            "tool_error",
            "read_file",
            "file nots.txt not found\n\nFix the errors and try again.",
            S + "retry-prompt",
            0,
        ],
        [
            "soft",
            "invalid_arguments",
            "read_file",
            '1 validation error:\n```json\n[\n  {\n    "type": "missing",\n'
            '    "loc": [\n      "path"\n    ],\n    "msg": "Field required",\n'
            '    "input": {\n      "pth": 3\n    }\n  }\n]\n```\n\n'
            "Fix the errors and try again.",
            S + "retry-prompt",
            0,
        ],
        ["ok", None, None, None, None, 0],
    ],
}


def rows(frame: pd.DataFrame, columns: list[str]) -> list[list[object]]:
    return [[None if pd.isna(v) else v for v in row] for row in frame[columns].itertuples(index=False)]


@pytest.mark.parametrize("name", sorted(TURNS))
def test_each_golden_reads_turn_by_turn(name):
    rec = load(GOLDEN / f"{name}.json")
    assert rows(rec.turns, COLUMNS) == TURNS[name]
    assert rec.meta["source"] == {"format": "pydantic-ai", "version": None}


def test_the_recovered_run_keeps_calls_models_tokens_and_times():
    rec = load(GOLDEN / "recovered.json")
    t = rec.turns
    assert set(t["run_id"]) == {"recovered-run-1"} and list(t["turn"]) == list(range(1, 8))
    assert set(t["model"]) == {"scripted-model"}
    assert list(t["input_tokens"]) == [64, 77, 89, 120, 129, 131, 158]
    assert list(t["output_tokens"]) == [6, 11, 15, 23, 29, 32, 38]
    assert t["started_at"].is_monotonic_increasing and t["started_at"].iloc[0] == pd.Timestamp(
        "2026-03-01T09:00:00.500000Z"
    )
    assert t["reply_text"].tolist()[-2:] == ["they say nothing", "The notes say: the notes."]
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert list(calls["call_id"]) == ["c1", "c2", "c3", "c4", "c5"]
    # pydantic-ai rejects an unknown tool and invalid arguments before running anything
    assert list(calls["executed"]) == [True, False, False, True, True]
    assert list(calls["attempt"]) == [1, 1, 2, 0, 0]
    start = rec.events[rec.events["kind"] == "run_started"].iloc[0]
    assert start["text"] == "Read notes.txt and tell me what it says."
    finished = rec.events[rec.events["kind"] == "run_finished"].iloc[0]
    assert finished["channel"] == "ok" and finished["text"] == "The notes say: the notes."


def test_every_status_written_has_a_mark():
    for path in sorted(GOLDEN.glob("*.json")):
        rec = load(path)
        said = [*rec.turns["source_status"].dropna(), *rec.events["source_status"].dropna()]
        for status in said:
            assert status.startswith(S) and status.removeprefix(S) in MARKS, status


def test_disagreements_row_by_row():
    # pydantic-ai's history tells every soft error from success and from the run's end; a run that
    # ends on calls without a result does not say why (no crash is guessed: the exception given to
    # from_pydantic_ai names one, tests/foreign/test_pydantic_ai_live.py)
    for name in ("recovered", "crashed", "exhausted", "resumed", "legacy"):
        assert loopnb.audit(load(GOLDEN / f"{name}.json")).disagreements().empty, name


def test_load_detects_the_format_and_the_views_work(tmp_path):
    for path in sorted(GOLDEN.glob("*.json")):
        assert load(path).meta["source"]["format"] == "pydantic-ai"
        assert load(path, format="pydantic-ai").meta["n_turns"] == load(path).meta["n_turns"]
    rec = load(GOLDEN / "recovered.json")
    flows = loopnb.flow_counts(rec).set_index(["source", "target"])["count"]
    assert flows["adapt", "soft"] == 5 and flows["next", "ok"] == 2
    report = rec.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "recovered-run-1" in report and "not_advertised" in report
    summary = loopnb.audit(rec).summary()
    assert len(summary) > 0
    view = loopnb.replay(rec)
    assert view.state is not None
    both = loopnb.load_many(str(GOLDEN / "*.json"))
    assert both["source"].nunique() == len(TURNS) and len(both) == sum(len(v) for v in TURNS.values())


def test_reading_a_golden_never_imports_pydantic_ai():
    code = (
        "import sys, loopnb; rec = loopnb.load(sys.argv[1]); rec.turns;"
        "print(any(m == 'pydantic_ai' or m.startswith('pydantic_ai.') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(GOLDEN / "recovered.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["False"]


def history(*messages: dict) -> bytes:
    return json.dumps(list(messages)).encode()


def request(*parts: dict, run_id: str = "r") -> dict:
    return {"kind": "request", "parts": list(parts), "run_id": run_id, "timestamp": "2026-03-01T09:00:00Z"}


def response(*parts: dict, provider: str | None = None, run_id: str = "r") -> dict:
    return {
        "kind": "response",
        "parts": list(parts),
        "run_id": run_id,
        "model_name": "m",
        "provider_name": provider,
        "timestamp": "2026-03-01T09:00:01Z",
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }


def call(name: str, call_id: str, args: object = None) -> dict:
    return {"part_kind": "tool-call", "tool_name": name, "tool_call_id": call_id, "args": args}


def ret(name: str, call_id: str, content: object, outcome: str = "success", cause: str | None = None) -> dict:
    retry = {"cause": cause, "attempt": 1, "max_retries": 3} if cause else None
    return {
        "part_kind": "tool-return",
        "tool_name": name,
        "tool_call_id": call_id,
        "content": content,
        "outcome": outcome,
        "retry": retry,
        "timestamp": "2026-03-01T09:00:02Z",
    }


USER = {"part_kind": "user-prompt", "content": "go"}
DONE = {"part_kind": "text", "content": "done"}


@pytest.mark.parametrize(
    ("outcome", "cause", "producer", "executed"),
    [
        ("denied", None, "hook_veto", False),
        ("retried", "unavailable_tool", "not_advertised", False),
        ("retried", None, "tool_error", True),
        ("failed", None, "tool_error", True),
    ],
)
def test_each_outcome_takes_its_row_of_the_table(outcome, cause, producer, executed):
    rec = loopnb.from_pydantic_ai(
        history(
            request(USER),
            response(call("t", "a", '{"x": 1}')),
            request(ret("t", "a", "not now", outcome, cause)),
            response(DONE),
        )
    )
    t = rec.turns
    assert list(t["channel"]) == ["soft", "ok"] and t["producer"].iloc[0] == producer
    said = f"{outcome}/{cause}" if cause else outcome
    assert t["source_status"].iloc[0] == S + said
    dispatched = rec.events[rec.events["kind"] == "tool_dispatched"].iloc[0]
    assert bool(dispatched["executed"]) is executed
    assert t["error_text"].iloc[0] == ("not now" if outcome == "denied" else '{"error":"not now"}')


def test_an_anthropic_reply_read_the_error_unwrapped_and_structured_content_as_json():
    part = ret("t", "a", "bad path", "retried", "model_retry")
    assert (
        return_text(part, "anthropic") == "bad path" and return_text(part, "openai") == '{"error":"bad path"}'
    )
    rec = loopnb.from_pydantic_ai(
        history(
            request(USER),
            response(call("t", "a"), call("u", "b"), provider="anthropic"),
            request(part, ret("u", "b", {"n": 1, "é": [1, 2]})),
            response(DONE, provider="anthropic"),
        )
    )
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert list(calls["text"]) == ["bad path", '{"n":1,"é":[1,2]}']
    assert rec.turns["tools"].iloc[0] == "t, u" and rec.turns["n_errors"].iloc[0] == 1


def test_a_history_ending_on_a_request_ended_hard_before_the_next_answer():
    rec = loopnb.from_pydantic_ai(
        history(request(USER), response(call("t", "a")), request(ret("t", "a", "x")))
    )
    assert rows(rec.turns, ["channel", "producer", "source_status"]) == [
        ["ok", None, S + "success"],
        ["hard", "source_error", S + "unanswered"],
    ]


def test_a_final_result_tool_ends_the_run_ok_with_its_arguments_as_output():
    rec = loopnb.from_pydantic_ai(
        history(
            request(USER),
            response(call("final_result", "a", {"n": 3})),
            request(ret("final_result", "a", "Final result processed.")),
        )
    )
    assert list(rec.turns["channel"]) == ["ok"]
    finished = rec.events[rec.events["kind"] == "run_finished"].iloc[0]
    assert finished["channel"] == "ok" and finished["text"] == '{"n":3}'


def test_histories_without_run_ids_are_one_run_named_by_the_caller():
    plain = [
        {k: v for k, v in m.items() if k != "run_id"}
        for m in json.loads(history(request(USER), response(DONE)))
    ]
    rec = loopnb.from_pydantic_ai(plain, run_id="mine")
    assert rec.run_ids == ["mine"] and list(rec.turns["channel"]) == ["ok"]


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (b'[{"kind": "request", "parts": []', "line 1"),
        (b'{"kind": "request"}', "top level: expected a JSON list of messages, got dict"),
        (b'[{"kind": "request"}]', 'message 1: expected an object with "kind" and a "parts" list'),
        (
            b'[{"kind": "reply", "parts": []}]',
            'message 1: "kind" is \'reply\', expected "request" or "response"',
        ),
        (b'[{"kind": "request", "parts": [3]}]', "message 1, part 1: expected an object"),
        (b'[{"kind": "request", "parts": []}, {"kind": "response", "parts": [{}, []]}]', "message 2, part 2"),
        (b'[{"kind": "request", "parts": [], "timestamp": "noon"}]', "message 1: timestamp 'noon'"),
    ],
)
def test_damaged_content_names_the_path_where_and_what(tmp_path, content, where):
    path = tmp_path / "h.json"
    path.write_bytes(content)
    with pytest.raises(RecordingError) as info:
        load(path, format="pydantic-ai", errors="raise")
    assert str(path) in str(info.value) and where in str(info.value)


def test_a_history_whose_first_prompt_runs_past_the_sniffed_head_is_still_detected(tmp_path):
    long = "a" * 100_000
    path = tmp_path / "long.json"
    first = {
        "parts": [{"content": long, "part_kind": "user-prompt"}],
        "kind": "request",
    }  # pydantic-ai's order
    path.write_bytes(history(first, response(DONE)))
    rec = load(path)
    assert rec.meta["source"]["format"] == "pydantic-ai"
    assert rec.events[rec.events["kind"] == "run_started"]["text"].iloc[0] == long
    gemini = tmp_path / "gemini.json"
    gemini.write_bytes(json.dumps([{"parts": [{"text": "hi"}], "role": "user"}]).encode())
    with pytest.raises(RecordingError, match="not a recording loopnb knows"):
        load(gemini)
