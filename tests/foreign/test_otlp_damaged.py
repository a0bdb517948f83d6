"""The OpenTelemetry reader on damaged spans (the committed goldens, edited; no package needed).

A value of the wrong shape anywhere, in a span or inside the JSON an attribute holds, is a
``RecordingError`` that names where the span is, which span, the attribute and what was expected
(and the file, when there is one): never a ``TypeError`` or any other exception.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb.record import RecordingError

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "otlp"
V2 = GOLDEN / "pydantic_ai_v2.spans.jsonl"
LEGACY = GOLDEN / "legacy_genai.console.txt"
ALL = [
    GOLDEN / "pydantic_ai.otlp.json",
    GOLDEN / "pydantic_ai.pb.json",
    V2,
    GOLDEN / "openinference.otlp.jsonl",
]
ALL.append(LEGACY)


def _values(path: Path) -> list[Any]:
    """The JSON values one after another in ``path`` (one, a line each, or printed in turn)."""
    text, decoder, out, pos = path.read_text(), json.JSONDecoder(), [], 0
    while (pos := len(text) - len(text[pos:].lstrip())) < len(text):
        value, pos = decoder.raw_decode(text, pos)
        out.append(value)
    return out


def _span(spans: list[dict[str, Any]], span_id: str) -> dict[str, Any]:
    return next(s for s in spans if s["context"]["span_id"] == span_id)


def _v2(edit: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The v2 golden's ``span.to_json()`` dicts, its first model request (span 2) edited."""
    spans = _values(V2)
    edit(_span(spans, "0x0000000000000002")["attributes"])
    return spans


def _legacy(edit: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The previous conventions' golden, its first model request (span 2) edited."""
    spans = _values(LEGACY)
    edit(_span(spans, "0x0000000000000002"))
    return spans


def _choice(span: dict[str, Any], message: Any) -> None:
    next(e for e in span["events"] if e["name"] == "gen_ai.choice")["attributes"]["message"] = message


def _as_attribute(span: dict[str, Any], tool_calls: Any) -> None:
    """The span's message events as pydantic-ai's ``events`` attribute, the assistant's calls edited."""
    events = [{"event.name": e["name"], **e["attributes"]} for e in span.pop("events")]
    events.append({"event.name": "gen_ai.assistant.message", "tool_calls": tool_calls})
    span["attributes"]["events"] = json.dumps(events)


V2_SPAN = re.escape(", span 0000000000000002 'chat scripted-model', ")
LEGACY_SPAN = re.escape(", span 0000000000000002 'chat legacy-model', ")
CASES = [
    (  # the shapes that raised TypeError
        _v2(lambda a: a.update({"gen_ai.output.messages": '[{"role": "assistant", "parts": 7}]'})),
        V2_SPAN + re.escape("gen_ai.output.messages[0].parts: expected a list of parts, found int 7"),
    ),
    (
        _legacy(lambda s: _choice(s, json.dumps({"role": "assistant", "tool_calls": 7}))),
        LEGACY_SPAN
        + re.escape("event gen_ai.choice.message.tool_calls: expected a list of tool calls, found int 7"),
    ),
    (
        _legacy(lambda s: _as_attribute(s, '{"id": "k1"}')),
        LEGACY_SPAN
        + re.escape("events[2].tool_calls: expected a list of tool calls, found dict {'id': 'k1'}"),
    ),
    (  # and the others the fuzzing below found
        _legacy(lambda s: _choice(s, json.dumps({"tool_calls": [{"id": "k1", "function": "read_file"}]}))),
        LEGACY_SPAN
        + re.escape(
            "event gen_ai.choice.message.tool_calls[0].function: expected an object ({name, arguments}),"
            " found str 'read_file'"
        ),
    ),
    (
        _v2(lambda a: a.update({"gen_ai.input.messages": '["read the notes"]'})),
        V2_SPAN
        + re.escape(
            "gen_ai.input.messages[0]: expected a message object ({role, parts}), found str 'read the notes'"
        ),
    ),
    (
        _v2(lambda a: a.update({"gen_ai.input.messages": '{"role": "user"}'})),
        V2_SPAN
        + re.escape("gen_ai.input.messages: expected a JSON list of messages, found dict {'role': 'user'}"),
    ),
    (
        _v2(lambda a: a.update({"gen_ai.output.messages": '[{"parts": ["hi"]}]'})),
        V2_SPAN
        + re.escape(
            "gen_ai.output.messages[0].parts[0]: expected a part object ({type, ...}), found str 'hi'"
        ),
    ),
    (
        _v2(lambda a: a.update({"model_request_parameters": '{"output_tools": 3}'})),
        V2_SPAN
        + re.escape(
            "model_request_parameters.output_tools: expected a list of tool definitions, found int 3"
        ),
    ),
    (
        _v2(lambda a: a.update({"gen_ai.usage.input_tokens": 1e30})),
        V2_SPAN
        + re.escape("gen_ai.usage.input_tokens: expected a whole number of tokens, found float 1e+30"),
    ),
    (
        _v2(lambda a: a.update({"gen_ai.usage.output_tokens": "many"})),
        V2_SPAN
        + re.escape("gen_ai.usage.output_tokens: expected a whole number of tokens, found str 'many'"),
    ),
    (
        _legacy(lambda s: s.update(status={"status_code": "FAILED"})),
        re.escape(": a status code should be UNSET, OK or ERROR (0, 1, 2), found str 'FAILED'"),
    ),
    (
        _legacy(lambda s: s.update(status={"status_code": "ERROR", "description": ["no"]})),
        re.escape(": the status description should be a string, found list ['no']"),
    ),
    (
        _legacy(lambda s: s.update(events={"name": "exception"})),
        re.escape(": events should be a list, found dict {'name': 'exception'}"),
    ),
    (
        _legacy(lambda s: s.update(start_time="9999-12-31T00:00:00Z")),
        re.escape(": the start time 253402214400 s from 1970 is not a time between the years 1677 and 2262"),
    ),
]


@pytest.mark.parametrize(("spans", "message"), CASES)
def test_a_value_of_the_wrong_shape_says_where_what_and_what_was_expected(tmp_path, spans, message):
    """From memory: the span's place in the list; from a file: its path and line."""
    i = next(i for i, s in enumerate(spans) if s["context"]["span_id"] == "0x0000000000000002")
    with pytest.raises(RecordingError, match=f"^{re.escape(f'[{i}]')}{message}$"):
        loopnb.from_otel(spans, errors="raise")
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in spans))
    with pytest.raises(RecordingError, match=f"^{re.escape(f'{path}: line {i + 1}')}{message}$"):
        loopnb.load(path, format="otlp", errors="raise")


