"""scripts/store_notebooks.py stores a cell's printing as nbval compares it: one stream per run of
chunks, so that a kernel's flush timing neither splits a stored output nor keeps it from being checked."""

from __future__ import annotations

import importlib.util
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]


def store_script():
    spec = importlib.util.spec_from_file_location("store_notebooks", REPO / "scripts" / "store_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_printing_cut_into_chunks_is_stored_and_compared_as_one_stream():
    store = store_script()
    one = [{"output_type": "stream", "name": "stdout", "text": "channel: hard (cancelled)\nCancelled\n"}]
    cut = [
        {"output_type": "stream", "name": "stdout", "text": "channel: hard (cancelled)"},
        {"output_type": "stream", "name": "stdout", "text": ["\n", "Cancelled\n"]},
    ]
    assert store.coalesced(cut) == one
    assert store.fingerprint(store.coalesced(cut), []) == store.fingerprint(one, [])


def test_other_outputs_and_other_streams_stay_apart():
    store = store_script()
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "a\n"},
        {"output_type": "stream", "name": "stderr", "text": "b\n"},
        {"output_type": "execute_result", "data": {"text/plain": "1"}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "c\n"},
    ]
    assert store.coalesced(outputs) == outputs
