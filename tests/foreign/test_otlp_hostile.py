"""The OpenTelemetry reader on hostile traces built from the committed goldens (issue 24).

A chain of spans listed leaf first (the order spans end and are exported in) reads in the time
the same chain listed root first does; a time or an integer of ``1e400`` (JSON that Python
reads as infinity) or ``NaN`` is a ``RecordingError`` naming the span and the attribute.
"""

from __future__ import annotations

import copy
import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb.foreign._otlp_runs import Tree
from loopnb.foreign._otlp_spans import Span
from loopnb.record import RecordingError

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "otlp"
REQUEST = GOLDEN / "pydantic_ai.otlp.json"


def _spans(request: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    request = json.loads(REQUEST.read_text())
    request["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
    return request


def _chain(n: int, *, leaf_first: bool) -> dict[str, Any]:
    """The golden's first agent span with ``n - 1`` copies of its model requests and tool spans
    below it, each the child of the one before: one chain, listed root first or leaf first."""
    golden = _spans(json.loads(REQUEST.read_text()))
    agent = next(s for s in golden if s["name"].startswith("invoke_agent"))
    below = [s for s in golden if s.get("parentSpanId") == agent["spanId"]]
    chain = [copy.deepcopy(agent)]
    for i in range(1, n):
        span = copy.deepcopy(below[i % len(below)])
        span["spanId"], span["parentSpanId"] = f"{i + 0x100:016x}", chain[-1]["spanId"]
        chain.append(span)
    return _request(chain[::-1] if leaf_first else chain)


def _seconds(request: dict[str, Any]) -> float:
    start = time.perf_counter()
    loopnb.from_otel([request])
    return time.perf_counter() - start


def test_a_chain_listed_leaf_first_reads_as_fast_as_listed_root_first():
    """Each span arriving above the ones placed before re-placed its whole subtree: a chain
    listed leaf first took time quadratic in its length (6,000 spans: 10.8 s against 0.3 s).
    The two orders are timed in turn, the best of 3 each, so that a busy machine slows both."""
    root_first, leaf_first = _chain(4000, leaf_first=False), _chain(4000, leaf_first=True)
    times = [(_seconds(root_first), _seconds(leaf_first)) for _ in range(3)]
    best_root, best_leaf = min(t[0] for t in times), min(t[1] for t in times)
    assert best_leaf < 3 * best_root + 0.05, times


def _placements(spans: list[Span], monkeypatch: pytest.MonkeyPatch) -> int:
    """How many times ``Tree`` places a span while taking ``spans`` in turn."""
    count = 0
    place = Tree._place

    def counted(tree: Tree, span_id: str, node: Any) -> None:
        nonlocal count
        count += 1
        place(tree, span_id, node)

    with monkeypatch.context() as patched:
        patched.setattr(Tree, "_place", counted)
        tree = Tree()
        for span in spans:
            tree.add(span)
    return count


def _span(i: int, parent: int | None, operation: str | None) -> Span:
    attributes = {} if operation is None else {"gen_ai.operation.name": operation}
    parent_id = None if parent is None else f"{parent:016x}"
    return Span("1" * 32, f"{i:016x}", parent_id, f"span {i}", None, None, "UNSET", None, attributes)


OPERATIONS = [None, "chat", "execute_tool", "invoke_agent"]


@pytest.mark.parametrize("seed", range(3))
def test_a_chain_listed_leaf_first_places_each_span_a_few_times(seed, monkeypatch):
    """As its ancestors arrive a span's run is set once and its tool, chat and top flags flip once
    each: a bounded number of placements a span, not one per ancestor."""
    pick = random.Random(seed)
    n = 1000
    chain = [_span(i, i - 1 if i else None, pick.choice(OPERATIONS)) for i in range(n)]
    assert _placements(chain, monkeypatch) == n
    assert _placements(chain[::-1], monkeypatch) <= 5 * n


def _places(tree: Tree) -> dict[str, tuple[Any, ...]]:
    return {i: (n.owner, n.tool, n.chat, n.top) for i, n in tree.nodes.items()}


@pytest.mark.parametrize("seed", range(20))
def test_spans_in_any_order_are_placed_as_in_root_first_order(seed):
    """The walk stops where a place is unchanged: what it leaves is what placing all again gives."""
    pick = random.Random(seed)
    spans = [_span(0, None, "invoke_agent")]
    for i in range(1, 200):
        parent = pick.randrange(i) if pick.random() < 0.9 else 10_000 + i  # some parents never come
        spans.append(_span(i, parent, pick.choice(OPERATIONS)))
    ordered = Tree()
    for span in spans:
        ordered.add(span)
    shuffled = Tree()
    for span in pick.sample(spans, len(spans)):
        shuffled.add(span)
    assert _places(shuffled) == _places(ordered)


@pytest.mark.parametrize("seed", range(3))
def test_a_golden_listed_in_any_order_reads_the_same(seed):
    request = json.loads(REQUEST.read_text())
    expected = loopnb.from_otel([request]).turns.drop(columns=["seq"])
    random.Random(seed).shuffle(_spans(request))
    assert loopnb.from_otel([request]).turns.drop(columns=["seq"]).equals(expected)


# -- numbers JSON reads as infinity or NaN ---------------------------------------------------------


def _edited(edit: Any) -> tuple[dict[str, Any], str]:
    """The golden request, its first span edited by ``edit``; and where that span is."""
    request = json.loads(REQUEST.read_text())
    edit(_spans(request)[0])
    return request, "resourceSpans[0].scopeSpans[0].spans[0]"


def _attribute(key: str, value: dict[str, Any]) -> Any:
    return lambda span: span["attributes"].append({"key": key, "value": value})


INFINITY = float("inf")
NAN = float("nan")
CASES = [
    (
        lambda s: s.update(startTimeUnixNano=INFINITY),
        "the start time in nanoseconds should be a whole number of 64 bits, found float inf",
    ),
    (
        lambda s: s.update(endTimeUnixNano=NAN),
        "the end time in nanoseconds should be a whole number of 64 bits, found float nan",
    ),
    (
        lambda s: s.update(endTimeUnixNano="1" + "0" * 400),  # an integer past 64 bits
        "the end time in nanoseconds should be a whole number of 64 bits, found str",
    ),
    (
        lambda s: s.update(events=[{"name": "exception", "timeUnixNano": -INFINITY}]),
        "events[0] 'exception': its time in nanoseconds should be a whole number of 64 bits,"
        " found float -inf",
    ),
    (
        _attribute("gen_ai.usage.input_tokens", {"intValue": INFINITY}),
        "attribute 'gen_ai.usage.input_tokens': an intValue should be a whole number of 64 bits,"
        " found float inf",
    ),
    (
        _attribute("gen_ai.usage.input_tokens", {"intValue": NAN}),
        "attribute 'gen_ai.usage.input_tokens': an intValue should be a whole number of 64 bits,"
        " found float nan",
    ),
    (
        _attribute("gen_ai.usage.input_tokens", {"intValue": "1e400"}),
        "attribute 'gen_ai.usage.input_tokens': an intValue should be a whole number of 64 bits,"
        " found str '1e400'",
    ),
    (
        _attribute("nested", {"kvlistValue": {"values": [{"key": "n", "value": {"int_value": INFINITY}}]}}),
        "attribute 'nested': attribute 'n': an int_value should be a whole number of 64 bits,"
        " found float inf",
    ),
]


@pytest.mark.parametrize(("edit", "message"), CASES)
def test_infinity_and_nan_name_the_span_and_the_attribute(tmp_path, edit, message):
    request, at = _edited(edit)
    with pytest.raises(RecordingError, match=f"^{re.escape(f'[0] {at}: {message}')}$"):
        loopnb.from_otel([request], errors="raise")
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(request))  # 1e400 as Python writes infinity: Infinity
    with pytest.raises(RecordingError, match=f"^{re.escape(f'{path}: {at}: {message}')}$"):
        loopnb.load(path, format="otlp", errors="raise")


def test_1e400_written_in_the_file_reads_as_the_same_error(tmp_path):
    text = REQUEST.read_text()
    first = _spans(json.loads(text))[0]["startTimeUnixNano"]
    path = tmp_path / "spans.json"
    path.write_text(text.replace(f'"startTimeUnixNano": "{first}"', '"startTimeUnixNano": 1e400', 1))
    with pytest.raises(RecordingError, match=r"the start time in nanoseconds .* found float inf$"):
        loopnb.load(path, format="otlp", errors="raise")


def test_token_counts_of_infinity_or_nan_name_the_span_and_the_attribute():
    request, _ = _edited(lambda s: None)
    chat = next(s for s in _spans(request) if s["name"].startswith("chat"))
    kv = next(kv for kv in chat["attributes"] if kv["key"] == "gen_ai.usage.input_tokens")
    for value, shown in ((INFINITY, "inf"), (NAN, "nan")):
        kv["value"] = {"doubleValue": value}
        message = f"span {chat['spanId']} {chat['name']!r}, gen_ai.usage.input_tokens: expected a whole"
        message += f" number of tokens, found float {shown}"
        with pytest.raises(RecordingError, match=re.escape(message)):
            loopnb.from_otel([request], errors="raise")


def test_an_integer_longer_than_python_reads_is_a_recording_error(tmp_path):
    """Python's ``json`` refuses an integer of more than 4,300 digits with a ``ValueError``."""
    path = tmp_path / "spans.json"
    path.write_text(REQUEST.read_text().replace('"intValue": "53"', '"intValue": ' + "9" * 5000, 1))
    with pytest.raises(RecordingError, match=re.escape(f"{path}: JSON this reader cannot read")):
        loopnb.load(path, format="otlp", errors="raise")
    path.write_text(REQUEST.read_text().rstrip() + "\n" + "9" * 5000)
    with pytest.raises(RecordingError, match=re.escape(f"{path}, line 2: value 2 is JSON this reader")):
        loopnb.load(path, format="otlp", errors="raise")


# -- texts int() and json refuse inside attributes ------------------------------------------------


def _set(span: dict[str, Any], key: str, text: str) -> None:
    kv = next((kv for kv in span["attributes"] if kv["key"] == key), None)
    if kv is None:
        span["attributes"].append(kv := {"key": key})
    kv["value"] = {"stringValue": text}


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("gen_ai.usage.input_tokens", "²", "a whole number of tokens, found str '²'"),  # isdigit(), not int()
        ("gen_ai.usage.input_tokens", "9" * 5000, "a whole number of tokens, found str"),
        ("gen_ai.output.messages", "[" + "9" * 5000 + "]", "a JSON list of messages, found str"),
        ("gen_ai.input.messages", "[" + "9" * 5000 + "]", "a JSON list of messages, found str"),
    ],
)
def test_texts_python_refuses_to_read_are_named_not_raised(key, text, expected):
    request = json.loads(REQUEST.read_text())
    chat = _spans(request)[0]
    _set(chat, key, text)
    message = f"[0] resourceSpans[0].scopeSpans[0].spans[0], span {chat['spanId']} {chat['name']!r}, {key}"
    with pytest.raises(RecordingError, match=f"^{re.escape(f'{message}: expected {expected}')}$"):
        loopnb.from_otel([request], errors="raise")


