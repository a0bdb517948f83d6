"""OpenAIChatModel against the local protocol server: what goes on the wire, what comes back."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from loopnb.engine import Message, ModelReply, ToolCall, ToolResult, Usage
from loopnb.engine._messages import Transcript
from loopnb.engine.models import ModelConfigError, OpenAIChatModel
from loopnb.engine.models._openai import ERROR_PREFIX, parse_arguments
from loopnb.engine.models._remote import NO_KEY
from tests.models.fakeserver import FakeServer, Reply
from tests.models.transcripts import READ_FILE, after_mistyped_path, start

KEY = "sk-test-0123456789abcdef"


def model(server: FakeServer, **kwargs: object) -> OpenAIChatModel:
    kwargs.setdefault("api_key", KEY)
    return OpenAIChatModel("gpt-test", base_url=server.openai_url, **kwargs)  # type: ignore[arg-type]


def complete(m: OpenAIChatModel, transcript: Transcript, tools=(READ_FILE,)) -> ModelReply:
    return asyncio.run(m.complete(transcript, tools))


def test_a_soft_error_reaches_the_model_as_a_tool_message_prefixed_error(
    server: FakeServer,
) -> None:
    server.push(Reply(calls=[("read_file", {"path": "src/main.rs"})]))
    complete(model(server), after_mistyped_path("call_1"))

    sent = server.requests[0].body["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "src/mian.rs"}'},
            }
        ],
    }
    assert sent[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "ERROR: file src/mian.rs not found",
    }
    assert ERROR_PREFIX == "ERROR: "


def test_a_success_travels_verbatim_and_system_and_task_lead(server: FakeServer) -> None:
    server.push(Reply("It prints nothing."))
    items = list(after_mistyped_path())
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "src/main.rs"}, id="c2"),)))
    items.append(ToolResult("fn main() {}", name="read_file", call_id="c2"))
    complete(model(server), Transcript(items))

    sent = server.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "You read code."}
    assert sent[1] == {"role": "user", "content": "What does src/main.rs do?"}
    assert sent[-1] == {"role": "tool", "tool_call_id": "c2", "content": "fn main() {}"}


def test_a_recovery_note_travels_beside_the_result_not_inside_it(server: FakeServer) -> None:
    server.push(Reply("ok"))
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "x"}, id="c1"),)))
    items.append(ToolResult("file x not found", is_error=True, call_id="c1", note="did you mean y?"))
    complete(model(server), Transcript(items))

    assert server.requests[0].body["messages"][-1]["content"] == [
        {"type": "text", "text": "ERROR: file x not found"},
        {"type": "text", "text": "Note: did you mean y?"},
    ]


def test_advertised_tools_are_sent_as_functions_and_none_sends_no_tools(server: FakeServer) -> None:
    server.push(Reply("a"), Reply("b"))
    m = model(server)
    complete(m, Transcript(start()))
    complete(m, Transcript(start()), tools=())

    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a UTF-8 text file.",
                "parameters": READ_FILE.parameters,
            },
        }
    ]
    assert server.requests[0].body["model"] == "gpt-test"
    assert "tools" not in server.requests[1].body


def test_tool_calls_come_back_with_ids_arguments_and_usage(server: FakeServer) -> None:
    server.push(
        Reply(
            text="Reading both.",
            calls=[("read_file", {"path": "a"}), ("read_file", {"path": "b"})],
            input_tokens=120,
            output_tokens=17,
        )
    )
    reply = complete(model(server), Transcript(start()))

    assert reply.text == "Reading both."
    assert reply.tool_calls == (
        ToolCall("read_file", {"path": "a"}, id="call_1"),
        ToolCall("read_file", {"path": "b"}, id="call_2"),
    )
    assert reply.usage == Usage(input_tokens=120, output_tokens=17)
    assert reply.model == f"openai:gpt-test@127.0.0.1:{server.port}"
    assert not reply.is_final


def test_a_final_reply_is_text_only(server: FakeServer) -> None:
    server.push(Reply("It prints nothing."))
    reply = complete(model(server), Transcript(start()))
    assert reply.is_final
    assert reply.text == "It prints nothing."


def test_garbage_arguments_pass_through_as_the_raw_string(server: FakeServer) -> None:
    server.push(Reply(calls=[("read_file", '{"path": "src/ma')]))
    reply = complete(model(server), Transcript(start()))
    assert reply.tool_calls[0].arguments == '{"path": "src/ma'


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ('{"path": "a"}', {"path": "a"}),
        ("", {}),
        ("  ", {}),
        (None, {}),
        ("[1, 2]", "[1, 2]"),
        ('"a string"', '"a string"'),
        ("{oops", "{oops"),
    ],
)
def test_parse_arguments(raw: str | None, parsed: object) -> None:
    assert parse_arguments(raw) == parsed


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ("{oops", '{"raw": "{oops"}'),
        ("[1, 2]", '{"raw": "[1, 2]"}'),
        ('"src/main.rs"', '{"raw": "\\"src/main.rs\\""}'),
        ('{"path":"a"}', '{"path":"a"}'),
        ("  ", "{}"),
        ({"path": "a"}, '{"path": "a"}'),
    ],
)
def test_arguments_go_back_as_a_json_object_on_the_next_turn(
    server: FakeServer, arguments: str | dict[str, str], sent: str
) -> None:
    server.push(Reply("ok"))
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", arguments, id="c1"),)))
    items.append(ToolResult("invalid arguments", is_error=True, call_id="c1"))
    complete(model(server), Transcript(items))
    call = server.requests[0].body["messages"][2]["tool_calls"][0]
    assert call["function"]["arguments"] == sent
    assert isinstance(json.loads(sent), dict)


def test_one_client_per_event_loop_so_repeated_runs_work(server: FakeServer) -> None:
    server.push(Reply("one"), Reply("two"), Reply("three"))
    m = model(server)
    assert [complete(m, Transcript(start())).text for _ in range(3)] == ["one", "two", "three"]


def test_the_key_goes_to_the_server_and_nowhere_else(server: FakeServer) -> None:
    server.push(Reply(calls=[("read_file", {"path": "a"})]))
    m = model(server)
    reply = complete(m, Transcript(start()))

    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(m)
    assert KEY not in str(m)
    assert KEY not in repr(reply)
    assert KEY not in repr(reply)


def test_the_key_comes_from_openai_api_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.push(Reply("ok"))
    complete(OpenAIChatModel("gpt-test", base_url=server.openai_url), Transcript(start()))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_no_key_and_no_server_is_a_clear_error_naming_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="set OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o-mini")


def test_a_local_server_needs_no_key(server: FakeServer) -> None:
    server.push(Reply("ok"))
    m = OpenAIChatModel("qwen", base_url=server.openai_url)
    assert complete(m, Transcript(start())).text == "ok"
    assert server.requests[0].headers["authorization"] == f"Bearer {NO_KEY}"


def test_openai_base_url_is_read_from_the_environment(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
    server.push(Reply("ok"))
    m = OpenAIChatModel("qwen")
    assert m.base_url == server.openai_url
    assert complete(m, Transcript(start())).text == "ok"


def test_names_default_to_provider_model_and_server(server: FakeServer) -> None:
    assert OpenAIChatModel("gpt-4o-mini", api_key=KEY).name == "openai:gpt-4o-mini"
    assert model(server).name == f"openai:gpt-test@127.0.0.1:{server.port}"
    assert model(server, name="primary").name == "primary"
    credentials_in_url = OpenAIChatModel("m", base_url="http://user:pw@127.0.0.1:9/v1")
    assert "pw" not in credentials_in_url.name


def test_a_ready_client_is_used_as_given(server: FakeServer) -> None:
    import openai

    server.push(Reply("ok"))

    async def with_own_client() -> ModelReply:
        client = openai.AsyncOpenAI(api_key="sk-own", base_url=server.openai_url, max_retries=0)
        async with client:  # the caller owns the client and closes it
            m = OpenAIChatModel("gpt-test", client=client)
            return await m.complete(Transcript(start()), [READ_FILE])

    assert asyncio.run(with_own_client()).text == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer sk-own"


def test_extra_options_go_into_every_request(server: FakeServer) -> None:
    server.push(Reply("ok"))
    complete(model(server, temperature=0, seed=7), Transcript(start()))
    assert server.requests[0].body["temperature"] == 0
    assert server.requests[0].body["seed"] == 7


def test_a_missing_client_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match=r'pip install "loopnb\[openai\]"'):
        OpenAIChatModel("gpt-4o-mini", api_key=KEY)


def test_a_feedback_message_mid_run_travels_as_its_role(server: FakeServer) -> None:
    server.push(Reply("ok"))
    items = start()
    items.append(ModelReply(text="Done."))
    items.append(Message(role="user", content="That answer was rejected: cite the file."))
    complete(model(server), Transcript(items))
    sent = server.requests[0].body["messages"]
    assert sent[2] == {"role": "assistant", "content": "Done."}
    assert sent[3] == {"role": "user", "content": "That answer was rejected: cite the file."}


def test_options_the_client_does_not_know_travel_in_the_body(server: FakeServer) -> None:
    server.push(Reply("ok"))
    complete(model(server, top_k=5, repetition_penalty=1.1), Transcript(start()))
    assert server.requests[0].body["top_k"] == 5
    assert server.requests[0].body["repetition_penalty"] == 1.1


def test_options_the_adapter_sets_itself_are_refused() -> None:
    with pytest.raises(ModelConfigError, match="stream"):
        OpenAIChatModel("gpt-4o-mini", api_key=KEY, stream=True)
