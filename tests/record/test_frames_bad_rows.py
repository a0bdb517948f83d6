"""A row value no frame column can hold is an error naming the column (and the row) at fault."""

from __future__ import annotations

import pytest

from loopnb.record._frames import turn_frame
from loopnb.record._rows import turn_rows

from .conftest import typo_run


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("channel", "weird", r"column 'channel': 'weird' is not one of \['ok', 'soft', 'hard'\]"),
        ("turn", "x", r"column 'turn': "),
        ("started_at", "nope", r"column 'started_at': "),
    ],
)
def test_a_row_value_no_column_can_hold_names_the_column(column, value, message):
    rows = turn_rows(typo_run().events)
    rows[1] = {**rows[1], column: value}
    with pytest.raises(ValueError, match=message):
        turn_frame(rows)


def test_a_row_without_a_column_names_the_row_and_the_column():
    rows = turn_rows(typo_run().events)
    del rows[2]["tools"]
    with pytest.raises(ValueError, match=r"row 2 has no 'tools' column \(a TurnRow row has all of: run_id, "):
        turn_frame(rows)
