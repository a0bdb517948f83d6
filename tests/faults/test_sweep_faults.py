"""``SweepConfig(faults=...)``: a sweep crosses fault grids with seeds on Dask; ``by_config`` measures."""

from __future__ import annotations

import json
import pickle

import pandas as pd
import pytest

import loopnb
from loopnb import SweepConfig, faults


def test_a_config_takes_faults_and_labels_and_writes_labels() -> None:
    config = SweepConfig(
        "transient", scenario="mistyped_path", faults={"read_file": faults.error("disk busy").first(2)}
    )
    same = SweepConfig(
        "transient", scenario="mistyped_path", faults={"read_file": 'error("disk busy").first(2)'}
    )
    assert config == same
    assert config.to_json()["faults"] == {"read_file": 'error("disk busy").first(2)'}
    assert pickle.loads(pickle.dumps(config)) == config
    json.dumps(config.to_json())


def test_a_bad_fault_is_refused_when_the_config_is_made() -> None:
    with pytest.raises(loopnb.faults.FaultSyntaxError, match="unknown fault 'eror'"):
        SweepConfig("x", scenario="mistyped_path", faults={"read_file": "eror()"})
    with pytest.raises(TypeError, match=r"SweepConfig x: faults\['read_file'\] must be a Fault"):
        SweepConfig("x", scenario="mistyped_path", faults={"read_file": 3})


def test_a_fault_for_a_tool_the_scenario_lacks_names_its_tools() -> None:
    from loopnb._sweep._config import build

    config = SweepConfig("x", scenario="mistyped_path", faults={"read_fil": faults.error()})
    with pytest.raises(ValueError) as caught:
        build(config, 0, None, [])
    assert str(caught.value) == (
        "SweepConfig x: faults: inject: a list of tools has no tool named 'read_fil'; its tools are "
        "read_file; did you mean 'read_file'?"
    )


def test_a_sweep_of_a_fault_grid_on_two_workers(tmp_path) -> None:
    grid = {
        "explicit-transient": 'error("disk busy").first(2)',
        "explicit-permanent": 'error("disk busy")',
        "implicit-transient": 'wrong("").first(2)',
    }
    configs = [
        SweepConfig(name, scenario="mistyped_path", faults={"read_file": f}) for name, f in grid.items()
    ]
    result = loopnb.sweep(configs=configs, seeds=3, out=tmp_path / "grid", workers=2, progress=False)
    turns = result.turns
    marked = turns[turns["injected"].notna()]
    assert set(marked["injected"]) == set(grid.values())
    table = result.by_config().set_index("config")
    assert list(table.columns[-4:]) == [
        "tool_errors",
        "tool_recovered",
        "tool_recovery_rate",
        "false_successes",
    ]
    assert table.loc["explicit-transient", "tool_recovery_rate"] == 1.0
    assert table.loc["explicit-permanent", "tool_recovery_rate"] == 0.0
    assert (
        table.loc["explicit-permanent", "false_successes"] == 3
    )  # each run answered after errors it never got past
    assert table.loc["implicit-transient", "tool_errors"] == 0  # invisible: no error flag
    assert pd.isna(table.loc["implicit-transient", "tool_recovery_rate"])
    rates = result.audit().recovery_rate(by="fault").set_index("fault")
    assert rates.loc['error("disk busy").first(2)', "rate"] == 1.0
