"""Inspect AI logs read as turns, from the committed goldens: no inspect-ai needed.

The goldens are real evals on Inspect's ``mockllm`` model (``tests/golden/foreign/make_inspect.py``):
``notes.eval`` holds all four samples, ``notes.json`` two of them. Every expected value here is
written out by hand from the channel table and the texts Inspect gives a model.
"""

from __future__ import annotations

import contextlib
import copy
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb import RecordingError, load
from loopnb.foreign._inspect import MARKS, from_inspect
from loopnb.foreign._inspect_files import read_eval_log

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "inspect"
EVAL, JSON = GOLDEN / "notes.eval", GOLDEN / "notes.json"
COLUMNS = ["channel", "producer", "tools", "error_text", "source_status", "recovery_attempts"]
USAGE = ["model", "input_tokens", "output_tokens"]
INVALID = (
    "Found 2 validation errors parsing tool input arguments:\n- 'path' is a required property\n"
    "- Additional properties are not allowed ('pth' was unexpected)"
)
S = "inspect:"
M = "mockllm/model"

TURNS: dict[str, list[list[Any]]] = {
    "recover": [
        [
            "soft",
            "tool_error",
            "read_file",
            "file nots.txt not found; did you mean notes.txt?",
            S + "unknown",
            0,
        ],
        ["ok", None, "read_file, read_file", None, S + "ok", 0],
        ["soft", "not_advertised", "serch", "Tool serch not found", S + "parsing", 0],
        ["soft", "invalid_arguments", "read_file", INVALID, S + "parsing", 0],
        ["soft", "timeout", "fetch", "Command timed out before completing.", S + "timeout", 0],
        [
            "soft",
            "hook_veto",
            "delete_file",
            "delete_file is blocked: the files are read-only",
            S + "approval",
            0,
        ],
        ["ok", None, None, None, None, 0],
    ],
    "crash": [
        ["ok", None, "read_file", None, S + "ok", 0],
        ["hard", "source_error", "explode", "KeyError('x')", S + "failed", 0],
    ],
    "tokens": [
        ["ok", None, "read_file", None, S + "ok", 0],
        [
            "hard",
            "context_exceeded",
            "read_file",
            "Token limit exceeded. value: 6,180; limit: 5,000",
            S + "token_limit",
            0,
        ],
    ],
    "loop": [
        *[["ok", None, "read_file", None, S + "ok", 0]] * 10,
        [
            "hard",
            "loop_detected",
            None,
            "Message limit exceeded. count: 21; limit: 20",
            S + "message_limit",
            0,
        ],
    ],
}
"""Each sample's turns, in ``COLUMNS``."""

TOKENS: dict[str, list[tuple[str | None, int | None, int | None]]] = {
    "recover": [
        (M, i, o) for i, o in [(120, 12), (160, 20), (200, 9), (230, 8), (260, 10), (290, 10), (320, 9)]
    ],
    "crash": [(M, 100, 8), (M, 130, 7)],
    "tokens": [(M, 3000, 40), (M, 3100, 40)],
    "loop": [*[(M, 50, 5)] * 10, (None, None, None)],
}
"""Each sample's turns' model and token usage, as each ``ModelOutput`` said."""

CALLS = {
    "recover": ["unknown", "ok", "ok", "parsing", "parsing", "timeout", "approval"],
    "crash": ["ok"],
    "tokens": ["ok"],
    "loop": ["ok"] * 10,
}
"""What Inspect said of each call that returned (the crashed and the unrun calls have none)."""


def _cell(value: Any) -> Any:
    return None if value is pd.NA or (isinstance(value, float) and pd.isna(value)) else value


def samples_of(rec: loopnb.Recording) -> dict[str, str]:
    """Sample id -> run id, from the runs' start events."""
    return {e.settings["sample_id"]: e.run_id for e in rec.event_objects if e.kind == "run_started"}


def rows(rec: loopnb.Recording, sample: str, columns: list[str]) -> list[list[Any]]:
    t = rec.turns
    return [
        [_cell(v) for v in row] for row in t[t["run_id"] == samples_of(rec)[sample]][columns].values.tolist()
    ]


@pytest.fixture(scope="module", params=["notes.eval", "notes.json"])
def golden(request: pytest.FixtureRequest) -> loopnb.Recording:
    return load(GOLDEN / request.param)


def test_every_sample_reads_turn_by_turn(golden):
    assert list(samples_of(golden)) == (
        ["recover", "crash", "tokens", "loop"] if golden.path.suffix == ".eval" else ["recover", "tokens"]
    )
    for sample in samples_of(golden):
        assert rows(golden, sample, COLUMNS) == TURNS[sample], sample
        assert [tuple(r) for r in rows(golden, sample, USAGE)] == TOKENS[sample], sample
        calls = golden.events[
            (golden.events["kind"] == "tool_dispatched")
            & (golden.events["run_id"] == samples_of(golden)[sample])
        ]
        assert calls["source_status"].tolist() == [S + s for s in CALLS[sample]], sample


