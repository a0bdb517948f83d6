"""The openai-agents reader on hostile traces: the committed goldens, edited (issue 24).

A value of the wrong shape anywhere the reader looks is a ``RecordingError`` naming where the
span is (the file and line, or the item of a list), which span, the field and what was
expected; never a ``TypeError`` or a value quietly taken for another. Traces nested thousands
deep read, and a parent chain that loops is named rather than its spans left out.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb.foreign._openai_agents import from_openai_agents
from loopnb.record import RecordingError

GOLDEN = Path(__file__).parents[1] / "golden" / "foreign" / "openai-agents"
CHAT, RESPONSES = GOLDEN / "chat.jsonl", GOLDEN / "responses.json"
ITEMS: list[dict[str, Any]] = [json.loads(line) for line in CHAT.read_text(encoding="utf-8").splitlines()]
INFINITY = float("inf")


def _first(kind: str) -> int:
    """The index of the golden's first span of ``kind`` (its data's type; a custom span's name)."""
    for i, item in enumerate(ITEMS):
        data = item.get("span_data", {})
        if kind in (data.get("type"), data.get("name")):
            return i
    raise AssertionError(kind)


def _data(item: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = item["span_data"]
    return data["data"] if data["type"] == "custom" else data


def _message(item: dict[str, Any]) -> dict[str, Any]:
    """The first assistant message a generation span's output holds."""
    message: dict[str, Any] = item["span_data"]["output"][0]
    return message


def _call(item: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = _message(item)["tool_calls"][0]
    return call


Edit = Callable[[dict[str, Any]], object]
CASES: list[tuple[str, Edit, str, str]] = [
    # the span's kind, the edit, the field, what was expected and found
    ("agent", lambda s: s["span_data"].update(tools=7), "span_data.tools", "a list of names, found int 7"),
    (
        "agent",
        lambda s: s["span_data"].update(handoffs=7),
        "span_data.handoffs",
        "a list of names, found int 7",
    ),
    (
        "agent",
        lambda s: s["span_data"].update(handoffs="reader"),  # was read a letter a handoff
        "span_data.handoffs",
        "a list of names, found str 'reader'",
    ),
    (
        "agent",
        lambda s: s["span_data"].update(tools=[3]),
        "span_data.tools[0]",
        "a name (a string), found int 3",
    ),
    ("agent", lambda s: s["span_data"].update(name=["x"]), "span_data.name", "a string, found list ['x']"),
    (
        "generation",
        lambda s: _message(s).update(tool_calls=7),
        "span_data.output[0].tool_calls",
        "a list of tool calls, found int 7",
    ),
    (
        "generation",
        lambda s: _message(s).update(tool_calls={"id": "call_h"}),
        "span_data.output[0].tool_calls",
        "a list of tool calls, found dict {'id': 'call_h'}",
    ),
    (
        "generation",
        lambda s: _message(s)["tool_calls"].__setitem__(0, "transfer_to_reader"),  # was left out
        "span_data.output[0].tool_calls[0]",
        "a tool call (an object), found str 'transfer_to_reader'",
    ),
    (
        "generation",
        lambda s: _call(s).update(function="transfer_to_reader"),
        "span_data.output[0].tool_calls[0].function",
        "an object ({name, arguments}), found str 'transfer_to_reader'",
    ),
    (
        "generation",
        lambda s: _call(s)["function"].update(arguments={"path": "notes"}),
        "span_data.output[0].tool_calls[0].function.arguments",
        "a string, found dict {'path': 'notes'}",
    ),
    (
        "generation",
        lambda s: s["span_data"].update(output={"role": "assistant"}),  # was taken for no reply
        "span_data.output",
        "a list of messages or output items, found dict {'role': 'assistant'}",
    ),
    (
        "generation",
        lambda s: s["span_data"].update(output=[{"output": 7, "model": "m"}]),  # a Responses dump
        "span_data.output[0].output",
        "a list of output items, found int 7",
    ),
    (
        "generation",
        lambda s: s["span_data"].update(output=[{"type": "function_call", "name": 7}]),
        "span_data.output[0].name",
        "a string, found int 7",
    ),
    (
        "generation",
        lambda s: _message(s).update(content=7),
        "span_data.output[0].content",
        "a text or a list of content parts, found int 7",
    ),
    ("generation", lambda s: s["span_data"].update(model=7), "span_data.model", "a string, found int 7"),
    (
        "generation",
        lambda s: s["span_data"].update(input=7),
        "span_data.input",
        "a text or a list of messages, found int 7",
    ),
    (
        "generation",
        lambda s: s["span_data"]["input"].__setitem__(1, "What do the release notes say?"),
        "span_data.input[1]",
        "a message or an input item (an object), found str 'What do the release notes say?'",
    ),
    (
        "generation",
        lambda s: s["span_data"]["input"][1].update(content=[{"type": "text", "text": 7}]),
        "span_data.input[1].content[0].text",
        "a string, found int 7",
    ),
    (
        "generation",
        lambda s: s["span_data"]["usage"].update(input_tokens=10**30),  # was a ValueError from pandas
        "span_data.usage.input_tokens",
        "a whole number of tokens, found int 1000000000000000000000000000000",
    ),
    (
        "generation",
        lambda s: s["span_data"]["usage"].update(output_tokens=INFINITY),
        "span_data.usage.output_tokens",
        "a whole number of tokens, found float inf",
    ),
    (
        "generation",
        lambda s: s["span_data"]["usage"].update(input_tokens=True),
        "span_data.usage.input_tokens",
        "a whole number of tokens, found bool True",
    ),
    (
        "generation",
        lambda s: s["span_data"].update(usage=[5]),
        "span_data.usage",
        "an object of token counts, found list [5]",
    ),
    (
        "turn",
        lambda s: s["span_data"]["data"]["usage"].update(input_tokens=-1),
        "span_data.data.usage.input_tokens",
        "a whole number of tokens, found int -1",
    ),
    (
        "turn",
        lambda s: s["span_data"].update(data=[]),
        "span_data.data",
        "an object (the custom span's data), found list []",
    ),
    ("handoff", lambda s: s["span_data"].update(to_agent=7), "span_data.to_agent", "a string, found int 7"),
    ("function", lambda s: s["span_data"].update(name=[1]), "span_data.name", "a string, found list [1]"),
    (
        "function",
        lambda s: s.update(error="boom"),
        "error",
        "an object ({message, data}) or null, found str 'boom'",
    ),
    ("function", lambda s: s["error"].update(data=[1]), "error.data", "an object, found list [1]"),
    ("function", lambda s: s["error"].update(message=7), "error.message", "a string, found int 7"),
    ("function", lambda s: s.update(parent_id=5), "parent_id", "a span id (a string) or null, found int 5"),
    ("function", lambda s: s.update(started_at=1e400), "started_at", "an ISO 8601 time, found float inf"),
    (
        "function",
        lambda s: s.update(ended_at="yesterday"),
        "ended_at",
        "an ISO 8601 time, found str 'yesterday'",
    ),
]


def _case_id(case: tuple[str, Edit, str, str]) -> str:
    return f"{case[0]}:{case[2]}:{case[3][:20]}"


@pytest.mark.parametrize(("kind", "edit", "at", "expected"), CASES, ids=[_case_id(c) for c in CASES])
def test_a_value_of_the_wrong_shape_names_the_span_the_field_and_what_was_expected(
    tmp_path, kind, edit, at, expected
):
    i = _first(kind)
    items = copy.deepcopy(ITEMS)
    edit(items[i])
    data = items[i]["span_data"]
    shown = "turn" if kind == "turn" and isinstance(data["data"], dict) else data["type"]
    said = f"span {items[i]['id']} ({shown}): {at}: expected {expected}"
    with pytest.raises(RecordingError, match=f"^{re.escape(f'item {i + 1}, {said}')}$"):
        from_openai_agents(items, errors="raise")
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in items), encoding="utf-8")
    with pytest.raises(RecordingError, match=f"^{re.escape(f'{path}: line {i + 1}, {said}')}$"):
        loopnb.load(path, format="openai-agents", errors="raise")


