"""``SweepConfig``: what each field changes in the engine, what it refuses, and ``sweep``'s checks
of its input (all before any cluster starts)."""

from __future__ import annotations

import contextlib
import pickle

import pytest

import loopnb
from loopnb import LoopError, SweepConfig
from loopnb._sweep._config import build
from loopnb.record import Recorder


def _run(config, seed=0, task=None):
    recorder = Recorder()
    engine, text = build(config, seed, task, [recorder])
    with contextlib.suppress(LoopError):
        engine.run(text)
    return recorder.turns


def test_error_text_replaces_what_the_model_reads():
    plain = _run(SweepConfig("plain", scenario="mistyped_path"))
    (text,) = plain.error_text.dropna().tolist()
    slip = text.removeprefix("file ").removesuffix(" not found")
    assert text == f"file {slip} not found" and slip != "src/main.rs"
    terse = _run(SweepConfig("terse", scenario="mistyped_path", error_text={"read_file": "failed"}))
    # "failed" names nothing: the model repeats the call until the loop detector refuses it
    assert terse.error_text.iloc[0] == "failed" and "loop_refusal" in set(terse.producer.dropna())
    named = _run(
        SweepConfig("named", scenario="mistyped_path", error_text={"read_file": "no {path}: {error}"})
    )
    assert named.error_text.dropna().tolist() == [f"no {slip}: {text}"]
    assert named.producer.dropna().tolist() == ["tool_error"]


def test_a_task_runs_on_the_configs_model_and_tools():
    config = SweepConfig("typo", model={"fallible": {"mistakes": ["typo"]}}, tools=["read_file", "list_dir"])
    turns = _run(config, task="What does src/main.rs do?")
    assert turns.channel.tolist() == ["soft", "ok", "ok"] and turns.model.iloc[0] == "fallible"


def test_safety_settings_reach_the_engine():
    loose = _run(SweepConfig("loose", scenario="stubborn_loop", loop_detector="off", max_turns=4))
    # four turns, then the hard row of the fifth: max_turns, not the detector (which would refuse)
    assert len(loose) == 5 and loose.producer.iloc[-1] == "loop_detected"
    assert "loop_refusal" not in set(loose.producer.dropna())
    assert loose.error_text.iloc[-1].startswith("the run reached max_turns")
    broken = _run(SweepConfig("b", scenario="flaky_tool_breaker", breakers="off"))
    assert "breaker_open" not in set(broken.producer.dropna())
    fixed = _run(
        SweepConfig(
            "r",
            scenario="mistyped_path",
            recovery={"analyse_and_correct": {"candidates": {"path": ["src/main.rs"]}}},
        )
    )
    assert fixed.recovery_attempts.max() == 1


def test_a_config_pickles_and_writes_as_json():
    config = SweepConfig(
        "x", scenario="mistyped_path", error_text={"read_file": "failed"}, breakers={"*": {}}
    )
    assert pickle.loads(pickle.dumps(config)) == config
    data = config.to_json()
    assert data["error_text"] == {"read_file": "failed"} and data["tools"] == [] and data["name"] == "x"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "has space"}, ValueError, "name must be 1-100 letters"),
        (
            {"name": "a", "recovery": "sometimes"},
            ValueError,
            "recovery 'sometimes' is not one of 'off', 'analyse_and_correct'",
        ),
        ({"name": "a", "loop_detector": "on"}, ValueError, "loop_detector 'on' is not one of 'off'"),
        ({"name": "a", "tools": [3]}, TypeError, "tools take names or Tool objects"),
    ],
)
def test_a_bad_config_is_refused_naming_the_field(kwargs, error, match):
    with pytest.raises(error, match=match):
        SweepConfig(**kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (["mistyped_pth"], {}, r"no scenario named 'mistyped_pth'.*Did you mean 'mistyped_path'\?"),
        ("stubborn_lop", {}, r"no scenario named 'stubborn_lop'"),
        ("Read the file.", {}, "a task needs configs"),
        (["mistyped_path"], {"seeds": 0}, "seeds=N needs N >= 1"),
        (["mistyped_path"], {"seeds": [1, 1]}, "a seed is given twice"),
        (
            ["mistyped_path"],
            {"configs": [SweepConfig("a", error_text={"nope": "x"})]},
            "error_text names nope",
        ),
        (["mistyped_path"], {"configs": [SweepConfig("a", error_text={"read_file": "{nope}"})]}, "uses nope"),
        (
            "Read it.",
            {"configs": [SweepConfig("a", model="fallible", tools=["write_file"])]},
            "no workspace tool named 'write_file'",
        ),
        ("Read it.", {"configs": [SweepConfig("a", tools=["read_file"])]}, "a task needs a model"),
        (["mistyped_path"], {"configs": [SweepConfig("a"), SweepConfig("a")]}, "a is given twice"),
        (["mistyped_path"], {"batch": 0}, "batch must be a number of runs >= 1"),
    ],
)
def test_sweep_refuses_bad_input_before_starting_anything(tmp_path, args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        loopnb.sweep(args, out=tmp_path / "x", progress=False, **kwargs)
    assert not (tmp_path / "x").exists()


def test_a_folder_that_is_no_sweep_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a sweep's folder"):
        loopnb.Sweep(tmp_path)


def test_loopnb_chooses_some_eight_batches_a_worker_within_bounds():
    from loopnb._sweep._plan import MAX_BATCH, choose_batch, plan

    names = [n for n in loopnb.scenarios.names() if n != "hanging_tool"]
    draft = plan(names, seeds=667, configs=None, batch=None)
    assert draft.batch is None and draft.runs == 15 * 667
    assert choose_batch(draft, 2).batch == 626  # 10,005 runs / (8 x 2 workers)
    assert choose_batch(draft, 1).batch == 667  # never more than one config's seeds
    assert choose_batch(plan(names, seeds=100_000, configs=None, batch=None), 32).batch == MAX_BATCH
    assert choose_batch(plan(["mistyped_path"], seeds=3, configs=None, batch=None), 2).batch == 1
    assert choose_batch(plan(["mistyped_path"], seeds=3, configs=None, batch=2), 2).batch == 2  # as given


def test_the_names_load_neither_dask_nor_duckdb_until_a_sweep_or_query_runs():
    import json
    import subprocess
    import sys

    probe = (
        "import sys, json, loopnb; loopnb.sweep, loopnb.query, loopnb.Sweep, loopnb.SweepConfig; "
        "print(json.dumps([m for m in ('dask', 'distributed', 'duckdb', 'tqdm') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
