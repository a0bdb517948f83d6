"""Inspect AI evals run here, offline, on ``mockllm``, and read back: needs inspect-ai (``[test]``).

The eval is the goldens' (``tests/golden/foreign/make_inspect.py``), run afresh: what this
version of Inspect writes must read the same turns as the committed goldens.
"""

from __future__ import annotations

import socket
import typing
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalSampleLimit, read_eval_log, write_eval_log
from inspect_ai.tool import ToolCallError

import loopnb
from loopnb.foreign._inspect import MARKS
from tests.foreign.test_inspect import COLUMNS, TURNS, USAGE, rows, samples_of
from tests.foreign.their_words import their_words_set_aside
from tests.golden.foreign import make_inspect

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:The .initial. parameter is deprecated:DeprecationWarning"
    ),  # inspect_ai's retry
]


TEXT = COLUMNS.index("error_text")
OURS = {"file nots.txt not found; did you mean notes.txt?", "delete_file is blocked: the files are read-only"}
"""The error texts the eval's own tool and approver wrote; every other is Inspect's (and jsonschema's)."""


def inspects_words_aside(
    fresh: list[list[object]], golden: list[list[object]]
) -> tuple[list[Any], list[Any]]:
    """A fresh sample's turns and the golden's, Inspect's own words set aside in both."""
    return their_words_set_aside(
        fresh, golden, text=TEXT, theirs=lambda row: row[TEXT] is not None and row[TEXT] not in OURS
    )


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory):
    log, refused = make_inspect.run(tmp_path_factory.mktemp("inspect"))
    return log, refused


def test_the_eval_ran_offline(evaluated):
    log, refused = evaluated
    assert refused == [] and log.status == "success" and len(log.samples) == 4
    with make_inspect.offline() as blocked, pytest.raises(OSError, match="offline"):
        socket.create_connection(("example.com", 80), timeout=1)
    assert blocked == [("example.com", 80)]  # the guard the eval ran under does refuse


def test_a_fresh_eval_log_reads_as_the_goldens(evaluated):
    log, _ = evaluated
    rec = loopnb.load(log.location)
    assert list(samples_of(rec)) == ["recover", "crash", "tokens", "loop"]
    for sample, turns in TURNS.items():
        made, kept = inspects_words_aside(rows(rec, sample, COLUMNS), turns)
        assert made == kept, sample
    assert loopnb.audit(rec).disagreements()["reason"].tolist() == ["panic_ended_run"]


def test_from_inspect_reads_the_log_in_memory_as_its_file(evaluated, tmp_path):
    log, _ = evaluated
    from_file = loopnb.load(log.location)
    in_memory = loopnb.from_inspect(log)
    assert in_memory.run_ids == from_file.run_ids
    for sample in TURNS:
        assert rows(in_memory, sample, [*COLUMNS, *USAGE]) == rows(from_file, sample, [*COLUMNS, *USAGE])
    write_eval_log(log, tmp_path / "notes.json", format="json")  # returns nothing before inspect-ai 0.3.1xx
    again = loopnb.load(tmp_path / "notes.json")
    assert again.turns.equals(from_file.turns)


def test_a_log_read_without_its_samples_is_read_from_its_file(evaluated):
    log, _ = evaluated
    header = read_eval_log(log.location, header_only=True)
    assert header.samples is None
    assert loopnb.from_inspect(header).turns.equals(loopnb.load(log.location).turns)
    with pytest.warns(
        loopnb.RecordingWarning,
        match=r"from_inspect: sample 'recover' epoch 1 \(run \w+\), .* and 1 more given twice",
    ):
        both = loopnb.from_inspect([header, log])
    assert both.turns.equals(loopnb.load(log.location).turns)


def test_every_error_type_and_limit_inspect_knows_has_a_mark():
    kinds = typing.get_args(ToolCallError.__annotations__["type"])
    assert kinds and all(MARKS[k] == "retry" for k in kinds)
    limits = typing.get_args(EvalSampleLimit.model_fields["type"].annotation)
    assert limits and all(MARKS[f"{k}_limit"] == "ended" for k in limits)


def test_the_goldens_script_writes_what_the_tests_read(tmp_path, monkeypatch):
    monkeypatch.setattr(make_inspect, "ROOT", tmp_path)
    monkeypatch.setattr(make_inspect, "JSON_SAMPLES", {"json": ["tokens"]})
    make_inspect.main()
    rec = loopnb.load(Path(tmp_path) / "notes.json")
    made, kept = inspects_words_aside(rows(rec, "tokens", COLUMNS), TURNS["tokens"])
    assert made == kept
