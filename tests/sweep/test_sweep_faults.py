"""A sweep crosses faults with seeds and configs (``SweepConfig(faults=...)``), on Dask."""

from __future__ import annotations

import pytest

import loopnb
from loopnb import faults


def test_a_fault_grid_is_swept_and_by_config_reports_recovery_beside_self_recovery(tmp_path, client):
    grid = [
        loopnb.SweepConfig(
            "transient", scenario="mistyped_path", faults={"read_file": faults.error("busy").first(2)}
        ),
        loopnb.SweepConfig("permanent", scenario="mistyped_path", faults={"read_file": 'error("busy")'}),
        loopnb.SweepConfig("quiet", scenario="mistyped_path", faults={"read_file": faults.empty()}),
    ]
    result = loopnb.sweep(configs=grid, seeds=3, out=tmp_path / "s", cluster=client, progress=False)
    turns = result.turns
    assert set(turns.loc[turns["config"] == "transient", "injected"].dropna()) == {'error("busy").first(2)'}
    table = result.by_config().set_index("config")
    assert list(table.columns[-4:]) == [
        "soft_errors",
        "errors_recovered",
        "tool_recovery_rate",
        "false_successes",
    ]
    transient, permanent, quiet = (table.loc[c] for c in ("transient", "permanent", "quiet"))
    assert transient["tool_recovery_rate"] == 1.0 and transient["false_successes"] == 0
    assert permanent["tool_recovery_rate"] == 0.0 and permanent["false_successes"] == 3
    assert quiet["soft_errors"] == 0 and pd_isna(quiet["tool_recovery_rate"])  # no error: no rate
    rates = result.audit().recovery_rate(by="fault").set_index("fault")
    assert rates.loc['error("busy").first(2)', "soft_errors"] == 6  # two a run, three runs
    assert result.plan["configs"][0]["faults"] == {"read_file": 'error("busy").first(2)'}


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_a_bad_fault_label_fails_when_the_config_is_made():
    with pytest.raises(ValueError, match="no fault is called 'eror'"):
        loopnb.SweepConfig("x", scenario="mistyped_path", faults={"read_file": "eror.first(2)"})
