"""What a server sends back that is not quite a reply, for both adapters.

A reply the adapter cannot read at all is a model failure naming what came; a tool call it can
half read becomes one the dispatcher answers softly; bookkeeping it cannot read (usage) is
dropped. No pydantic or client exception escapes, and a 200 carrying an error is never a reply.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loopnb import Engine, FakeClock, FallbackExhausted, ToolError, tool
from loopnb.engine import ModelReply, ModelUnavailable, Usage
from loopnb.engine._messages import Transcript
from loopnb.engine.models import AnthropicModel, OpenAIChatModel
from tests.models.fakeserver import FakeServer, Raw, Reply
from tests.models.transcripts import READ_FILE, TASK, start

KEY = "sk-replies-secret-31313131"


def openai_body(message: Any, *, finish: str = "stop", **extra: Any) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return json.dumps({"id": "x", "object": "chat.completion", "choices": [choice], **extra}).encode()


def call(arguments: Any = "{}", **fields: Any) -> dict[str, Any]:
    wire = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": arguments}}
    wire.update(fields)
    return wire


def with_calls(*calls: dict[str, Any], finish: str = "tool_calls") -> Raw:
    return Raw(
        200, openai_body({"role": "assistant", "content": None, "tool_calls": list(calls)}, finish=finish)
    )


def anthropic_body(content: Any, **extra: Any) -> bytes:
    body = {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": "end_turn",
    }
    return json.dumps({**body, **extra}).encode()


def tool_use(**fields: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}, **fields}


def ask(provider: str, server: FakeServer, action: Raw) -> ModelReply:
    server.push(action)
    if provider == "openai":
        model: Any = OpenAIChatModel("m", base_url=server.openai_url, api_key=KEY)
    else:
        model = AnthropicModel("m", base_url=server.anthropic_url, api_key=KEY)
    return asyncio.run(model.complete(Transcript(start()), [READ_FILE]))


def calls_of(reply: ModelReply) -> list[tuple[str, Any, str]]:
    return [(c.name, c.arguments, c.id) for c in reply.tool_calls]


READABLE = [
    pytest.param(
        "openai",
        with_calls(call({"path": "a"})),
        [("read_file", {"path": "a"}, "c1")],
        id="openai-arguments-as-an-object",
    ),
    pytest.param(
        "openai",
        with_calls(call("[1, 2]")),
        [("read_file", "[1, 2]", "c1")],
        id="openai-arguments-as-an-array",
    ),
    pytest.param(
        "openai",
        with_calls(call('"src/main.rs"')),
        [("read_file", '"src/main.rs"', "c1")],
        id="openai-arguments-as-a-bare-string",
    ),
    pytest.param(
        "openai",
        with_calls(call(7)),
        [("read_file", "7", "c1")],
        id="openai-arguments-as-a-number",
    ),
    pytest.param(
        "openai",
        with_calls(call('{"path": "src/ma'), finish="length"),
        [("read_file", '{"path": "src/ma', "c1")],
        id="openai-cut-off-by-length",
    ),
    pytest.param(
        "openai",
        with_calls(call(), call()),
        [("read_file", {}, "c1"), ("read_file", {}, "c1_2")],
        id="openai-duplicate-ids",
    ),
    pytest.param("openai", with_calls(call(id=None)), [("read_file", {}, "")], id="openai-no-id"),
    pytest.param(
        "openai",
        with_calls({"id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}}),
        [("", {}, "c1")],
        id="openai-name-null",
    ),
    pytest.param(
        "openai",
        with_calls({"id": "c1", "type": "function"}),
        [("", {}, "c1")],
        id="openai-no-function",
    ),
    pytest.param(
        "openai",
        with_calls({"id": "c1", "type": "mystery", "mystery": {"name": "read_file"}}),
        [("read_file", {}, "c1")],
        id="openai-unknown-call-type",
    ),
    pytest.param(
        "anthropic",
        Raw(200, anthropic_body([tool_use(input=None)])),
        [("read_file", {}, "t1")],
        id="anthropic-input-null",
    ),
    pytest.param(
        "anthropic",
        Raw(200, anthropic_body([tool_use(input=["a"])])),
        [("read_file", '["a"]', "t1")],
        id="anthropic-input-as-an-array",
    ),
    pytest.param(
        "anthropic",
        Raw(200, anthropic_body([tool_use(), tool_use()])),
        [("read_file", {}, "t1"), ("read_file", {}, "t1_2")],
        id="anthropic-duplicate-ids",
    ),
    pytest.param(
        "anthropic",
        Raw(200, anthropic_body([tool_use(name=None)])),
        [("", {}, "t1")],
        id="anthropic-name-null",
    ),
]


@pytest.mark.parametrize(("provider", "action", "calls"), READABLE)
def test_a_half_readable_tool_call_still_reaches_the_dispatcher(
    server: FakeServer, provider: str, action: Raw, calls: list[tuple[str, Any, str]]
) -> None:
    assert calls_of(ask(provider, server, action)) == calls


@pytest.mark.parametrize(
    ("provider", "action", "text"),
    [
        pytest.param(
            "openai",
            Raw(200, openai_body({"role": "assistant", "content": [{"type": "text", "text": "hi"}]})),
            "hi",
            id="openai-content-parts",
        ),
        pytest.param(
            "openai",
            Raw(200, openai_body({"role": "assistant", "content": None, "refusal": "I can't"})),
            "I can't",
            id="openai-refusal",
        ),
        pytest.param(
            "openai",
            Raw(200, openai_body({"role": "assistant", "content": "hi", "extra": 1}, unknown={"a": 1})),
            "hi",
            id="openai-unknown-fields",
        ),
        pytest.param(
            "anthropic",
            Raw(200, anthropic_body([{"type": "text", "text": None}, {"type": "text", "text": "hi"}])),
            "hi",
            id="anthropic-text-null",
        ),
        pytest.param(
            "anthropic",
            Raw(200, anthropic_body([{"type": "mystery"}, {"type": "text", "text": "hi"}])),
            "hi",
            id="anthropic-unknown-block",
        ),
    ],
)
def test_odd_but_readable_text_is_read(server: FakeServer, provider: str, action: Raw, text: str) -> None:
    reply = ask(provider, server, action)
    assert reply.text == text and reply.is_final


@pytest.mark.parametrize(
    ("provider", "usage"),
    [
        ("openai", {"prompt_tokens": "many", "completion_tokens": 1.5}),
        ("openai", {"prompt_tokens": -3, "completion_tokens": None}),
        ("anthropic", {"input_tokens": "many", "output_tokens": 2.5}),
    ],
)
def test_unreadable_usage_costs_nothing(server: FakeServer, provider: str, usage: dict[str, Any]) -> None:
    if provider == "openai":
        action = Raw(200, openai_body({"role": "assistant", "content": "hi"}, usage=usage))
    else:
        action = Raw(200, anthropic_body([{"type": "text", "text": "hi"}], usage=usage))
    reply = ask(provider, server, action)
    assert reply.text == "hi"
    assert reply.usage == Usage(input_tokens=0, output_tokens=0)


UNREADABLE = [
    pytest.param(
        "openai", Raw(200, b'{"id": "x", "object": "chat.completion"}'), "without choices", id="oa-none"
    ),
    pytest.param("openai", Raw(200, openai_body(None)), "choice without a message", id="oa-message-null"),
    pytest.param("openai", Raw(200, b"[1, 2]"), "not a chat completion: list [1, 2]", id="oa-json-array"),
    pytest.param(
        "openai",
        Raw(200, openai_body({"role": "assistant", "content": 42})),
        "content is not text: int 42",
        id="oa-content-number",
    ),
    pytest.param(
        "openai",
        Raw(200, openai_body({"role": "assistant", "tool_calls": {"id": "c1"}})),
        "tool_calls is not a list",
        id="oa-tool-calls-object",
    ),
    pytest.param(
        "openai",
        Raw(200, b'{"error": {"message": "upstream overloaded", "code": "overloaded"}}'),
        "the server answered with an error: upstream overloaded [overloaded]",
        id="oa-error-with-200",
    ),
    pytest.param("anthropic", Raw(200, b"null"), "not a message: NoneType None", id="an-json-null"),
    pytest.param(
        "anthropic",
        Raw(200, b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'),
        "the server answered with an error: Overloaded [overloaded_error]",
        id="an-error-with-200",
    ),
]


@pytest.mark.parametrize(("provider", "action", "text"), UNREADABLE)
def test_an_unreadable_reply_is_a_model_failure_saying_what_came(
    server: FakeServer, provider: str, action: Raw, text: str
) -> None:
    with pytest.raises(ModelUnavailable) as info:
        ask(provider, server, action)
    assert type(info.value) is ModelUnavailable
    assert str(info.value).startswith(f"{provider}:m@127.0.0.1:{server.port}: ")
    assert text in str(info.value)
    assert KEY not in str(info.value)


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def test_an_error_sent_with_200_is_never_the_runs_answer(server: FakeServer) -> None:
    error = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    server.push(*[Raw(200, error)] * 3)
    model = AnthropicModel("m", base_url=server.anthropic_url, api_key=KEY)
    with pytest.raises(FallbackExhausted, match="Overloaded"):
        Engine(model, tools=[read_file], clock=FakeClock()).run(TASK)


def test_a_nameless_call_and_duplicate_ids_are_answered_softly(server: FakeServer) -> None:
    server.push(
        with_calls(
            {"id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}},
            call('{"path": "src/main.rs"}', id="c2"),
            call('{"path": "src/main.rs"}', id="c2"),
        ),
        Reply("It prints nothing."),
    )
    model = OpenAIChatModel("m", base_url=server.openai_url, api_key=KEY)
    result = Engine(model, tools=[read_file], clock=FakeClock()).run(TASK)

    assert result.output == "It prints nothing."
    assert [(r.call_id, r.is_error) for r in result.tool_results] == [
        ("c1", True),
        ("c2", False),
        ("c2_2", False),
    ]
    sent = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent] == ["c1", "c2", "c2_2"]


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("openai", b'{"error": {"message": "bad key ' + KEY.encode() + b'"}}'),
        ("openai", b"<html>key " + KEY.encode() + b" refused</html>"),
        ("anthropic", b'{"type": "error", "error": {"message": "bad key ' + KEY.encode() + b'"}}'),
        ("anthropic", b'["' + KEY.encode() + b'"]'),
    ],
)
def test_a_reply_that_echoes_the_key_is_quoted_without_it(
    server: FakeServer, provider: str, body: bytes
) -> None:
    with pytest.raises(ModelUnavailable) as info:
        ask(provider, server, Raw(200, body))
    assert KEY not in str(info.value)
    assert "***" in str(info.value)