def test_the_disagreements_row_by_row():
    rows = loopnb.audit(load(EVAL)).disagreements()
    crash = samples_of(load(EVAL))["crash"]
    assert [[_cell(v) for v in r] for r in rows.values.tolist()] == [
        [crash, 2, None, "explode", S + "failed", "hard", "panic_ended_run", "KeyError('x')"]
    ]
    assert loopnb.audit(load(JSON)).disagreements().empty  # Inspect keeps soft errors apart


def test_meta_names_the_source_and_its_version():
    raw = json.loads(JSON.read_text())
    for path in (EVAL, JSON):
        rec = load(path)
        assert rec.meta["source"] == {"format": "inspect", "version": raw["eval"]["packages"]["inspect_ai"]}
        assert rec.meta["inspect"]["log_version"] == 2 and rec.meta["inspect"]["task"] == "notes"
    # one run per sample, named by the sample's uuid
    assert load(JSON).run_ids == [s["uuid"] for s in raw["samples"]]


def test_times_and_texts_come_from_the_log():
    raw = json.loads(JSON.read_text())
    recover = next(s for s in raw["samples"] if s["id"] == "recover")
    rec = load(JSON)
    started = rec.event_objects[0]
    assert started.task == "Read the notes and tell me what they say."
    assert started.tools == ("read_file", "fetch", "delete_file", "explode") and started.models == (M,)
    assert started.at == pd.Timestamp(recover["started_at"]).timestamp()
    first_model = next(e for e in recover["events"] if e["event"] == "model")
    t = rec.turns
    assert t["started_at"].iloc[0] == pd.Timestamp(first_model["timestamp"])
    assert t["reply_text"].iloc[6] == "The notes say: ship on Friday."
    finished = next(e for e in rec.event_objects if e.kind == "run_finished")
    assert finished.output == "The notes say: ship on Friday." and finished.outcome == "ok"
    # the long validation message is an attachment in the file; the model read it in full
    assert '"message": "attachment://' in JSON.read_text()


def test_the_eval_and_the_json_log_read_the_same():
    both = [load(EVAL), load(JSON)]
    for sample in ("recover", "tokens"):
        a, b = (rows(r, sample, [*COLUMNS, *USAGE, "reply_text", "n_calls"]) for r in both)
        assert a == b


def test_load_detects_the_logs_and_load_many_mixes_them(tmp_path):
    assert load(EVAL, format="inspect").run_ids == load(EVAL).run_ids
    frame = loopnb.load_many(GOLDEN)
    assert frame.groupby("source")["run_id"].nunique().to_dict() == {str(EVAL): 4, str(JSON): 2}
    loopnb_golden = GOLDEN.parents[1] / "v2" / "ok_soft_then_ok.jsonl"
    mixed = loopnb.load_many([EVAL, loopnb_golden])
    assert mixed["source"].nunique() == 2 and set(mixed["channel"]) == {"ok", "soft", "hard"}


def test_replay_report_audit_and_flows_work_on_a_log(tmp_path):
    from loopnb.notebook import replay

    rec = load(EVAL)
    crash = samples_of(rec)["crash"]
    view = replay(rec, run_id=crash)
    assert view.slider.max == 2 and view.runs is not None and len(view.runs.options) == 4
    page = rec.to_html(tmp_path / "notes.html").read_text()
    assert "KeyError(&#x27;x&#x27;)" in page and "hook_veto" in page
    summary = loopnb.audit(rec).by_producer().set_index("producer")["turns"].to_dict()
    assert summary["source_error"] == 1 and summary["hook_veto"] == 1 and summary["loop_detected"] == 1
    flows = loopnb.flow_counts(rec).set_index(["source", "target"])["count"]
    # the crash and the token limit end at once; the message limit is the safety systems' stop
    assert flows["adapt", "hard"] == 2 and flows["watch", "hard2"] == 1


def test_every_status_written_has_a_mark():
    for path in (EVAL, JSON):
        rec = load(path)
        said = set(rec.events["source_status"].dropna()) | set(rec.turns["source_status"].dropna())
        assert said and all(s.startswith(S) and s.removeprefix(S) in MARKS for s in said)
    assert MARKS["failed"] == "crash" and MARKS["parsing"] == "retry" and MARKS["token_limit"] == "ended"


# --- samples edited from the goldens: what else a log may hold ---------------------------------


def _log() -> dict[str, Any]:
    return json.loads(JSON.read_text())


def _sample(log: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in log["samples"] if s["id"] == name)


