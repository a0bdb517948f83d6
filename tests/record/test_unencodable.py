"""Text UTF-8 cannot hold and ints the reader cannot read: recorded whole, read back as written.

The rules are ``loopnb.record._lines``': a lone surrogate is written as its JSON escape and reads
back as the same code point (the frames show the six-character escape); an int past 4300 digits
is written as ``"<int 0x...>"``; a value that is not JSON as ``"<not JSON: repr>"``.
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from pydantic import ValidationError

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, load, tool
from loopnb.engine._events import ModelReplied
from loopnb.engine._messages import ModelReply
from loopnb.record import Recorder
from loopnb.record._lines import MAX_INT_DIGITS, dump_event, dump_event_bytes, escaped_text, parse_event

from .secrets_corpus import CORPUS

NOT_UTF8 = b"caf\xe9 \xff.txt".decode("utf-8", "surrogateescape")  # as os.listdir gives it


@tool
def ls(path: str = ".") -> list[str]:
    """List a directory."""
    return [NOT_UTF8, "plain.txt"]


@tool
def take(n: object = None) -> str:
    """Takes anything."""
    return "taken"


def _run(script, *, tools=(ls, take), redact="default", tmp_path):
    options = {} if redact == "default" else {"redact": redact}
    recorder = Recorder(tmp_path / "streamed.jsonl", **options)
    engine = Engine(ScriptedModel(script), tools=list(tools), observers=[recorder], clock=FakeClock())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RecordingWarning, no LoopnbWarning: nothing detached
        engine.run("task")
    recorder.close()
    return recorder


def _assert_reloads(recorder, tmp_path):
    """The streamed file and both saved formats read back the recorder's frames, and the events
    as the rules write them (the very same events, but where a value had to be written as a
    string)."""
    exported = recorder.recording()
    written = [parse_event(dump_event(e)) for e in exported.event_objects]
    paths = [tmp_path / "streamed.jsonl", recorder.save(tmp_path / "saved.jsonl")]
    for path in [*paths, recorder.save(tmp_path / "saved.parquet")]:
        loaded = load(path)
        assert loaded.event_objects == written
        pd.testing.assert_frame_equal(loaded.turns, exported.turns)
        pd.testing.assert_frame_equal(loaded.events, exported.events)


def test_a_file_name_that_is_not_utf8_is_recorded_and_reads_back_the_same(tmp_path):
    recorder = _run([ToolCall("ls"), f"found {NOT_UTF8}"], redact=None, tmp_path=tmp_path)
    _assert_reloads(recorder, tmp_path)
    loaded = load(tmp_path / "streamed.jsonl")
    assert loaded.event_objects == recorder.event_objects  # unredacted: the very same events
    assert NOT_UTF8 in loaded.event_objects[-3].reply.text  # the final ModelReplied
    # the frames show each lone surrogate as its six-character escape, in memory as loaded
    assert list(recorder.turns["reply_text"])[-1] == "found caf\\udce9 \\udcff.txt"
    pd.testing.assert_frame_equal(loaded.turns, recorder.turns)


def test_the_line_holds_the_json_escape_of_each_lone_surrogate():
    event = ModelReplied(seq=0, run_id="r", at=0.0, turn=1, reply=ModelReply(text=NOT_UTF8), latency_ms=0.0)
    line = dump_event_bytes(event)
    assert b"caf\\udce9 \\udcff.txt" in line
    line.decode("utf-8")  # valid UTF-8
    assert json.loads(line)["reply"]["text"] == NOT_UTF8  # any JSON reader gets the same text
    assert parse_event(line) == event


@pytest.mark.parametrize(
    "text",
    [
        "\udcff\ud800",  # a low one then a high one: no pair
        "a literal \\udcff, not a surrogate, then a real \udcff",
        "\\\\\udcff",  # backslashes before the surrogate
        "\U0001f600 and \udcff",
    ],
)
def test_every_lone_surrogate_reads_back_as_that_one_code_point(text):
    event = ModelReplied(seq=0, run_id="r", at=0.0, turn=1, reply=ModelReply(text=text), latency_ms=0.0)
    assert parse_event(dump_event_bytes(event)).reply.text == text
    assert parse_event(dump_event(event)).reply.text == text


def test_a_high_and_a_low_surrogate_side_by_side_are_written_as_the_one_character_they_pair_to():
    event = ModelReplied(
        seq=0, run_id="r", at=0.0, turn=1, reply=ModelReply(text="\ud83d\ude00"), latency_ms=0.0
    )
    assert parse_event(dump_event_bytes(event)).reply.text == "\U0001f600"  # the documented exception


def test_escaped_text_is_what_the_frames_show():
    assert escaped_text("a\udcffb\ud800") == "a\\udcffb\\ud800"
    assert escaped_text("plain \U0001f600") == "plain \U0001f600"


def test_a_secret_beside_a_lone_surrogate_is_still_redacted(tmp_path):
    secret = CORPUS[0].secret

    @tool
    def leak() -> str:
        """Hands back a secret beside a file name that is not UTF-8."""
        return f"{NOT_UTF8} {secret} {NOT_UTF8}"

    recorder = _run([ToolCall("leak"), "done"], tools=[leak], tmp_path=tmp_path)
    saved = [recorder.save(tmp_path / "saved.jsonl"), recorder.save(tmp_path / "saved.parquet")]
    for path in [tmp_path / "streamed.jsonl", *saved]:
        assert secret.encode() not in path.read_bytes()
    _assert_reloads(recorder, tmp_path)


def test_an_int_of_5000_digits_in_a_tool_call_is_written_as_its_hex_and_the_file_loads(tmp_path):
    huge = 7 * 10**5000
    recorder = _run([ToolCall("take", {"n": huge}), "done"], redact=None, tmp_path=tmp_path)
    _assert_reloads(recorder, tmp_path)
    (replied,) = [e for e in load(tmp_path / "streamed.jsonl").event_objects if e.kind == "model_replied"][:1]
    written = replied.reply.tool_calls[0].arguments["n"]
    assert written.startswith("<int 0x") and int(written[5:-1], 16) == huge


@pytest.mark.parametrize("n", [10**MAX_INT_DIGITS - 1, -(10**MAX_INT_DIGITS - 1), 2**64])
def test_an_int_the_reader_reads_is_written_as_a_number(n):
    call = ToolCall("take", {"n": n}, id="c")
    event = ModelReplied(
        seq=0, run_id="r", at=0.0, turn=1, reply=ModelReply(tool_calls=(call,)), latency_ms=0.0
    )
    assert parse_event(dump_event_bytes(event)) == event


def test_a_long_run_of_digits_inside_a_string_is_kept_as_it_is():
    digits = "9" * (MAX_INT_DIGITS + 10)
    event = ModelReplied(seq=0, run_id="r", at=0.0, turn=1, reply=ModelReply(text=digits), latency_ms=0.0)
    assert parse_event(dump_event_bytes(event)) == event


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("arguments", "written"),
    [
        ({"n": Opaque()}, {"n": "<not JSON: Opaque()>"}),
        ({"n": Unprintable()}, {"n": "<not JSON: <unprintable Unprintable>>"}),
        ([1, 2], "[1, 2]"),
        (None, "None"),
        ({1: "one"}, "{1: 'one'}"),
    ],
)
def test_arguments_that_are_not_json_are_written_by_the_rule_and_the_file_loads(arguments, written, tmp_path):
    recorder = _run([ToolCall("take", arguments), "done"], redact=None, tmp_path=tmp_path)
    _assert_reloads(recorder, tmp_path)
    (replied,) = [e for e in load(tmp_path / "streamed.jsonl").event_objects if e.kind == "model_replied"][:1]
    assert replied.reply.tool_calls[0].arguments == written


@pytest.mark.parametrize(
    "line",
    [
        '{"kind":"model_replied","reply":{"text":"\\udcff"}, NaN}',
        '{"kind":"turn_started","seq":0,"run_id":"r","at":NaN,"turn":1,"x":"\\udcff"}',
    ],
)
def test_a_line_that_is_not_json_is_still_refused_with_pydantics_words(line):
    with pytest.raises(ValidationError) as info:
        parse_event(line)
    assert info.value.errors()[0]["type"] == "json_invalid"  # pydantic's error, whatever its words


@pytest.mark.parametrize(
    "arguments", [{"\udcff": 1}, {"x": {"\ud800": "nested"}}, {"x": [{"caf\udce9": None}]}]
)
def test_a_lone_surrogate_in_an_argument_name_reads_back_the_same(arguments):
    call = ToolCall("take", arguments, id="c")
    event = ModelReplied(
        seq=0, run_id="r", at=0.0, turn=1, reply=ModelReply(tool_calls=(call,)), latency_ms=0.0
    )
    assert parse_event(dump_event_bytes(event)) == event
