"""``what_if`` on runs other frameworks made: would loopnb's loop detector have stopped this one?

A pydantic-ai agent run here on its own ``FunctionModel`` (offline) keeps calling a tool that
keeps failing; read with ``from_pydantic_ai``, it replays under loopnb's engine with its tools
answered from the recording. The committed goldens show what the replay cannot word as the
source did, and that those turns are not counted as a change's doing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import loopnb
from loopnb import LoopDetector

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "pydantic-ai"


@pytest.fixture(scope="module")
def stubborn() -> loopnb.Recording:
    """Seven identical failing calls, then the model gives up: 8 turns, 7 of them soft."""
    asked = {"n": 0}

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked["n"] += 1
        if asked["n"] <= 7:
            return ModelResponse(
                parts=[ToolCallPart("read_file", {"path": "config.yaml"}, tool_call_id=f"t{asked['n']}")]
            )
        return ModelResponse(parts=[TextPart("I could not find config.yaml.")])

    agent = Agent(FunctionModel(answer, model_name="stubborn"), retries=10)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        raise ModelRetry(f"file {path} not found")

    result = agent.run_sync("What is in config.yaml?")
    return loopnb.from_pydantic_ai(result.all_messages())


def test_the_imported_run_replays_exactly(stubborn):
    assert stubborn.turns["producer"].tolist()[:7] == ["tool_error"] * 7
    found = loopnb.what_if(stubborn).what_if
    assert found.turn is None and found.unreproduced == () and found.ended == "ok"


def test_the_default_detector_refuses_the_fourth_call(stubborn):
    found = loopnb.what_if(stubborn, loop_detector=LoopDetector()).what_if
    assert found.turn == 4 and found.how == "soft (tool_error) -> soft (loop_refusal)"
    # what the model read then is pydantic-ai's rendering of the tool's words, as the run recorded it
    read = stubborn.turns["error_text"].iloc[found.turn - 1]
    assert "file config.yaml not found" in read
    assert found.read_then == f"read_file -> error (tool_error): {read}"
    assert found.saved is None


def test_projected_the_default_detector_stops_it_at_turn_6(stubborn):
    found = loopnb.what_if(stubborn, loop_detector=LoopDetector(), to_end=True).what_if
    assert found.ended == "loop_detected" and len(found.replay.turns) == 6
    tokens = stubborn.turns[["input_tokens", "output_tokens"]].sum(axis=1)
    saved = found.saved
    assert saved is not None and saved.turns == 2
    assert saved.input_tokens is not None and saved.output_tokens is not None
    assert saved.input_tokens + saved.output_tokens == int(tokens.iloc[6:].sum())


def test_a_detector_that_stops_at_once_saves_four_turns_and_their_tokens(stubborn):
    comparison = loopnb.what_if(stubborn, loop_detector=LoopDetector(warn_after=3, stop_after=3))
    found = comparison.what_if
    assert found.turn == 4 and found.ended == "loop_detected"
    saved = found.saved
    assert saved is not None and (saved.turns, saved.calls, saved.executions) == (4, 3, 4)
    frame = stubborn.turns
    assert saved.input_tokens == int(frame["input_tokens"].iloc[4:].sum())
    assert saved.output_tokens == int(frame["output_tokens"].iloc[4:].sum())
    assert comparison.totals["ended"].tolist() == ["ok", "loop_detected"]


def test_turns_in_the_sources_own_words_are_listed_not_blamed_on_the_change():
    recovered = loopnb.load(GOLDEN / "recovered.json")
    comparison = loopnb.what_if(recovered, loop_detector=LoopDetector())
    found = comparison.what_if
    # pydantic-ai's words for an unknown tool, its validation error and its retry prompt
    assert found.unreproduced == (2, 3, 6)
    assert found.turn is None  # no call repeats: the detector changes nothing
    assert comparison.first_divergence == 2  # the recording and the replay do differ there


def test_a_call_the_source_ended_the_run_on_has_no_recorded_result():
    found = loopnb.what_if(loopnb.load(GOLDEN / "exhausted.json")).what_if
    assert found.unreproduced == (2,)
    replayed = found.replay.turns
    assert replayed["error_text"].iloc[1].startswith("what-if: the recording holds no result for read_file")
    assert len(replayed) == 2  # the replay stops where the recording ends