def test_a_json_list_file_names_the_item(tmp_path):
    items = json.loads(RESPONSES.read_text(encoding="utf-8"))
    i = next(i for i, item in enumerate(items) if item.get("span_data", {}).get("type") == "agent")
    items[i]["span_data"]["tools"] = {"read_file": {}}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    message = (
        f"{path}: item {i + 1}, span {items[i]['id']} (agent): span_data.tools: expected a list of names"
    )
    with pytest.raises(RecordingError, match=f"^{re.escape(message)}, found dict"):
        loopnb.load(path, format="openai-agents", errors="raise")


def test_the_shapes_the_sdk_writes_still_read():
    """Content as a list of parts (with an image and a refusal beside the text), null fields."""
    items = copy.deepcopy(ITEMS)
    generation = items[_first("generation")]
    parts = [
        {"type": "text", "text": "What do "},
        {"type": "image_url", "image_url": {}},
        {"text": "they say?"},
    ]
    generation["span_data"]["input"][1]["content"] = parts
    generation["span_data"]["usage"]["input_tokens"] = 100.0
    items[_first("agent")]["span_data"].update(tools=None, handoffs=["reader"])
    rec = from_openai_agents(items)
    first = rec.turns.iloc[0]
    assert rec.meta["n_turns"] == len(rec.turns) > 0
    assert first["input_tokens"] == 100