def _turns(log: dict[str, Any], name: str, columns: list[str] = COLUMNS) -> list[list[Any]]:
    return rows(from_inspect(log), name, columns)


@pytest.mark.parametrize(
    ("kind", "producer"),
    [
        ("token", "context_exceeded"),
        ("context", "context_exceeded"),
        ("cost", "context_exceeded"),
        ("message", "loop_detected"),
        ("turn", "loop_detected"),
        ("time", "cancelled"),
        ("working", "cancelled"),
        ("operator", "cancelled"),
        ("custom", "source_error"),
    ],
)
def test_each_limit_ends_the_sample_with_its_producer(kind, producer):
    log = _log()
    _sample(log, "tokens")["limit"] = {"type": kind, "limit": 5.0, "reason": f"the {kind} limit"}
    assert _turns(log, "tokens")[1] == [
        "hard",
        producer,
        "read_file",
        f"the {kind} limit",
        f"{S}{kind}_limit",
        0,
    ]


def test_an_error_that_no_tool_raised_ends_the_sample_as_source_error():
    log = _log()
    tokens = _sample(log, "tokens")
    tokens["limit"] = None
    tokens["error"] = {
        "message": "RuntimeError('the solver broke')",
        "traceback": 'File "solver.py", line 3, in solve\nRuntimeError: the solver broke',
        "traceback_ansi": "",
    }
    rec = from_inspect(log)
    assert rows(rec, "tokens", COLUMNS)[1] == [
        "hard", "source_error", "read_file", "RuntimeError('the solver broke')", S + "error", 0,
    ]  # fmt: skip
    finished = [e for e in rec.event_objects if e.kind == "run_finished"][-1]
    assert finished.error == "RuntimeError" and finished.producer == "source_error"
    assert loopnb.audit(rec).disagreements().empty  # an ended run, not a tool's crash


def test_a_tool_crash_is_told_by_its_traceback_where_the_event_does_not_say():
    log, _ = read_eval_log(EVAL)
    crash = next(s for s in log["samples"] if s["id"] == "crash")
    for event in crash["events"]:
        event.pop("failed", None)  # as logs before ToolEvent.failed have it
    rec = from_inspect(log)
    assert rows(rec, "crash", COLUMNS) == TURNS["crash"]
    assert loopnb.audit(rec).disagreements()["reason"].tolist() == ["panic_ended_run"]


def test_a_failed_attempt_the_eval_retried_is_a_run_of_its_own():
    log = _log()
    tokens = _sample(log, "tokens")
    tokens["error_retries"] = [
        {"message": "KeyError('x')", "traceback": "", "traceback_ansi": "", "events": tokens["events"][:12]}
    ]
    rec = from_inspect(log)
    attempt = f"{tokens['uuid']}/attempt1"
    assert rec.run_ids == [_sample(log, "recover")["uuid"], attempt, tokens["uuid"]]
    t = rec.turns[rec.turns["run_id"] == attempt]
    assert t["channel"].tolist() == ["ok", "hard"] and t["source_status"].tolist()[1] == S + "error"


def test_a_sample_without_events_is_read_from_its_messages():
    log = _log()
    _sample(log, "recover")["events"] = []
    rows_ = _turns(log, "recover")
    assert [r[:4] for r in rows_] == [r[:4] for r in TURNS["recover"]]
    assert [r[4] for r in rows_] == [r[4] for r in TURNS["recover"]]


def test_a_sample_given_twice_is_read_once():
    log = _log()
    with pytest.warns(
        loopnb.RecordingWarning, match=r"from_inspect: sample 'recover' epoch 1 .* given twice"
    ):
        rec = from_inspect([log, copy.deepcopy(log)])
    assert rec.turns.equals(from_inspect(log).turns)


def test_a_model_call_of_a_scorer_is_not_a_turn():
    log = _log()
    recover = _sample(log, "recover")
    scorers = next(e for e in recover["events"] if e["event"] == "span_begin" and e["type"] == "scorers")
    grader = copy.deepcopy(next(e for e in recover["events"] if e["event"] == "model"))
    grader["span_id"] = scorers["id"]
    recover["events"].append(grader)
    assert len(_turns(log, "recover")) == 7


def test_a_call_the_log_kept_no_result_for_is_missing():
    log = _log()
    recover = _sample(log, "recover")
    first_tool = next(i for i, e in enumerate(recover["events"]) if e["event"] == "tool")
    call_id = recover["events"].pop(first_tool)["id"]
    recover["messages"] = [m for m in recover["messages"] if m.get("tool_call_id") != call_id]
    rec = from_inspect(log)
    assert rows(rec, "recover", COLUMNS)[0] == ["ok", None, "read_file", None, S + "missing", 0]
    gone = loopnb.audit(rec).disagreements()
    assert gone["reason"].tolist() == ["missing_tool_record"] and gone["call_id"].tolist() == [call_id]