def test_the_spec_encodings_name_the_request_and_the_attribute(tmp_path):
    request = json.loads((GOLDEN / "pydantic_ai.otlp.json").read_text())
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    chat = next(s for s in spans if s["name"].startswith("chat"))
    kv = next(kv for kv in chat["attributes"] if kv["key"] == "gen_ai.output.messages")
    kv["value"] = {"stringValue": '[{"role": "assistant", "parts": {"type": "text"}}]'}
    chat["attributes"].append({"key": 7, "value": {"intValue": "1"}})
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(request))
    at = "resourceSpans[0].scopeSpans[0].spans[0]"
    with pytest.raises(
        RecordingError, match=re.escape(f"{path}: {at}: an attribute's key should be a string")
    ):
        loopnb.load(path, format="otlp", errors="raise")
    chat["attributes"].pop()
    chat["attributes"].append({"key": "listed", "value": {"arrayValue": [1, 2]}})
    path.write_text(json.dumps(request))
    with pytest.raises(
        RecordingError, match=re.escape("an arrayValue should be an object with values, found list")
    ):
        loopnb.load(path, format="otlp", errors="raise")
    chat["attributes"].pop()
    path.write_text(json.dumps(request))
    message = (
        f"{path}: {at}, span {int(chat['spanId'], 16):016x} {chat['name']!r}, gen_ai.output.messages[0].parts"
    )
    with pytest.raises(RecordingError, match=re.escape(message + ": expected a list of parts, found dict")):
        loopnb.load(path, format="otlp", errors="raise")


def _expanded(value: Any) -> Any:
    """``value`` with every attribute holding a JSON list or object parsed (``{"<json>": ...}``),
    so that an edit can reach inside it."""
    if isinstance(value, dict):
        return {k: _expanded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expanded(v) for v in value]
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(json.JSONDecodeError):
            parsed = json.loads(value)
            if isinstance(parsed, dict | list):
                return {"<json>": _expanded(parsed)}
    return value


def _written(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"<json>"}:
            return json.dumps(_written(value["<json>"]))
        return {k: _written(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_written(v) for v in value]
    return value


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    return [prefix, *(p for k, v in items for p in _paths(v, (*prefix, k)))]


ODD = [None, 7, "x", [], {}, True, -1.5, [1], {"a": 1}, "[1]", '{"a": 7}', '[{"parts": 5}]', 10**30, "7"]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", range(2))
def test_random_edits_read_or_fail_as_a_recording_error(path, seed):
    """Any value of any type anywhere in a golden, inside the JSON its attributes hold too: its
    runs (frames, audit and all), or a ``RecordingError``."""
    pick = random.Random(f"{path.name} {seed}")
    base = _expanded(_values(path))
    spots = [p for p in _paths(base) if p]
    failed = 0
    for _ in range(60):
        spans = copy.deepcopy(base)
        for spot in pick.sample(spots, 3):
            with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier edit moved it
                parent: Any = spans
                for key in spot[:-1]:
                    parent = parent[key]
                parent[spot[-1]] = copy.deepcopy(pick.choice(ODD))
        try:
            rec = loopnb.from_otel(_written(spans), errors="raise")
            assert len(rec.turns) == rec.meta["n_turns"]
            loopnb.audit(rec).disagreements()
        except RecordingError as exc:
            failed += 1
            assert re.match(r"(\[|span )\d+", str(exc))  # where: the span's place in the list, and on
    assert failed < 60  # most edits still read
