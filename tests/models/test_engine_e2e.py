"""The real adapters inside the real Engine, against the local protocol server.

The spec's mistyped-path scenario end to end through each official client; what the model reads
on the wire; fallback from a failing server to a healthy one; exhaustion; context overflow;
authentication errors naming the variable; the key in no event, result or error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from loopnb import (
    EVENT_ADAPTER,
    CircuitBreaker,
    ContextExceeded,
    Engine,
    FakeClock,
    FallbackChain,
    FallbackExhausted,
    ToolError,
    tool,
)
from loopnb.engine.models import AnthropicModel, OpenAIChatModel
from tests.models.fakeserver import Action, Drop, Fail, FakeServer, Received, Reply

KEY = "sk-e2e-secret-77777777"
TASK = "What does src/main.rs do?"

Factory = Callable[..., Any]
MODELS: dict[str, Factory] = {
    "openai": lambda srv, **kw: OpenAIChatModel("m", base_url=srv.openai_url, api_key=KEY, **kw),
    "anthropic": lambda srv, **kw: AnthropicModel("m", base_url=srv.anthropic_url, api_key=KEY, **kw),
}


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


class Events(list):
    def __call__(self, event: object) -> None:
        self.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self if e.kind == kind]


@pytest.fixture(params=sorted(MODELS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def mistyped_path_script() -> list[Reply]:
    return [
        Reply(calls=[("read_file", {"path": "src/mian.rs"})]),
        Reply(calls=[("read_file", {"path": "src/main.rs"})]),
        Reply("It prints nothing."),
    ]


def tool_results_sent(request: Received) -> list[dict[str, Any]]:
    """The tool results in a request, normalised to ``{id, content, is_error}`` per protocol."""
    found = []
    if request.protocol == "openai":
        for message in request.body["messages"]:
            if message["role"] == "tool":
                content = message["content"]
                found.append({"id": message["tool_call_id"], "content": content})
    else:
        for message in request.body["messages"]:
            for block in message["content"]:
                if block["type"] == "tool_result":
                    found.append(
                        {
                            "id": block["tool_use_id"],
                            "content": block.get("content", ""),
                            "is_error": block.get("is_error", False),
                        }
                    )
    return found


def test_the_mistyped_path_scenario_end_to_end(provider: str, server: FakeServer) -> None:
    server.push(*mistyped_path_script())
    events = Events()
    engine = Engine(MODELS[provider](server), tools=[read_file], observers=[events])

    result = engine.run(TASK)

    assert result.output == "It prints nothing."
    assert [(r.is_error, r.content) for r in result.tool_results] == [
        (True, "file src/mian.rs not found"),
        (False, "fn main() {}"),
    ]
    assert len(server.requests) == 3
    first_id = "call_1" if provider == "openai" else "toolu_1"
    second_id = "call_2" if provider == "openai" else "toolu_2"
    if provider == "openai":
        # No error flag in chat completions: the prefix is the flag.
        assert tool_results_sent(server.requests[1]) == [
            {"id": first_id, "content": "ERROR: file src/mian.rs not found"}
        ]
        assert tool_results_sent(server.requests[2])[1] == {
            "id": second_id,
            "content": "fn main() {}",
        }
    else:
        assert tool_results_sent(server.requests[1]) == [
            {"id": first_id, "content": "file src/mian.rs not found", "is_error": True}
        ]
        assert tool_results_sent(server.requests[2])[1] == {
            "id": second_id,
            "content": "fn main() {}",
            "is_error": False,
        }
    replied = events.of("model_replied")
    assert len(replied) == 3
    assert all(e.reply.usage is not None and e.reply.usage.input_tokens > 0 for e in replied)
    assert {e.reply.model for e in replied} == {f"{provider}:m@127.0.0.1:{server.port}"}


def test_an_unadvertised_tool_is_pre_answered_on_the_wire(provider: str, server: FakeServer) -> None:
    server.push(
        Reply(calls=[("delete_file", {"path": "src/main.rs"})]),
        Reply("I cannot delete files."),
    )
    result = Engine(MODELS[provider](server), tools=[read_file]).run(TASK)

    assert result.output == "I cannot delete files."
    [sent] = tool_results_sent(server.requests[1])
    if provider == "openai":
        assert sent["content"] == "ERROR: tool 'delete_file' is not available"
    else:
        assert sent["content"] == "tool 'delete_file' is not available"
        assert sent["is_error"] is True


def test_garbage_arguments_are_answered_softly_and_the_run_goes_on(server: FakeServer) -> None:
    server.push(
        Reply(calls=[("read_file", '{"path": "src/main.rs"')]),
        Reply(calls=[("read_file", {"path": "src/main.rs"})]),
        Reply("It prints nothing."),
    )
    result = Engine(MODELS["openai"](server), tools=[read_file]).run(TASK)

    assert result.output == "It prints nothing."
    assert result.tool_results[0].is_error
    [sent] = tool_results_sent(server.requests[1])
    assert sent["content"].startswith("ERROR: ")
    assert sent["content"] == "ERROR: " + result.tool_results[0].content
    # The raw arguments went back inside a JSON object, beside the error naming them.
    [assistant] = [m for m in server.requests[1].body["messages"] if m["role"] == "assistant"]
    sent_back = json.loads(assistant["tool_calls"][0]["function"]["arguments"])
    assert sent_back == {"raw": '{"path": "src/main.rs"'}


def like_ollama(action: Action) -> Callable[[Received], Action]:
    """``action``, unless an earlier call's arguments are not a JSON object: Ollama and vLLM
    parse them all and refuse the request with a 400."""

    def check(request: Received) -> Action:
        for message in request.body["messages"]:
            for call in message.get("tool_calls") or ():
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except ValueError:
                    arguments = None
                if not isinstance(arguments, dict):
                    return Fail(400, "invalid tool call arguments")
        return action

    return check


@pytest.mark.parametrize("garbage", ['{"path": "src/ma', "[1, 2]", '"src/main.rs"'])
def test_garbage_arguments_do_not_end_a_run_on_an_ollama_like_server(
    server: FakeServer, garbage: str
) -> None:
    server.push(
        like_ollama(Reply(calls=[("read_file", garbage)])),
        like_ollama(Reply(calls=[("read_file", {"path": "src/main.rs"})])),
        like_ollama(Reply("It prints nothing.")),
    )
    result = Engine(MODELS["openai"](server), tools=[read_file], clock=FakeClock()).run(TASK)

    assert result.output == "It prints nothing."
    assert result.tool_results[0].producer == "invalid_arguments"
    assert len(server.requests) == 3


def test_a_failing_server_falls_back_to_a_healthy_one(
    provider: str, server: FakeServer, second_server: FakeServer
) -> None:
    bad, good = server, second_server
    bad.push(Fail(500, "boom"))
    good.push(*mistyped_path_script())
    events, clock = Events(), FakeClock()
    chain = FallbackChain([MODELS[provider](bad), MODELS[provider](good)])
    engine = Engine(chain, tools=[read_file], observers=[events], clock=clock)

    result = engine.run(TASK)

    assert result.output == "It prints nothing."
    # The bad server is asked once: the healthy one answers at once, and no time passes on the
    # fake clock, so the bad one is still backing off on the later turns.
    assert len(bad.requests) == 1
    assert len(good.requests) == 3
    assert clock.slept == []
    failed = events.of("model_failed")
    assert [e.status for e in failed] == [500]
    assert {e.model for e in failed} == {chain.names[0]}
    assert result.models == (chain.names[1],)
    assert tool_results_sent(good.requests[1])[0]["content"].endswith("file src/mian.rs not found")


def test_a_run_can_change_provider_mid_transcript(server: FakeServer, second_server: FakeServer) -> None:
    openai_srv, anthropic_srv = server, second_server
    openai_srv.push(Reply(calls=[("read_file", {"path": "src/mian.rs"})]), Fail(500), Fail(500))
    openai_srv.push(Fail(500))
    anthropic_srv.push(Reply(calls=[("read_file", {"path": "src/main.rs"})]), Reply("It prints nothing."))
    chain = FallbackChain(
        [MODELS["openai"](openai_srv), MODELS["anthropic"](anthropic_srv)],
        breaker=CircuitBreaker(failure_threshold=1, cooldown=60.0),
    )
    result = Engine(chain, tools=[read_file], clock=FakeClock()).run(TASK)

    assert result.output == "It prints nothing."
    # OpenAI's call id travels to Anthropic paired with its error result.
    assert tool_results_sent(anthropic_srv.requests[0]) == [
        {"id": "call_1", "content": "file src/mian.rs not found", "is_error": True}
    ]


def test_every_server_failing_exhausts_the_chain(
    provider: str, server: FakeServer, second_server: FakeServer
) -> None:
    server.push(*[Fail(500, "first is down")] * 3)
    second_server.push(*[Fail(429, "second is rate limited")] * 3)
    chain = FallbackChain([MODELS[provider](server), MODELS[provider](second_server)])

    with pytest.raises(FallbackExhausted) as info:
        Engine(chain, tools=[read_file], clock=FakeClock()).run(TASK)

    err = info.value
    assert "first is down" in str(err)
    assert "second is rate limited" in str(err)
    assert err.env_var is None
    assert err.run is not None and err.run.output is None
    assert len(server.requests) == len(second_server.requests) == 3


def test_a_single_model_is_a_chain_of_one(server: FakeServer) -> None:
    server.push(Reply(calls=[("read_file", {"path": "src/mian.rs"})]), Drop(), Drop(), Drop())
    with pytest.raises(FallbackExhausted) as info:
        Engine(MODELS["openai"](server), tools=[read_file], clock=FakeClock()).run(TASK)
    # The first turn committed before the server went away.
    assert [r.content for r in info.value.run.tool_results] == ["file src/mian.rs not found"]


def test_refused_credentials_end_the_run_naming_the_variable(provider: str, server: FakeServer) -> None:
    server.push(*[Fail(401, f"Incorrect API key provided: {KEY}")] * 3)
    events = Events()
    with pytest.raises(FallbackExhausted) as info:
        Engine(MODELS[provider](server), tools=[read_file], observers=[events]).run(TASK)

    env_var = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    assert info.value.env_var == env_var
    assert f"set {env_var}" in str(info.value)
    assert KEY not in str(info.value)
    assert all(KEY not in EVENT_ADAPTER.dump_json(e).decode() for e in events)


def test_context_too_long_compacts_and_asks_again(provider: str, server: FakeServer) -> None:
    server.push(
        Reply(calls=[("read_file", {"path": "src/mian.rs"})]),
        Reply(calls=[("read_file", {"path": "src/main.rs"})]),
        Fail.overflow(),
        Reply("It prints nothing."),
    )
    events = Events()
    result = Engine(MODELS[provider](server), tools=[read_file], observers=[events]).run(TASK)

    assert result.output == "It prints nothing."
    assert len(events.of("context_compacted")) == 1
    assert len(tool_results_sent(server.requests[2])) == 2
    # Asked again without the oldest turn; the latest turn is never dropped.
    [kept] = tool_results_sent(server.requests[3])
    assert kept["content"] == "fn main() {}"
    assert events.of("model_failed") == []  # an overflow is not a model failure


def test_context_that_never_fits_ends_the_run_with_context_exceeded(
    provider: str, server: FakeServer
) -> None:
    server.push(Reply(calls=[("read_file", {"path": "src/mian.rs"})]), Fail.overflow())
    engine = Engine(MODELS[provider](server), tools=[read_file], system="You read code.")
    with pytest.raises(ContextExceeded) as info:
        engine.run(TASK)
    assert [m.content for m in info.value.run.messages] == ["You read code.", TASK]
    assert len(server.requests) == 2


def test_the_key_is_in_no_event_result_or_error(provider: str, server: FakeServer) -> None:
    server.push(*mistyped_path_script())
    events = Events()
    model = MODELS[provider](server)
    engine = Engine(model, tools=[read_file], observers=[events])
    result = engine.run(TASK)

    dumped = "\n".join(EVENT_ADAPTER.dump_json(e).decode() for e in events)
    assert KEY not in dumped
    assert KEY not in repr(result)
    assert all(KEY not in repr(item) for item in result.messages)
    assert KEY not in repr(model) and KEY not in repr(engine.chain)
    sent = server.requests[0].headers
    assert KEY in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))


def test_the_same_engine_runs_again_and_inside_a_running_loop(provider: str, server: FakeServer) -> None:
    server.push(*mistyped_path_script(), *mistyped_path_script(), *mistyped_path_script())
    engine = Engine(MODELS[provider](server), tools=[read_file])
    assert engine.run(TASK).output == "It prints nothing."
    assert engine.run(TASK).output == "It prints nothing."

    async def in_a_notebook_cell() -> str | None:
        return engine.run(TASK).output  # a running loop: the engine runs on its own thread

    assert asyncio.run(in_a_notebook_cell()) == "It prints nothing."


def test_arun_works_with_the_real_client(provider: str, server: FakeServer) -> None:
    server.push(*mistyped_path_script())
    engine = Engine(MODELS[provider](server), tools=[read_file])
    assert asyncio.run(engine.arun(TASK)).output == "It prints nothing."


def test_stepping_a_run_turn_by_turn_works_with_the_real_client(provider: str, server: FakeServer) -> None:
    server.push(*mistyped_path_script())
    steps = Engine(MODELS[provider](server), tools=[read_file]).iter(TASK)
    channels = [turn.channel for turn in steps]
    assert channels == ["soft", "ok", "ok"]
    assert steps.result is not None and steps.result.output == "It prints nothing."