def test_an_index_int_refuses_is_no_index():
    """``"²".isdigit()`` holds but ``int("²")`` raises: such a key is not one of the indexed items."""
    lines = [json.loads(line) for line in (GOLDEN / "openinference.otlp.jsonl").read_text().splitlines()]
    expected = loopnb.from_otel(lines).turns.drop(columns=["seq"])
    span = _spans(lines[0])[0]
    _set(span, "llm.tools.².tool.json_schema", "{}")
    _set(span, "llm.input_messages.².message.role", "user")
    assert loopnb.from_otel(lines).turns.drop(columns=["seq"]).equals(expected)


@pytest.mark.parametrize(
    ("value", "found"), [(INFINITY, "float inf"), (NAN, "float nan"), ("yesterday", "str 'yesterday'")]
)
def test_a_span_to_json_time_that_is_no_timestamp_names_the_time(value, found):
    spans = [json.loads(line) for line in (GOLDEN / "pydantic_ai_v2.spans.jsonl").read_text().splitlines()]
    spans[0]["end_time"] = value
    message = f"[0]: the end time should be an ISO 8601 timestamp, found {found}"
    with pytest.raises(RecordingError, match=f"^{re.escape(message)}$"):
        loopnb.from_otel(spans, errors="raise")


def _deep(depth: int, leaf: Any, wrap: Any) -> Any:
    for _ in range(depth):
        leaf = wrap(leaf)
    return leaf


def test_values_nested_past_pythons_depth_are_a_recording_error():
    """``from_otel`` takes dicts no JSON parser bounded: a ``RecursionError`` must not escape."""
    request = json.loads(REQUEST.read_text())
    nested = _deep(5000, {"intValue": "1"}, lambda v: {"kvlistValue": {"values": [{"key": "k", "value": v}]}})
    _spans(request)[0]["attributes"].append({"key": "deep", "value": nested})
    message = "[0] resourceSpans[0].scopeSpans[0].spans[0]: an attribute nested too deeply to read"
    with pytest.raises(RecordingError, match=f"^{re.escape(message)}$"):
        loopnb.from_otel([request], errors="raise")
    spans = [json.loads(line) for line in (GOLDEN / "pydantic_ai_v2.spans.jsonl").read_text().splitlines()]
    agent = next(s for s in spans if "agent" in s["name"])
    agent["attributes"]["final_result"] = _deep(5000, [], lambda v: [v])  # written out as JSON text
    with pytest.raises(RecordingError, match=r"^a span holds a value nested too deeply to read$"):
        loopnb.from_otel(spans, errors="raise")
