"""The frames as an auditor in pandas meets them: the same dtypes from every source, what the
text columns hold, and the published schema that documents both."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    ScriptedModel,
    ToolCall,
    ToolError,
    load,
    load_many,
    tool,
)
from loopnb.engine import Retry, Skip
from loopnb.record import EVENT_SCHEMA, EVENTS, TURN_SCHEMA, TURNS, Recorder
from loopnb.record._frames import event_frame, turn_frame

from .conftest import Run, hard_run, read_file, recorded, reply, run_engine, typo_run


def _breaker_run(run_id: str = "r3") -> Run:
    """Other tools, a second breaker, a multi-call turn: nothing like the typo run's columns.

    An earlier run of the same engine left search's breaker open (search failed once). This run:
    search refused by the open breaker and fetch works, in one turn (usage 10 in, 2 out); then
    the answer. Model m2."""

    @tool
    def search(q: str) -> str:
        """Down."""
        raise ToolError("search is down")

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        return "<html>"

    model = ScriptedModel(
        [
            ToolCall("search", {"q": "x"}),
            "search is down",
            reply(
                ToolCall("search", {"q": "y"}), ToolCall("fetch", {"url": "https://a.test"}), usage=(10, 2)
            ),
            "done",
        ],
        name="m2",
    )
    engine = Engine(
        model,
        [search, fetch],
        breakers={"search": CircuitBreaker(failure_threshold=1)},
        clock=FakeClock(),
    )
    run_engine(engine, run_id=f"{run_id}-before")  # not recorded: it only trips the breaker
    return run_engine(engine, run_id=run_id)


# -- the same dtypes whichever way a frame is made ------------------------------------------------


def test_every_source_gives_the_empty_frames_dtypes(tmp_path):
    want_t, want_e = turn_frame([]).dtypes, event_frame([]).dtypes
    rec = recorded(typo_run(), hard_run("r2"), _breaker_run(), redact=None)
    rec.save(tmp_path / "all.jsonl")
    rec.save(tmp_path / "all.parquet")
    empty = Recorder()
    empty.save(tmp_path / "none.jsonl")
    empty.save(tmp_path / "none.parquet")
    sources = [
        rec,
        empty,
        *(load(tmp_path / n) for n in ("all.jsonl", "all.parquet", "none.jsonl", "none.parquet")),
    ]
    for source in sources:
        pd.testing.assert_series_equal(source.turns.dtypes, want_t)
        pd.testing.assert_series_equal(source.events.dtypes, want_e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same runs in the .jsonl and its .parquet copy
        many = load_many(tmp_path)
        none = load_many([tmp_path / "none.jsonl", tmp_path / "none.parquet"])
    for df in (many, none):
        assert str(df["source"].dtype) == "string"
        pd.testing.assert_series_equal(df.dtypes.drop("source"), want_t)


def test_concatenated_frames_of_different_recordings_keep_their_categories(tmp_path):
    one = recorded(typo_run(), redact=None)  # soft and ok turns, one tool
    other = recorded(hard_run("r2"), _breaker_run(), redact=None)  # hard turns, other tools and models
    other.save(tmp_path / "other.parquet")
    parts = [one.turns, load(tmp_path / "other.parquet").turns, Recorder().turns]
    both = pd.concat(parts, ignore_index=True)
    pd.testing.assert_series_equal(both.dtypes, turn_frame([]).dtypes)
    assert isinstance(both["producer"].dtype, pd.CategoricalDtype)
    assert list(both["channel"].cat.categories) == ["ok", "soft", "hard"]
    events = pd.concat([one.events, other.events], ignore_index=True)
    pd.testing.assert_series_equal(events.dtypes, event_frame([]).dtypes)


def test_times_are_utc_latency_is_milliseconds_turns_count_from_one_and_the_hard_turn_is_dropped():
    t = recorded(typo_run(), hard_run("r2"), redact=None).turns
    assert str(t["started_at"].dt.tz) == "UTC"
    assert t.groupby("run_id")["turn"].min().tolist() == [1, 1]
    assert t.loc[t["channel"].eq("hard"), "dropped"].tolist() == [True]
    assert not t.loc[t["channel"].ne("hard"), "dropped"].any()
    assert "milliseconds" in TURN_SCHEMA["properties"]["latency_ms"]["description"]


# -- what the text columns hold -----------------------------------------------------------------


@tool
def needs_int(k: int) -> str:
    """Fails for every k."""
    raise ToolError(f"fail {k}")


class _RetryTwice:
    def decide(self, failure, attempt, max_attempts):
        return Retry() if attempt < 2 else Skip()


def test_recovery_attempts_is_the_most_retries_of_one_call_as_documented():
    rec = Recorder()
    model = ScriptedModel([[ToolCall("needs_int", {"k": 1}), ToolCall("needs_int", {"k": 2})], "done"])
    Engine(model=model, tools=[needs_int], recovery=_RetryTwice(), observers=[rec]).run("t")
    ev = rec.events
    granted = ev[ev["kind"].eq("recovery_decided") & ev["decision"].eq("retry")]
    assert len(granted) == 4  # two retries for each of the two calls
    assert rec.turns["recovery_attempts"].tolist() == [2, 0]
    assert "any one call" in TURN_SCHEMA["properties"]["recovery_attempts"]["description"]


def test_error_text_of_a_multi_call_turn_is_every_text_read_and_the_events_hold_each_one():
    rec = Recorder()
    model = ScriptedModel(
        [
            [
                ToolCall("read_file", {"path": "src/mian.rs"}),
                ToolCall("read_file", {"path": "src/main.rs"}),
                ToolCall("needs_int", {"k": "two"}),
            ],
            "done",
        ]
    )
    result = Engine(model=model, tools=[read_file, needs_int], observers=[rec]).run("t")
    read = [r.content for r in result.tool_results if r.is_error]
    assert len(read) == 2 and "\n" in read[1]  # invalid arguments span several lines
    row = rec.turns.iloc[0]
    assert row["error_text"] == "\n".join(read) and row["n_errors"] == 2
    ev = rec.events
    assert ev.loc[ev["kind"].eq("soft_error_returned"), "text"].tolist() == read
    assert "soft_error_returned" in TURN_SCHEMA["properties"]["error_text"]["description"]


def test_the_documented_ways_to_use_tools_and_breaker_states_work():
    turns = recorded(typo_run(), _breaker_run(), redact=None).turns
    calls = turns.assign(tool=turns["tools"].str.split(", ")).explode("tool")
    assert calls.groupby("tool").size().to_dict() == {"fetch": 1, "read_file": 2, "search": 1}
    states = turns["breaker_states"].dropna().map(json.loads)
    board = pd.DataFrame(states.tolist(), index=states.index)
    assert board.loc[turns.index[turns["run_id"].eq("r3")], "search"].tolist() == ["open", "open"]
    assert turns[turns["producer"].eq("breaker_open")]["turn"].tolist() == [1]


# -- the published schema -----------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "row_model"), [(TURN_SCHEMA, TURNS), (EVENT_SCHEMA, EVENTS)])
def test_the_published_schema_describes_every_column_and_its_dtype(schema, row_model):
    properties = schema["properties"]
    assert list(properties) == list(row_model.names)
    for name, spec in row_model.dtypes().items():
        assert properties[name]["description"].strip(), name
        assert properties[name]["x-pandas-dtype"] == (spec if isinstance(spec, str) else "category"), name
    assert row_model.json_schema() == schema
    for name in row_model.names:  # a column that always holds a value is published as required
        nullable = "anyOf" in properties[name]
        assert nullable == (name not in row_model.required and row_model.dtypes()[name] != "bool"), name
    json.dumps(schema)


def test_the_frames_dtypes_are_the_published_ones():
    for df, schema in ((turn_frame([]), TURN_SCHEMA), (event_frame([]), EVENT_SCHEMA)):
        published = {n: p["x-pandas-dtype"] for n, p in schema["properties"].items()}
        assert {n: "category" if str(d) == "category" else str(d) for n, d in df.dtypes.items()} == published
