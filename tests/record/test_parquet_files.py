"""Parquet files from elsewhere: rewritten by other tools, tampered with, or never recordings;
in the turns-only layout loopnb writes, and in the first layout (turns and events in one table)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from loopnb import load
from loopnb.record import RecordingError

OLD = Path(__file__).resolve().parents[1] / "golden" / "parquet-v1-layout" / "ok_soft_then_ok.parquet"


@pytest.fixture
def saved(recorder, tmp_path):
    path = tmp_path / "r.parquet"
    recorder.save(path)
    return path


@pytest.fixture
def old(tmp_path):
    """A copy of a recording of the first layout."""
    return Path(shutil.copyfile(OLD, tmp_path / "old.parquet"))


def _rewrite(table, path, **kwargs):
    pq.write_table(table, path, **kwargs)
    return path


def _with(table, name, array):
    return table.set_column(table.schema.get_field_index(name), name, array)


def _header(table, **changes):
    meta = json.loads(table.schema.metadata[b"loopnb"])
    return table.replace_schema_metadata(
        {**table.schema.metadata, b"loopnb": json.dumps({**meta, **changes})}
    )


@pytest.mark.parametrize("row_group_size", [1_000_000, 2])
def test_a_file_rewritten_by_another_tool_keeps_its_turns_and_says_its_events_are_gone(
    recorder, saved, tmp_path, row_group_size
):
    # Dictionaries where loopnb wrote strings, small row groups: what pyarrow, DuckDB or Spark may
    # write back, keeping the metadata but not the events kept before the footer.
    table = pq.read_table(saved)
    coded = pa.table(
        [c.dictionary_encode() if pa.types.is_string(c.type) else c for c in table.columns],
        names=table.column_names,
    ).replace_schema_metadata(table.schema.metadata)
    loaded = load(_rewrite(coded, tmp_path / "w.parquet", row_group_size=row_group_size))
    pd.testing.assert_frame_equal(loaded.turns, recorder.turns)
    assert (loaded.meta["n_turns"], loaded.meta["n_events"]) == (6, len(recorder.events))
    with pytest.raises(
        RecordingError, match=r"w\.parquet: the events are not where the header says .*rewritten"
    ):
        _ = loaded.events


@pytest.mark.parametrize("row_group_size", [1_000_000, 5])
def test_a_file_of_the_first_layout_rewritten_by_another_tool_loads_the_same(old, tmp_path, row_group_size):
    # One row group holding turns and events alike (or groups straddling them), plain strings
    # where loopnb wrote dictionaries.
    table = pq.read_table(old)
    plain = pa.table(
        [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in table.columns],
        names=table.column_names,
    ).replace_schema_metadata(table.schema.metadata)
    loaded, original = load(_rewrite(plain, tmp_path / "w.parquet", row_group_size=row_group_size)), load(old)
    pd.testing.assert_frame_equal(loaded.turns, original.turns)
    pd.testing.assert_frame_equal(loaded.events, original.events)
    assert loaded.event_objects == original.event_objects
    assert (loaded.meta["n_turns"], loaded.meta["n_events"]) == (3, 14)


def test_a_pandas_frame_with_a_copied_header_is_not_a_recording(saved, tmp_path):
    header = pq.read_schema(saved).metadata[b"loopnb"]
    table = pa.Table.from_pandas(pd.DataFrame({"a": [1, 2]}))
    table = table.replace_schema_metadata({**table.schema.metadata, b"loopnb": header})
    with pytest.raises(
        RecordingError, match=r"not a loopnb recording: missing columns: run_id, turn, .*more\)"
    ):
        load(_rewrite(table, tmp_path / "df.parquet"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.drop_columns(["channel"]), "missing columns: channel$"),
        (
            lambda t: _with(t, "latency_ms", pa.array([str(v) for v in t.column("latency_ms").to_pylist()])),
            "latency_ms is string, not double",
        ),
        (
            lambda t: _with(
                t, "turn", pa.array([None if v is None else v + 0.5 for v in t.column("turn").to_pylist()])
            ),
            "turn is double, not int64",
        ),
        (
            lambda t: _with(t, "started_at", t.column("started_at").cast(pa.timestamp("us"))),
            r"started_at is timestamp\[us\], not timestamp\[us, tz=UTC\]",
        ),
    ],
)
@pytest.mark.parametrize("layout", ["turns", "first"])
def test_missing_columns_and_wrong_types_are_named(saved, old, tmp_path, change, message, layout):
    table = pq.read_table(saved if layout == "turns" else old)
    path = _rewrite(change(table).replace_schema_metadata(table.schema.metadata), tmp_path / "x.parquet")
    with pytest.raises(RecordingError, match=rf"x\.parquet: not a loopnb recording: {message}"):
        load(path)


def test_a_file_of_the_first_layout_without_its_event_json_is_named(old, tmp_path):
    table = pq.read_table(old)
    path = _rewrite(table.drop_columns(["event_json"]), tmp_path / "x.parquet")
    with pytest.raises(
        RecordingError, match=r"x\.parquet: not a loopnb recording: missing columns: event_json$"
    ):
        load(path)


def test_a_value_outside_a_category_is_an_error_not_a_missing_value(saved, tmp_path):
    table = pq.read_table(saved)
    channel = [None if v is None else "weird" for v in table.column("channel").to_pylist()]
    path = _rewrite(_with(table, "channel", pa.array(channel)), tmp_path / "c.parquet")
    recording = load(path)
    with pytest.raises(
        RecordingError, match=r"c\.parquet: the turns cannot be read: column 'channel': \['weird'\]"
    ):
        _ = recording.turns


def test_integers_of_other_widths_keep_every_digit_and_one_past_64_bits_is_an_error(saved, tmp_path):
    table = pq.read_table(saved)
    big = [2**60 + 1] * len(table)
    loaded = load(_rewrite(_with(table, "n_calls", pa.array(big, pa.uint64())), tmp_path / "b.parquet"))
    assert loaded.turns.n_calls.tolist() == [2**60 + 1] * 6
    too_big = [2**64 - 1] * len(table)
    path = _rewrite(_with(table, "n_calls", pa.array(too_big, pa.uint64())), tmp_path / "u.parquet")
    with pytest.raises(RecordingError, match=r"u\.parquet: the turns cannot be read: .*18446744073709551615"):
        _ = load(path).turns


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"n_turns": 999}, "the header promises n_turns=999 but the file has 6"),
        ({"n_events": 1}, "the header promises n_events=1 but the file has"),
        ({"n_turns": "6"}, "the header's n_turns must be a count, found '6'"),
        ({"n_turns": 6.0}, "the header's n_turns must be a count, found 6.0"),
        ({"n_turns": -1}, "the header's n_turns must be a count, found -1"),
        ({"run_ids": "r1"}, "the header's run_ids must be a list of strings"),
    ],
)
def test_a_tampered_header_is_named(saved, tmp_path, changes, message):
    path = _rewrite(_header(pq.read_table(saved), **changes), tmp_path / "h.parquet")
    with pytest.raises(RecordingError, match=message):
        load(path)


def test_an_unknown_record_kind_is_named(old, tmp_path):
    table = pq.read_table(old)
    record = table.column("record").cast(pa.string()).to_pylist()
    record[0] = "secret"
    path = _rewrite(_with(table, "record", pa.array(record)), tmp_path / "k.parquet")
    with pytest.raises(
        RecordingError, match=r"the record column must say 'turn' or 'event', found \['secret'\]"
    ):
        load(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda lines, i: lines.__setitem__(i, lines[i].replace('"seq":', '"seq":"x","was":')),
            "event 1: not a valid",
        ),
        (lambda lines, i: lines.__setitem__(-1, None), "event 14: its JSON line is missing"),
        (lambda lines, i: lines.__setitem__(-1, "{"), "not a valid event"),
    ],
)
def test_a_bad_event_json_of_the_first_layout_is_named(old, tmp_path, edit, message):
    table = pq.read_table(old)
    lines = table.column("event_json").to_pylist()
    first = next(i for i, line in enumerate(lines) if line is not None)
    edit(lines, first)
    path = _rewrite(_with(table, "event_json", pa.array(lines, pa.large_string())), tmp_path / "j.parquet")
    recording = load(path)
    with pytest.raises(RecordingError, match=rf"j\.parquet: .*{message}"):
        _ = recording.event_objects


def _trailer(path):
    """The bytes between the row groups and the footer: the events, compressed."""
    data = path.read_bytes()
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    size = sum(z for z, _, _ in json.loads(pq.read_schema(path).metadata[b"loopnb"])["event_parts"])
    return data[start - size : start]


def _retold(saved, path, change):
    """``saved`` written again by pyarrow with its header changed by ``change``, and its events put
    back before the footer."""
    from loopnb.record._trailer import insert_before_footer

    table = pq.read_table(saved)
    header = change(json.loads(table.schema.metadata[b"loopnb"]))
    pq.write_table(table.replace_schema_metadata({b"loopnb": json.dumps(header)}), path)
    insert_before_footer(path, [_trailer(saved)])
    return path


def test_a_file_rewritten_with_its_events_put_back_loads_the_same(recorder, saved, tmp_path):
    loaded = load(_retold(saved, tmp_path / "w.parquet", lambda h: h))
    pd.testing.assert_frame_equal(loaded.events, recorder.events)
    assert loaded.event_objects == recorder.event_objects


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda lines: [lines[0].replace('"seq":', '"seq":"x","was":'), *lines[1:]],
            "event 1: not a valid event",
        ),
        (lambda lines: [*lines[:-1], "{"], r"event \d+: not a valid event"),
        (
            lambda lines: [*lines[:3], lines[2], *lines[3:]],
            r"event 4: seq 2 of run 'r1' comes after its seq 2",
        ),
    ],
)
def test_a_bad_event_line_is_named(recorder, tmp_path, edit, message):
    from loopnb.record._parquet import write_frames

    _, lines = recorder.exported_events()
    path = tmp_path / "j.parquet"
    write_frames(path, {"format": "loopnb.recording", "version": 2}, [recorder.turns], [edit(lines)])
    recording = load(path)
    assert len(recording.turns) == 6  # the turns need no event
    with pytest.raises(RecordingError, match=rf"j\.parquet: {message}"):
        _ = recording.events


def test_a_damaged_byte_among_the_events_is_named(saved):
    data = bytearray(saved.read_bytes())
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[start - 10] ^= 0xFF
    saved.write_bytes(bytes(data))
    recording = load(saved)
    assert len(recording.turns) == 6
    with pytest.raises(RecordingError, match=r"r\.parquet: the events are not where the header says"):
        _ = recording.event_objects


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: {**h, "event_parts": "many"}, "the header's event_parts must be a list of"),
        (lambda h: {**h, "event_parts": [[10, 10, -1]]}, "the header's event_parts must be a list of"),
        (lambda h: {**h, "event_crc32": None}, "and event_crc32 a number"),
        (
            lambda h: {**h, "event_parts": [[*h["event_parts"][0][:2], 3]], "n_events": 3},
            r"the events' part 0 holds \d+ lines, the header says 3",
        ),
        (
            lambda h: {**h, "event_parts": [[h["event_parts"][0][0], 10, 47]]},
            "the events' part 0 cannot be read",
        ),
        (
            lambda h: {**h, "event_parts": [[10**9, 10, 47]]},
            "cannot read the events: the file is shorter than its events",
        ),
    ],
)
def test_a_tampered_list_of_event_parts_is_named(saved, tmp_path, change, message):
    path = _retold(saved, tmp_path / "p.parquet", change)
    with pytest.raises(RecordingError, match=message):
        _ = load(path).event_objects


def test_pandas_metadata_in_a_file_is_never_obeyed(recorder, saved, tmp_path):
    table = pq.read_table(saved)
    pandas_meta = {
        "index_columns": [],
        "column_indexes": [],
        "columns": [
            {
                "name": "channel",
                "field_name": "channel",
                "pandas_type": "object",
                "numpy_type": "os.system",
                "metadata": None,
            }
        ],
        "pandas_version": "2.0",
    }
    path = _rewrite(
        table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(pandas_meta).encode()}),
        tmp_path / "p.parquet",
    )
    pd.testing.assert_frame_equal(load(path).turns, recorder.turns)


def test_an_extension_type_is_refused_before_its_code_could_run(saved, tmp_path):
    calls = []

    class Tagged(pa.ExtensionType):
        def __init__(self):
            super().__init__(pa.int64(), "loopnb.test.tagged")

        def __arrow_ext_serialize__(self):
            return b"payload from the file"

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type, serialized):
            calls.append(serialized)
            return cls()

    table = pq.read_table(saved)
    turn = table.column("turn").combine_chunks()
    tagged = _with(table, "turn", pa.ExtensionArray.from_storage(Tagged(), turn))
    path = tmp_path / "e.parquet"
    pa.register_extension_type(Tagged())
    try:
        pq.write_table(tagged, path)
        calls.clear()
        with pytest.raises(
            RecordingError, match=r"e\.parquet: not a loopnb recording: .*Arrow extension types"
        ):
            load(path)
        assert calls == []
    finally:
        pa.unregister_extension_type("loopnb.test.tagged")


def test_the_extension_marker_is_found_at_any_alignment():
    import base64

    from loopnb.record._parquet import EXTENSION_MARKS

    for shift in range(6):
        encoded = base64.b64encode(b"x" * shift + b"ARROW:extension:name" + b"tail")
        assert any(mark in encoded for mark in EXTENSION_MARKS[1:])
    assert not any(mark in base64.b64encode(b"ARROW:schema and other keys") for mark in EXTENSION_MARKS)
