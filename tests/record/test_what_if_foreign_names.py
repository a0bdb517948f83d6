"""``what_if`` on another framework's run whose tool names loopnb's own tools refuse (issue 24, item 14).

A name such as ``files.read file`` is fine in a pydantic-ai history or an OTLP trace, but not a
name a model's API takes, so ``@tool`` refuses it. A replay's tools never reach a model's API, so
they keep the recorded names: the run replays exactly as it does under names loopnb takes, and
every text the replay's engine words names the tool as the recording does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import loopnb
from loopnb import CircuitBreaker, LoopDetector, Tool, ToolError, tool

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign"

RENAMED = {"read_file": "files.read file", "write_file": "files/write:file", "serch": "web.serch?"}
"""Names loopnb's tools refuse (a dot, a space, a slash, a colon, a question mark) for the goldens'."""


def renamed(tmp_path: Path, golden: str) -> loopnb.Recording:
    """The golden file with every tool name of ``RENAMED`` replaced, wherever it is written."""
    text = (GOLDEN / golden).read_text(encoding="utf-8")
    for old, new in RENAMED.items():
        text = text.replace(old, new)
    path = tmp_path / Path(golden).name
    path.write_text(text, encoding="utf-8")
    return loopnb.load(path)


def named_back(text: str) -> str:
    for old, new in RENAMED.items():
        text = text.replace(new, old)
    return text


def first_run(recording: loopnb.Recording) -> str:
    return str(recording.turns["run_id"].iloc[0])


CHANGES = [{}, {"loop_detector": LoopDetector(warn_after=1, stop_after=2)}, {"max_turns": 2}]


@pytest.mark.parametrize(
    "golden",
    [
        "pydantic-ai/recovered.json",
        "pydantic-ai/crashed.json",
        "otlp/pydantic_ai.otlp.json",
    ],
)
@pytest.mark.parametrize("changes", CHANGES, ids=["unchanged", "detector", "max_turns"])
def test_a_run_with_names_loopnb_refuses_replays_as_it_does_with_names_it_takes(tmp_path, golden, changes):
    original = loopnb.load(GOLDEN / golden)
    foreign = renamed(tmp_path, golden)
    assert set(RENAMED.values()) & set(foreign.turns["tools"].dropna().str.split(", ").sum())
    then = loopnb.what_if(original, run=first_run(original), **changes).what_if
    now = loopnb.what_if(foreign, run=first_run(foreign), **changes).what_if
    words = [(w.read_then, w.read_now, w.how) for w in (now, then)]
    assert [None if w is None else named_back(w) for w in words[0]] == list(words[1])
    assert (now.turn, now.unreproduced, now.ended, now.saved) == (
        then.turn,
        then.unreproduced,
        then.ended,
        then.saved,
    )
    tools = [t.fillna("").tolist() for t in (now.replay.turns["tools"], then.replay.turns["tools"])]
    assert [named_back(t) for t in tools[0]] == tools[1]


@pytest.fixture
def recovered(tmp_path) -> loopnb.Recording:
    """read_file fails (turn 1), serch is not a tool (2), read_file's arguments are refused (3),
    write_file fails (4), read_file succeeds (5), the answer is rejected (6) then accepted (7)."""
    return renamed(tmp_path, "pydantic-ai/recovered.json")


def test_the_replay_words_its_own_texts_with_the_recorded_names(recovered):
    found = loopnb.what_if(recovered).what_if
    assert found.baseline.turns["error_text"].iloc[1] == "tool 'web.serch?' is not available"
    assert found.baseline.turns["tools"].iloc[0] == "files.read file"


def test_a_detector_refusal_names_the_recorded_tool(recovered):
    tight = LoopDetector(warn_after=1, stop_after=5)
    found = loopnb.what_if(
        recovered, loop_detector=tight, tools={"files.read file": ToolError("gone")}
    ).what_if
    assert found.turn == 1
    assert found.read_now == "files.read file -> error (tool_error): gone"


def test_a_tool_swapped_in_under_a_recorded_name_answers(recovered):
    found = loopnb.what_if(recovered, tools={"files.read file": "hello"}).what_if
    assert found.turn == 1 and found.read_now == "files.read file -> ok: hello"

    def read(path: str) -> str:
        return f"read {path}"

    found = loopnb.what_if(recovered, tools={"files.read file": read}).what_if
    assert found.turn == 1 and found.read_now == "files.read file -> ok: read nots.txt"


def test_an_error_text_for_a_recorded_name_rewrites_its_errors(recovered):
    found = loopnb.what_if(recovered, error_text={"files/write:file": "could not write: {error}"}).what_if
    assert found.turn == 4
    assert found.read_now is not None and found.read_now.startswith(
        "files/write:file -> error (tool_error): could not write: "
    )

    def read(path: str) -> str:
        raise ToolError(f"no {path}")

    found = loopnb.what_if(
        recovered, tools={"files.read file": read}, error_text={"files.read file": "{path}: {error}"}
    ).what_if
    assert (
        found.turn == 1 and found.read_now == "files.read file -> error (tool_error): nots.txt: no nots.txt"
    )


def test_a_breaker_and_hooks_see_the_recorded_names(recovered):
    seen: list[str] = []

    def hook(call, ctx):
        seen.append(call.name)

    assert loopnb.what_if(recovered, hooks=[hook]).what_if.turn is None  # a hook that allows all: as recorded
    assert seen == [
        "files.read file",
        "files.read file",
        "files/write:file",
        "files.read file",
    ]  # not serch: never a tool

    breaker = CircuitBreaker(failure_threshold=1, cooldown=3600.0)
    found = loopnb.what_if(recovered, breakers={"files.read file": breaker}).what_if
    assert found.turn == 3 and found.read_now is not None
    assert (
        "files.read file -> error (breaker_open): tool temporarily unavailable: circuit breaker open"
        in found.read_now
    )


def test_a_tool_of_ones_own_still_takes_only_names_a_model_api_takes():
    def read(path: str) -> str:
        return path

    with pytest.raises(ValueError, match="is not usable"):
        Tool(read, name="files.read file")
    with pytest.raises(ValueError, match="is not usable"):
        tool(name="files.read file")(read)
