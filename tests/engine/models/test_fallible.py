"""FallibleModel against hand-built transcripts: each way it reads an error, and determinism."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from loopnb.engine import Message, ModelReply, ToolCall, ToolResult, ToolSpec
from loopnb.engine._messages import Transcript
from loopnb.engine.models import FallibleModel
from tests.dependency_words import missing_message, pydantic_message, validation_error_text

Item = Message | ModelReply | ToolResult


def _spec(name: str, **props: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        parameters={
            "type": "object",
            "properties": {k: {"type": v} for k, v in props.items()},
            "required": list(props),
        },
    )


READ = _spec("read_file", path="string")
SEARCH = _spec("search", query="string")
TOP = _spec("top", query="string", n="integer")
MAIN = ToolCall("read_file", {"path": "src/main.rs"})


def task(text: str = "What does src/main.rs do?") -> list[Item]:
    return [Message(role="system", content="You are helpful."), Message(role="user", content=text)]


def turn(items: list[Item], call: ToolCall, text: str, *, error: bool = True) -> list[Item]:
    """The transcript after the model made ``call`` and read ``text``."""
    call = ToolCall(call.name, call.arguments, id=f"c{len(items)}")
    result = ToolResult(text, is_error=error, name=call.name, call_id=call.id)
    return [*items, ModelReply(tool_calls=(call,)), result]


def next_call(model: FallibleModel, items: list[Item], tools: list[ToolSpec]) -> ToolCall:
    reply = model.reply(items, tools)
    assert len(reply.tool_calls) == 1, reply
    return reply.tool_calls[0]


def same(call: ToolCall, expected: ToolCall) -> bool:
    return (call.name, call.arguments) == (expected.name, expected.arguments)


Responder = Callable[[ToolCall], tuple[str, bool]]


def drive(model: FallibleModel, tools: list[ToolSpec], respond: Responder, text: str) -> list[Item]:
    """A miniature loop: the model against a function answering each call (content, is_error)."""
    items = task(text)
    for _ in range(20):
        reply = model.reply(items, tools)
        items.append(reply)
        if reply.is_final:
            return items
        for call in reply.tool_calls:
            content, error = respond(call)
            items.append(ToolResult(content, is_error=error, name=call.name, call_id=call.id))
    raise AssertionError("the model never answered")


def calls_of(items: list[Item]) -> list[tuple[str, object]]:
    return [(c.name, c.arguments) for i in items if isinstance(i, ModelReply) for c in i.tool_calls]


def careful(plan: list[ToolCall], **kw: object) -> FallibleModel:
    return FallibleModel(plan, mistakes=(), **kw)  # type: ignore[arg-type]


# -- first tries ---------------------------------------------------------------------------


def test_typo_swaps_two_adjacent_letters_of_a_string_argument() -> None:
    seen = {
        next_call(FallibleModel([MAIN], mistakes=("typo",), seed=s), task(), [READ]).arguments["path"]
        for s in range(12)
    }
    assert "src/mian.rs" in seen
    for path in seen:
        assert path.startswith("src/") and sorted(path) == sorted("src/main.rs") and path != "src/main.rs"


def test_shape_guesses_the_argument_shape_wrong() -> None:
    plan = [ToolCall("top", {"query": "tokio", "n": 3})]
    seen = [next_call(FallibleModel(plan, mistakes=("shape",), seed=s), task(), [TOP]) for s in range(12)]
    args = [c.arguments for c in seen]
    assert any(a.get("n") == "three" for a in args)  # a number as a string
    assert any(a.get("query") == ["tokio"] for a in args)  # a list where a string is expected
    assert any("query" not in a for a in args)  # a wrong key name
    assert all(c.name == "top" for c in seen)


def test_hallucinate_calls_a_plausible_tool_that_is_not_advertised() -> None:
    seen = {
        next_call(FallibleModel([MAIN], mistakes=("hallucinate",), seed=s), task(), [READ]).name
        for s in range(12)
    }
    assert "read_file" not in seen
    assert "open_file" in seen
    assert all(name.endswith("file") or "read_file" in name for name in seen)


def test_a_careful_model_makes_the_call_it_meant() -> None:
    assert same(next_call(careful([MAIN]), task(), [READ]), MAIN)
    assert same(next_call(FallibleModel([MAIN], mistake_rate=0.0), task(), [READ]), MAIN)


# -- reading error texts -------------------------------------------------------------------


def test_reads_a_not_found_text_naming_the_misspelt_value_and_puts_back_the_one_it_meant() -> None:
    items = turn(task(), ToolCall("read_file", {"path": "src/mian.rs"}), "file src/mian.rs not found")
    assert same(next_call(careful([MAIN]), items, [READ]), MAIN)


def test_not_advertised_picks_the_closest_advertised_name() -> None:
    items = turn(task(), ToolCall("open_file", {"path": "src/main.rs"}), "tool 'open_file' is not available")
    assert same(next_call(careful([MAIN]), items, [SEARCH, READ]), MAIN)


def test_renaming_fits_the_arguments_to_the_new_tools_schema() -> None:
    items = turn(task(), ToolCall("open", {"file": "src/main.rs"}), "tool 'open' is not available")
    assert same(next_call(careful([MAIN]), items, [READ]), MAIN)


def test_registry_miss_uses_the_suggestion() -> None:
    text = "Tool not found: fetch_file. Available: search, read_file Did you mean 'read_file'?"
    items = turn(task(), ToolCall("fetch_file", {"path": "src/main.rs"}), text)
    assert same(next_call(careful([MAIN]), items, [READ, SEARCH]), MAIN)


def test_registry_miss_without_a_suggestion_picks_from_the_available_list() -> None:
    text = "Tool not found: readfile. Available: search, read_file, list_dir"
    items = turn(task(), ToolCall("readfile", {"path": "src/main.rs"}), text)
    assert same(next_call(careful([MAIN]), items, [READ, SEARCH]), MAIN)


def test_registry_miss_with_nothing_available_gives_up_and_says_so() -> None:
    text = "Tool not found: read_file. Available: "
    items = turn(task(), MAIN, text)
    reply = careful([MAIN]).reply(items, [READ])
    assert reply.is_final
    assert "I could not read_file(src/main.rs): Tool not found: read_file." in (reply.text or "")


def test_did_you_mean_in_any_text_replaces_the_value() -> None:
    plan = [ToolCall("read_file", {"path": "/etc/osts"})]
    text = "File /etc/osts not found. Did you mean /etc/hosts?"
    items = turn(task(), plan[0], text)
    assert next_call(careful(plan), items, [READ]).arguments == {"path": "/etc/hosts"}
    quoted = turn(task(), plan[0], "no such file; did you mean '/etc/hosts'?")
    assert next_call(careful(plan), quoted, [READ]).arguments == {"path": "/etc/hosts"}


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ({"file": "src/main.rs"}, missing_message),
        ({"path": ["src/main.rs"]}, lambda: pydantic_message(str, ["src/main.rs"])),
    ],
)
def test_invalid_arguments_naming_the_field_are_fixed_from_the_schema(
    sent: dict, said: Callable[[], str]
) -> None:
    # the words pydantic says today, inside the line loopnb's dispatcher builds around them
    text = f"invalid arguments for read_file: path: {said()} (got {sent})"
    items = turn(task(), ToolCall("read_file", sent), text)
    assert same(next_call(careful([MAIN]), items, [READ]), MAIN)


def test_a_number_sent_as_a_word_is_fixed_from_the_schema() -> None:
    plan = [ToolCall("top", {"query": "tokio", "n": 3})]
    text = validation_error_text("top", n=(int, "three"))
    items = turn(task(), ToolCall("top", {"query": "tokio", "n": "three"}), text)
    assert next_call(careful(plan), items, [TOP]).arguments == {"query": "tokio", "n": 3}


def test_timed_out_tries_once_more_then_gives_up_on_the_step() -> None:
    plan = [ToolCall("search", {"query": "slow"}), MAIN]
    text = "Tool 'search' timed out after 0.2s"
    once = turn(task(), plan[0], text)
    assert same(next_call(careful(plan), once, [READ, SEARCH]), plan[0])
    twice = turn(once, plan[0], text)
    assert same(next_call(careful(plan), twice, [READ, SEARCH]), MAIN)
    done = turn(twice, MAIN, "fn main() {}", error=False)
    final = careful(plan).reply(done, [READ, SEARCH])
    assert final.is_final and "I could not search(slow): Tool 'search' timed out after 0.2s" in (
        final.text or ""
    )


@pytest.mark.parametrize(
    "text",
    [
        "tool temporarily unavailable: circuit breaker open",
        "blocked by policy: no network access",
        "dispatch refused before execution: identical call failed 3 times",
    ],
)
def test_unavailable_blocked_or_refused_routes_around_the_step(text: str) -> None:
    plan = [ToolCall("search", {"query": "x"}), MAIN]
    items = turn(task(), plan[0], text)
    assert same(next_call(careful(plan), items, [READ, SEARCH]), MAIN)
    final = careful(plan).reply(turn(items, MAIN, "fn main() {}", error=False), [READ, SEARCH])
    assert final.text is not None and text in final.text and "fn main() {}" in final.text


@pytest.mark.parametrize("text", ["error", "failed", "something went wrong"])
def test_a_text_that_says_nothing_actionable_makes_it_repeat_the_same_call(text: str) -> None:
    sent = ToolCall("read_file", {"path": "src/mian.rs"})
    items = task()
    for _ in range(5):
        items = turn(items, sent, text)
        assert same(next_call(careful([MAIN]), items, [READ]), sent)


def test_stubbornness_ignores_even_a_good_text() -> None:
    sent = ToolCall("read_file", {"path": "src/mian.rs"})
    items = turn(task(), sent, "file src/mian.rs not found")
    assert same(next_call(careful([MAIN], stubbornness=1.0), items, [READ]), sent)
    refused = turn(items, sent, "dispatch refused before execution: identical failing call")
    assert same(next_call(careful([MAIN], stubbornness=1.0), refused, [READ]), sent)
    some = [careful([MAIN], stubbornness=0.5, seed=s) for s in range(20)]
    repeated = {same(next_call(m, items, [READ]), sent) for m in some}
    assert repeated == {True, False}


def test_a_panic_is_retried_once_then_routed_around() -> None:
    plan = [ToolCall("search", {"query": "x"}), MAIN]
    text = 'Tool "search" panicked: division by zero'
    once = turn(task(), plan[0], text)
    assert same(next_call(careful(plan), once, [READ, SEARCH]), plan[0])
    assert same(next_call(careful(plan), turn(once, plan[0], text), [READ, SEARCH]), MAIN)


def test_a_missing_file_it_meant_to_read_is_reported_not_retried() -> None:
    plan = [ToolCall("read_file", {"path": "config.yaml"})]
    items = turn(task(), plan[0], "file config.yaml not found")
    final = careful(plan).reply(items, [READ])
    assert final.is_final
    assert final.text == (
        "I found nothing I could use for this task. "
        "I could not read_file(config.yaml): file config.yaml not found"
    )


def test_corrections_are_bounded_per_step() -> None:
    items = task()
    for name in ("a_tool", "b_tool", "c_tool", "d_tool", "e_tool"):
        items = turn(items, ToolCall(name, {"path": "p"}), f"tool '{name}' is not available")
    assert careful([MAIN]).reply(items, [READ]).is_final


# -- whole runs, answers -------------------------------------------------------------------


def _files(call: ToolCall) -> tuple[str, bool]:
    if call.name == "search":
        return (f"3 hits for {call.arguments.get('query')}", False)
    if call.name != "read_file":
        return (f"tool '{call.name}' is not available", True)
    path = call.arguments.get("path") if isinstance(call.arguments, dict) else None
    if not isinstance(path, str):
        return (
            f"invalid arguments for read_file: path: {missing_message()} (got {call.arguments})",
            True,
        )
    if path != "src/main.rs":
        return (f"file {path} not found", True)
    return ("fn main() {}", False)


@pytest.mark.parametrize("seed", range(10))
def test_every_seed_recovers_from_its_slips_and_quotes_what_it_read(seed: int) -> None:
    items = drive(FallibleModel([MAIN], seed=seed), [READ], _files, "What does src/main.rs do?")
    assert items[-1].text == "read_file(src/main.rs) returned: fn main() {}."  # type: ignore[union-attr]
    assert 2 <= len(calls_of(items)) <= 3


def test_with_no_plan_it_derives_one_from_the_task_and_the_tools() -> None:
    model = FallibleModel(mistakes=())
    items = drive(model, [READ, SEARCH], _files, "Explain src/main.rs and look up 'tokio runtime'.")
    assert calls_of(items) == [
        ("read_file", {"path": "src/main.rs"}),
        ("search", {"query": "tokio runtime"}),
    ]
    assert items[-1].text == (  # type: ignore[union-attr]
        "read_file(src/main.rs) returned: fn main() {}. "
        "search(tokio runtime) returned: 3 hits for tokio runtime."
    )


def test_with_nothing_to_do_it_answers_at_once() -> None:
    reply = FallibleModel().reply(task("Hello there"), [READ])
    assert reply.is_final and reply.text == "I found nothing I could use for this task."


def test_answer_may_be_a_callable_of_the_outputs_it_read() -> None:
    model = FallibleModel(
        [MAIN, ToolCall("search", {"query": "q"})], answer=lambda out: " | ".join(out), seed=3
    )
    items = drive(model, [READ, SEARCH], _files, "go")
    assert items[-1].text == "fn main() {} | 3 hits for q"  # type: ignore[union-attr]


def test_a_rejected_answer_is_restated_nearly_the_same() -> None:
    model = careful([], answer="The program prints nothing and exits with status zero.")
    items = task()
    texts = []
    for _ in range(4):
        reply = model.reply(items, [READ])
        texts.append(reply.text)
        items = [*items, reply, Message(role="user", content="Not done yet: cite the file.")]
    assert texts[0] == "The program prints nothing and exits with status zero."
    assert all(t is not None and t.endswith(texts[0]) for t in texts)


# -- determinism and statelessness ---------------------------------------------------------


def test_the_same_seed_replays_identically() -> None:
    runs = [
        drive(FallibleModel(seed=7), [READ, SEARCH], _files, "Read src/main.rs, find 'x'") for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_different_seeds_make_different_mistakes() -> None:
    first = [next_call(FallibleModel([MAIN], seed=s), task(), [READ]) for s in range(30)]
    kinds = set()
    for call in first:
        if call.name != "read_file":
            kinds.add("hallucinate")
        elif call.arguments.get("path") not in (None, "src/main.rs") and isinstance(
            call.arguments.get("path"), str
        ):
            kinds.add("typo")
        else:
            kinds.add("shape")
    assert kinds == {"typo", "shape", "hallucinate"}


def test_it_keeps_no_state_between_calls() -> None:
    model = FallibleModel(seed=1)
    a = turn(task(), ToolCall("read_file", {"path": "src/mian.rs"}), "file src/mian.rs not found")
    b = task("Read notes.txt")
    expected = (FallibleModel(seed=1).reply(a, [READ]), FallibleModel(seed=1).reply(b, [READ]))
    assert (model.reply(a, [READ]), model.reply(b, [READ])) == expected
    assert (model.reply(a, [READ]), model.reply(b, [READ])) == expected


def test_complete_is_the_async_model_protocol() -> None:
    model = FallibleModel([MAIN], seed=2, name="toy")
    reply = asyncio.run(model.complete(Transcript(task()), [READ]))
    assert reply == model.reply(task(), [READ]) and reply.model == "toy"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"mistakes": ("typo", "spelling")}, ValueError),
        ({"stubbornness": 1.5}, ValueError),
        ({"mistake_rate": -0.1}, ValueError),
        ({"plan": ["read_file"]}, TypeError),
        ({"answer": 42}, TypeError),
    ],
)
def test_bad_construction_is_refused_with_a_clear_error(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        FallibleModel(**kwargs)


def test_reading_only_what_is_new_gives_what_a_full_reread_gives() -> None:
    reused = FallibleModel(seed=4)
    items = task("Read src/main.rs and 'tokio'")
    for _ in range(12):
        reply = reused.reply(items, [READ, SEARCH])
        assert reply == FallibleModel(seed=4).reply(items, [READ, SEARCH])
        if reply.is_final:
            break
        call = reply.tool_calls[0]
        content, error = _files(call)
        items = [*items, reply, ToolResult(content, is_error=error, name=call.name, call_id=call.id)]
    assert reply.is_final


def test_a_transcript_that_changed_behind_the_bookmark_is_read_again() -> None:
    model = careful([MAIN, ToolCall("search", {"query": "q"})])
    done = turn(task(), MAIN, "fn main() {}", error=False)
    assert same(next_call(model, done, [READ, SEARCH]), ToolCall("search", {"query": "q"}))
    compacted = task()  # the old turn was dropped: same length prefix, different items
    assert same(next_call(model, compacted, [READ, SEARCH]), MAIN)
    assert same(next_call(model, done, [SEARCH]), ToolCall("search", {"query": "q"}))