def test_a_parsing_error_for_an_offered_tool_missing_at_dispatch_is_a_registry_miss():
    log = _log()
    recover = _sample(log, "recover")
    model = [e for e in recover["events"] if e["event"] == "model"][2]  # the turn that called serch
    model["tools"].append({"name": "serch", "description": "", "parameters": {}})
    assert _turns(log, "recover")[2][:2] == ["soft", "registry_miss"]


# --- damaged and unexpected files ---------------------------------------------------------------


def test_a_damaged_member_is_named(tmp_path):
    data = bytearray(EVAL.read_bytes())
    with zipfile.ZipFile(EVAL) as zf:
        info = next(i for i in zf.infolist() if i.filename.startswith("samples/recover"))
    spot = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2
    data[spot] ^= 0xFF
    bad = tmp_path / "bad.eval"
    bad.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match=r"bad\.eval: member samples/recover_epoch_1\.json"):
        load(bad, errors="raise")


def test_a_cut_eval_log_is_a_recording_error(tmp_path):
    cut = tmp_path / "cut.eval"
    cut.write_bytes(EVAL.read_bytes()[: EVAL.stat().st_size // 2])
    with pytest.raises(RecordingError, match=r"cut\.eval: not a readable zip archive"):
        load(cut, format="inspect")


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_deflated_and_stored_members_read_the_same(tmp_path, method):
    log, members = read_eval_log(EVAL)
    plain = tmp_path / "plain.eval"
    with zipfile.ZipFile(EVAL) as src, zipfile.ZipFile(plain, "w", compression=method) as dst:
        for info in src.infolist():
            if info.filename.startswith("samples/"):
                sample = log["samples"][members.index(f"member {info.filename}")]
                dst.writestr(info.filename, json.dumps(sample))
            elif info.filename == "header.json":
                dst.writestr(info.filename, json.dumps({k: v for k, v in log.items() if k != "samples"}))
    assert load(plain).turns.equals(load(EVAL).turns)


def test_reading_an_eval_log_without_zstandard_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ImportError, match=r"pip install 'loopnb\[foreign\]'"):
        load(EVAL)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda s: s.update(events={"no": "list"}),
            r"events: expected list, found dict",
        ),
        (lambda s: s["events"][11].pop("id"), r"events\[11\]\.id: expected str, found NoneType"),
        (
            lambda s: s["events"][8].update(timestamp="noon"),
            r"events\[8\]\.timestamp: expected an ISO 8601 time",
        ),
        (
            lambda s: s["events"][8]["output"]["usage"].update(input_tokens="many"),
            r"events\[8\]\.output\.usage\.input_tokens: expected a number of tokens, found 'many'",
        ),
        (
            lambda s: s["events"][8]["output"]["choices"][0]["message"].update(tool_calls=[7]),
            r"events\[8\] tool_calls\[0\]: expected dict, found int",
        ),
    ],
)
def test_an_unexpected_value_names_where_it_is(tmp_path, edit, message):
    log = _log()
    edit(log["samples"][0])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(log))
    with pytest.raises(
        RecordingError, match=r"edited\.json: samples\[0\] \(sample 'recover', epoch 1\), " + message
    ):
        load(path, errors="raise")


def test_a_log_that_is_not_json_or_holds_no_samples(tmp_path):
    torn = tmp_path / "torn.json"
    torn.write_text(JSON.read_text()[:5000])
    with pytest.raises(RecordingError, match=r"torn\.json, line \d+: not JSON"):
        load(torn, format="inspect")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**_log(), "samples": None}))
    with pytest.raises(
        RecordingError, match=r"holds no samples \(status 'success', written without samples\)"
    ):
        load(empty)
    with pytest.raises(TypeError, match="from_inspect: expected an EvalLog"):
        from_inspect(42)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    return [prefix, *(p for k, v in items for p in _paths(v, (*prefix, k)))]


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_read_or_fail_as_a_recording_error(seed):
    """Any value of any type anywhere in a log: its runs, or a ``RecordingError`` naming where."""
    import random

    pick = random.Random(seed)
    base, _ = read_eval_log(EVAL)
    spots = [p for p in _paths(base) if p]
    for _ in range(100):
        log = copy.deepcopy(base)
        for spot in pick.sample(spots, 3):
            with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier edit moved it
                parent: Any = log
                for key in spot[:-1]:
                    parent = parent[key]
                parent[spot[-1]] = pick.choice([None, 7, "x", [], {}, True, -1.5, [1], {"a": 1}])
        try:
            rec = from_inspect(log, errors="raise")
            assert len(rec.turns) == rec.meta["n_turns"]
        except RecordingError as exc:
            assert "samples" in str(exc) or "expected" in str(exc)
