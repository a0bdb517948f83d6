"""Every secret of the corpus, in every context, is gone from the stream, Parquet and the report."""

from __future__ import annotations

import html
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, load, tool
from loopnb.record import DEFAULT_REDACTOR, Recorder
from loopnb.record._redact import REDACTED
from tests.record.conftest import Run, run_engine
from tests.record.secrets_corpus import CORPUS, NOT_COVERED, Entry, contexts, traces


def leaks(text: str, entries: tuple[Entry, ...] = CORPUS) -> list[tuple[str, str]]:
    """The (kind, trace) pairs of ``entries`` found in ``text``."""
    return [(e.kind, t) for e in entries for t in traces(e) if t in text]


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.kind)
def test_every_corpus_secret_is_redacted_in_every_context(entry):
    for name, text in contexts(entry).items():
        for line in (text, json.dumps({"content": text}), json.dumps({"content": text}, ensure_ascii=False)):
            out = DEFAULT_REDACTOR(line)
            assert not leaks(out, (entry,)), (name, line, out)
            assert REDACTED in out
            if line is not text:
                json.loads(out)  # still JSON


def test_the_kinds_not_covered_are_missed_as_documented():
    """Move a kind to CORPUS when a default pattern comes to catch it."""
    for entry in NOT_COVERED:
        assert entry.secret in DEFAULT_REDACTOR(f"the key is {entry.secret} here"), entry.kind
    covered = {e.rule for e in CORPUS}
    assert len(CORPUS) >= 45 and len(covered) >= 30  # the coverage the README states


def shell_run(outputs: list[str], run_id: str) -> Run:
    """A real run whose ``shell`` tool returns each of ``outputs`` in turn, a turn each."""
    by_cmd = {f"cmd {i}": text for i, text in enumerate(outputs)}

    @tool
    def shell(cmd: str) -> str:
        """Run a shell command."""
        return by_cmd[cmd]

    steps = [ToolCall("shell", {"cmd": cmd}) for cmd in by_cmd] + ["done"]
    engine = Engine(ScriptedModel(steps), tools=[shell], clock=FakeClock(), loop_detector=None)
    return run_engine(engine, "scan the environment", run_id=run_id)


def corpus_run() -> Run:
    """One run whose tool results hold every corpus secret in every context, a turn each."""
    return shell_run([text for entry in CORPUS for text in contexts(entry).values()], "corpus")


def strings(value) -> list[str]:
    """Every string in a nested structure of rows."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings(v)]
    return []


def parquet_text(path) -> str:
    """Every text in a Parquet recording: the table's, the metadata's and the events' lines, as
    the file holds them (compressed before the footer)."""
    import json
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    from loopnb.record._trailer import read_lines

    table = pq.read_table(path)
    header = json.loads(table.schema.metadata[b"loopnb"])
    lines = read_lines(Path(path), header["event_parts"], header["event_crc32"], pa)
    return "\n".join([*strings(table.to_pylist()), str(table.schema.metadata), *(x.decode() for x in lines)])


def test_every_corpus_secret_is_redacted_in_the_stream_parquet_and_report(tmp_path, monkeypatch):
    from loopnb.notebook import report_html

    events = corpus_run().events
    rec = Recorder(tmp_path / "stream.jsonl")
    raw = Recorder(tmp_path / "raw.jsonl", redact=None)
    for e in events:
        rec(e)
        raw(e)
    rec.close()
    raw.close()
    rec.save(tmp_path / "saved.parquet")
    raw.save(tmp_path / "raw.parquet")

    stream = (tmp_path / "stream.jsonl").read_text(encoding="utf-8")
    assert not leaks(stream), "stream.jsonl"
    assert len(load(tmp_path / "stream.jsonl").event_objects) == len(events)  # every turn written
    assert not leaks(parquet_text(tmp_path / "saved.parquet")), "saved.parquet"
    for source in (rec, load(tmp_path / "stream.jsonl"), str(tmp_path / "saved.parquet"), raw):
        assert not leaks(html.unescape(report_html(source))), f"report of {source!r:.60}"

    # The checks could fail: without redaction, every kind shows in each of the three.
    kinds = {e.kind for e in CORPUS}
    assert {k for k, _ in leaks((tmp_path / "raw.jsonl").read_text(encoding="utf-8"))} == kinds
    assert {k for k, _ in leaks(parquet_text(tmp_path / "raw.parquet"))} == kinds
    monkeypatch.setattr("loopnb.record._redact.DEFAULT_REDACTOR", lambda text: text)
    assert {k for k, _ in leaks(html.unescape(report_html(list(events))))} == kinds


def test_the_report_redacts_a_file_whatever_its_header_claims(tmp_path):
    """A redacting recorder begins the file (its header says "redacted": true); one with
    ``redact=None`` appends raw turns to it. The report of the file is redacted all the same."""
    from loopnb.notebook import report_html
    from loopnb.record import Recording

    path = tmp_path / "mixed.jsonl"
    key = CORPUS[0].secret
    first, second = shell_run([], "first"), shell_run([f"OPENAI_API_KEY={key}\n{key}"], "second")
    with Recorder(path) as rec:
        for e in first.events:
            rec(e)
    with Recorder(path, redact=None) as rec:
        for e in second.events:
            rec(e)
    loaded = load(path)
    assert loaded.meta["redacted"] is True and key in path.read_text()  # the header claims, wrongly
    assert key not in report_html(loaded)
    assert key not in loaded.to_html(tmp_path / "mixed.html").read_text(encoding="utf-8")
    claims = Recording.from_events(list(second.events), meta={"redacted": True})
    assert key not in report_html(claims)


PIECES = st.sampled_from([*",;&{}[]()<>|!@#$%^*+=/?~`:'\" \\\t\n\u00e9xyz019", "password: ", "token=", '\\"'])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(PIECES, min_size=1, max_size=30).map("".join),
    st.lists(PIECES, max_size=20).map("".join),
    st.integers(min_value=0, max_value=3),
    st.booleans(),
)
def test_a_punctuated_password_is_redacted_whole_and_every_depth_stays_json(password, note, depth, ascii_):
    """The value runs to its own closing quote at its own depth: nothing of it is left (unless it
    spans lines), the fields after it are kept, and the JSON at every depth still parses."""
    line = json.dumps({"password": password, "user": "bob4271", "note": note}, ensure_ascii=ascii_)
    for _ in range(depth):
        line = json.dumps({"content": line}, ensure_ascii=ascii_)
    out = DEFAULT_REDACTOR(line)
    for _ in range(depth):
        out = json.loads(out)["content"]
    got = json.loads(out)
    assert got["user"] == "bob4271"
    if "\n" not in password:
        assert got["password"] == REDACTED
