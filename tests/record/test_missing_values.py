"""A missing value reads one way in every column of both frames: ``<NA>``, never ``NaN``.

pandas shows a missing category as ``NaN`` when the categories are its default ``str`` values;
the frames declare theirs of the nullable ``string`` dtype, so a turn with no producer reads
like one with no tools. The audits that read the categorical columns value by value still work
on those missing values (the turns-only audit reads every turn's producer).
"""

from __future__ import annotations

import pandas as pd
import pytest

from loopnb import audit, load, load_many, scenarios
from loopnb.record import Recorder


@pytest.fixture(scope="module")
def every_scenario() -> Recorder:
    recorder = Recorder()
    for name in scenarios.names():
        scenarios.get(name).run(observers=[recorder])
    return recorder


def _categorical(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]


def _assert_reads_na(df: pd.DataFrame, frame: str) -> None:
    categorical = _categorical(df)
    assert categorical, f"the {frame} frame has categorical columns"
    for column in categorical:
        categories = df[column].cat.categories
        assert isinstance(categories.dtype, pd.StringDtype) and categories.dtype.na_value is pd.NA, (
            f"{frame}.{column}: categories of {categories.dtype}, expected the nullable string dtype"
        )
    assert df["producer"].isna().any(), f"the {frame} frame has a missing producer to show"
    for text, na in ((df.to_string(), "<NA>"), (df.to_html(), "&lt;NA&gt;")):
        assert "NaN" not in text and na in text, f"the {frame} frame shows a missing value as NaN"


def test_a_missing_category_shows_as_na_like_every_other_missing_value(every_scenario):
    _assert_reads_na(every_scenario.turns, "turns")
    _assert_reads_na(every_scenario.events, "events")
    ok = every_scenario.turns[every_scenario.turns["channel"].eq("ok")]
    assert ok["producer"].isna().all() and ok["producer"].tolist() == [pd.NA] * len(ok)
    assert ok[["producer", "tools"]].tail(1).to_string().split()[-2:] == ["<NA>", "<NA>"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_saved_recording_loads_with_the_same_missing_values(every_scenario, tmp_path, suffix):
    path = every_scenario.save(tmp_path / f"all{suffix}")
    recording = load(path)
    for frame, built in (("turns", every_scenario.turns), ("events", every_scenario.events)):
        loaded = getattr(recording, frame)
        pd.testing.assert_frame_equal(loaded, built)
        _assert_reads_na(loaded, frame)
    _assert_reads_na(load_many([path]), "load_many turns")


def test_filtering_a_category_with_missing_values_keeps_to_the_matches(every_scenario):
    turns = every_scenario.turns
    timeouts = turns[turns["producer"].eq("timeout")]
    assert len(timeouts) >= 1 and set(timeouts["producer"].astype(str)) == {"timeout"}
    assert turns["producer"].isin(["timeout"]).sum() == len(timeouts)


def test_the_turns_only_audit_reads_turns_without_a_producer(every_scenario):
    """Retries and breakers read each turn's producer; an ok turn's is missing (``pd.NA``)."""
    turns_only = audit(every_scenario.turns)
    with_events = audit(every_scenario.turns, every_scenario.events)
    retries = turns_only.retries().sort_values("tool", ignore_index=True)
    assert list(zip(retries["tool"], retries["outcome"].astype(str), strict=True)) == [
        ("push", "exhausted"),
        ("read_file", "recovered"),  # the retry that worked: an ok turn, its producer missing
    ]
    refusals = turns_only.breakers().set_index("target")["refusals"]
    assert refusals.to_dict() == with_events.breakers().set_index("target")["refusals"].to_dict()
    assert refusals["service_status"] == 1
