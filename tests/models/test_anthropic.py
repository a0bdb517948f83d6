"""AnthropicModel against the local protocol server: what goes on the wire, what comes back."""

from __future__ import annotations

import asyncio
import sys

import pytest

from loopnb.engine import Message, ModelReply, ToolCall, ToolResult, Usage
from loopnb.engine._messages import Transcript
from loopnb.engine.models import AnthropicModel, ModelConfigError, to_anthropic_request
from loopnb.engine.models._remote import NO_KEY
from tests.models.fakeserver import FakeServer, Reply
from tests.models.transcripts import READ_FILE, after_mistyped_path, start

KEY = "sk-ant-test-0123456789abcdef"


def model(server: FakeServer, **kwargs: object) -> AnthropicModel:
    kwargs.setdefault("api_key", KEY)
    return AnthropicModel("claude-test", base_url=server.anthropic_url, **kwargs)  # type: ignore[arg-type]


def complete(m: AnthropicModel, transcript: Transcript, tools=(READ_FILE,)) -> ModelReply:
    return asyncio.run(m.complete(transcript, tools))


def test_a_soft_error_reaches_the_model_as_a_native_error_tool_result(server: FakeServer) -> None:
    server.push(Reply(calls=[("read_file", {"path": "src/main.rs"})]))
    complete(model(server), after_mistyped_path("toolu_1"))

    body = server.requests[0].body
    assert server.requests[0].path == "/v1/messages"
    assert body["system"] == "You read code."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What does src/main.rs do?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "src/mian.rs"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "file src/mian.rs not found",
                    "is_error": True,
                }
            ],
        },
    ]


def test_one_turns_results_travel_together_in_one_user_message(server: FakeServer) -> None:
    server.push(Reply("ok"))
    items = start()
    items.append(
        ModelReply(
            text="Both.",
            tool_calls=(
                ToolCall("read_file", {"path": "a"}, id="t1"),
                ToolCall("read_file", {"path": "b"}, id="t2"),
            ),
        )
    )
    items.append(ToolResult("A", call_id="t1"))
    items.append(ToolResult("file b not found", is_error=True, call_id="t2"))
    complete(model(server), Transcript(items))

    assistant, results = server.requests[0].body["messages"][1:]
    assert [block["type"] for block in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": "file b not found",
                "is_error": True,
            },
        ],
    }


def test_a_recovery_note_is_a_second_block_of_the_same_result() -> None:
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "x"}, id="t1"),)))
    items.append(ToolResult("file x not found", is_error=True, call_id="t1", note="try y"))
    result = to_anthropic_request(items)["messages"][-1]["content"][0]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [
            {"type": "text", "text": "file x not found"},
            {"type": "text", "text": "Note: try y"},
        ],
        "is_error": True,
    }


def test_feedback_after_results_joins_their_user_message_and_late_system_text_too() -> None:
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "x"}, id="t1"),)))
    items.append(ToolResult("ok", call_id="t1"))
    items.append(Message(role="system", content="You are repeating yourself."))
    items.append(Message(role="user", content="Answer now."))
    request = to_anthropic_request(items)
    assert request["system"] == "You read code."
    assert [block["type"] for block in request["messages"][-1]["content"]] == [
        "tool_result",
        "text",
        "text",
    ]


def test_ids_are_made_acceptable_to_the_api_and_stay_paired() -> None:
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "x"}, id="run:1/turn.2"),)))
    items.append(ToolResult("ok", call_id="run:1/turn.2"))
    messages = to_anthropic_request(items)["messages"]
    assert messages[1]["content"][0]["id"] == "run_1_turn_2"
    assert messages[2]["content"][0]["tool_use_id"] == "run_1_turn_2"


def test_raw_arguments_from_another_model_travel_inside_an_object() -> None:
    items = start(system=None)
    items.append(ModelReply(tool_calls=(ToolCall("read_file", "{oops", id="t1"),)))
    items.append(ToolResult("bad arguments", is_error=True, call_id="t1"))
    request = to_anthropic_request(items)
    assert "system" not in request
    assert request["messages"][1]["content"][0]["input"] == {"raw": "{oops"}


def test_an_empty_result_and_an_empty_reply_are_still_valid_blocks() -> None:
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "x"}, id="t1"),)))
    items.append(ToolResult("", call_id="t1"))
    items.append(ModelReply(text=""))
    messages = to_anthropic_request(items)["messages"]
    assert messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1"}]
    assert messages[3]["content"] == [{"type": "text", "text": "(empty reply)"}]


def test_tools_are_sent_with_input_schema(server: FakeServer) -> None:
    server.push(Reply("a"), Reply("b"))
    m = model(server)
    complete(m, Transcript(start()))
    complete(m, Transcript(start()), tools=())
    assert server.requests[0].body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a UTF-8 text file.",
            "input_schema": READ_FILE.parameters,
        }
    ]
    assert server.requests[0].body["max_tokens"] == 4096
    assert "tools" not in server.requests[1].body


def test_tool_use_comes_back_with_ids_and_usage(server: FakeServer) -> None:
    server.push(
        Reply(
            text="Let me look.",
            calls=[("read_file", {"path": "a"})],
            input_tokens=90,
            output_tokens=12,
        )
    )
    reply = complete(model(server), Transcript(start()))
    assert reply.text == "Let me look."
    assert reply.tool_calls == (ToolCall("read_file", {"path": "a"}, id="toolu_1"),)
    assert reply.usage == Usage(input_tokens=90, output_tokens=12)
    assert reply.model == f"anthropic:claude-test@127.0.0.1:{server.port}"


def test_a_final_reply_is_text_only(server: FakeServer) -> None:
    server.push(Reply("It prints nothing."))
    reply = complete(model(server), Transcript(start()))
    assert reply.is_final
    assert reply.text == "It prints nothing."


def test_one_client_per_event_loop_so_repeated_runs_work(server: FakeServer) -> None:
    server.push(Reply("one"), Reply("two"))
    m = model(server)
    assert [complete(m, Transcript(start())).text for _ in range(2)] == ["one", "two"]


def test_the_key_goes_to_the_server_and_nowhere_else(server: FakeServer) -> None:
    server.push(Reply("ok"))
    m = model(server)
    reply = complete(m, Transcript(start()))
    sent = server.requests[0].headers
    assert KEY in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))
    assert KEY not in repr(m)
    assert KEY not in repr(reply)


def test_no_key_and_no_server_is_a_clear_error_naming_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="set ANTHROPIC_API_KEY"):
        AnthropicModel("claude-haiku-4-5")


def test_the_key_comes_from_anthropic_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    m = AnthropicModel("claude-haiku-4-5")
    assert m.name == "anthropic:claude-haiku-4-5"
    assert "sk-ant-env" not in repr(m)


def test_a_local_server_needs_no_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
    server.push(Reply("ok"))
    assert complete(AnthropicModel("local"), Transcript(start())).text == "ok"
    sent = server.requests[0].headers
    assert NO_KEY in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))


def test_a_missing_client_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ImportError, match=r'pip install "loopnb\[anthropic\]"'):
        AnthropicModel("claude-haiku-4-5", api_key=KEY)


def test_extra_options_and_max_tokens_go_into_every_request(server: FakeServer) -> None:
    server.push(Reply("ok"))
    complete(model(server, max_tokens=256, temperature=0), Transcript(start()))
    assert server.requests[0].body["max_tokens"] == 256
    assert server.requests[0].body["temperature"] == 0