def _nested(depth: int) -> list[dict[str, Any]]:
    """The golden's first trace with ``depth`` custom spans nested one in another above its root."""
    trace_id = ITEMS[0]["trace_id"]
    items = [copy.deepcopy(i) for i in ITEMS if i.get("trace_id") == trace_id or i.get("id") == trace_id]
    roots = [
        i for i in items if i["object"] == "trace.span" and i["parent_id"] not in {j["id"] for j in items}
    ]
    wrapper = {k: v for k, v in roots[0].items() if k != "span_data"}
    chain = []
    for n in range(depth):
        span = {**wrapper, "id": f"span_wrap_{n}", "parent_id": f"span_wrap_{n - 1}" if n else None}
        chain.append({**span, "span_data": {"type": "custom", "name": "wrap", "data": {}}})
    for root in roots:
        root["parent_id"] = chain[-1]["id"]
    return chain + items


def test_a_trace_nested_thousands_deep_reads():
    """Walking the span tree recursed once a level: 3,000 levels were a ``RecursionError``."""
    shallow = from_openai_agents(_nested(1)).turns.drop(columns=["seq"])
    deep = from_openai_agents(_nested(3000)).turns.drop(columns=["seq"])
    assert len(shallow) > 0
    assert deep.equals(shallow)


def test_a_parent_chain_that_loops_is_named_not_left_out():
    """Two spans each the other's parent hang under no root: they were left out without a word."""
    items = copy.deepcopy(ITEMS)
    i, j = _first("function"), _first("handoff")
    items[i]["parent_id"], items[j]["parent_id"] = items[j]["id"], items[i]["id"]
    items[j]["trace_id"] = items[i]["trace_id"]
    with pytest.raises(
        RecordingError, match=r"^item \d+, span \S+ \((function|handoff)\): parent_id: expected a parent"
    ):
        from_openai_agents(items, errors="raise")


def test_json_nested_too_deeply_is_a_recording_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    whole = tmp_path / "deep.json"
    whole.write_text(deep, encoding="utf-8")
    with pytest.raises(RecordingError, match=f"^{re.escape(f'{whole}: JSON nested too deeply')}"):
        loopnb.load(whole, format="openai-agents")
    lines = tmp_path / "deep.jsonl"
    lines.write_text(CHAT.read_text(encoding="utf-8") + deep + "\n" + json.dumps(ITEMS[0]), encoding="utf-8")
    at = f"{lines}, line {len(ITEMS) + 1}: JSON nested too deeply"
    with pytest.raises(RecordingError, match=f"^{re.escape(at)}"):
        loopnb.load(lines, format="openai-agents", errors="raise")


def test_arguments_nested_too_deeply_are_kept_as_the_models_text():
    items = copy.deepcopy(ITEMS)
    i = _first("generation")
    _call(items[i])["function"]["arguments"] = "[" * 100_000 + "]" * 100_000
    rec = from_openai_agents(items)
    assert rec.meta["n_turns"] == len(rec.turns) > 0
