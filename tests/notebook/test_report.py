"""The static report: one self-contained offline HTML file, escaped, secrets redacted."""

from __future__ import annotations

import re

import pytest

from loopnb.notebook import report_html, to_html
from loopnb.record import Recorder, load
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events


def recorded(*scenarios):
    recorder = Recorder()
    for scenario in scenarios:
        engine, _task = scenario[0], scenario[1]
        engine.subscribe(recorder)
        run_events(scenario)
    return recorder


def test_report_is_one_offline_file(tmp_path):
    recorder = recorded(S.payload(), S.looping())
    path = to_html(recorder, tmp_path / "report.html")
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert html.count('<section class="loopnb-run"') == 2
    assert "Content-Security-Policy" in html
    assert len(html) > 3_000_000  # plotly.js is inlined
    assert not re.search(r"<script[^>]+src=", html)  # nothing is fetched
    assert html.count("Plotly.newPlot") == 2


def test_report_escapes_untrusted_text(tmp_path):
    html = report_html(recorded(S.payload()))
    assert S.PAYLOAD not in html
    assert "<img src=x" not in html
    assert html.count("<script") == html.count("</script>")
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", html, flags=re.S)
    assert all("document.title='pwned'</" not in s for s in scripts)  # no script was cut short
    assert "&lt;img src=x onerror=" in html


def test_report_shows_the_four_panes(tmp_path):
    html = report_html(recorded(S.breaker()[:2]))
    assert "decision flow" in html and "turn timeline" in html
    assert "recovery gauge" in html and "breaker board" in html
    assert html.count('class="loopnb-turn"') == 5
    assert 'data-state="closed"' in html


def test_recording_to_html_and_one_run(tmp_path):
    recorder = recorded(S.typo(), S.exhausted())
    saved = load(recorder.save(tmp_path / "two.jsonl"))
    out = saved.to_html(tmp_path / "two.html")
    assert out.read_text(encoding="utf-8").count('<section class="loopnb-run"') == 2
    first = saved.run_ids[0]
    one = report_html(saved, run_id=first)
    assert one.count('<section class="loopnb-run"') == 1 and first in one
    with pytest.raises(ValueError, match="no run"):
        report_html(saved, run_id="nope")


def test_secrets_are_redacted_in_the_report():
    secret = "sk-" + "a" * 40
    engine, _task = S.typo()
    events, _ = run_events((engine, f"use key {secret}"))
    html = report_html(list(events))
    assert secret not in html


def test_an_empty_recording():
    assert "holds no runs" in report_html([])


# -- where the report is written ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_report_is_never_written_over_a_recording(tmp_path, suffix):
    from loopnb.record import RecordingError

    path = recorded(S.typo()).save(tmp_path / f"run{suffix}")
    before = path.read_bytes()
    with pytest.raises(
        RecordingError, match=rf"run\{suffix}: is a loopnb recording: a report is never written"
    ):
        load(path).to_html(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_recording_under_another_name_is_recognised_by_its_header(tmp_path):
    from loopnb.record import RecordingError

    path = recorded(S.typo()).save(tmp_path / "run.jsonl")
    disguised = path.rename(tmp_path / "run.html")
    with pytest.raises(RecordingError, match="is a loopnb recording"):
        to_html(load(disguised), disguised)


def test_an_earlier_report_is_replaced(tmp_path):
    recorder = recorded(S.typo())
    out = tmp_path / "report.html"
    out.write_text("an older report", encoding="utf-8")
    assert to_html(recorder, out) == out
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_report_onto_a_folder_is_a_recording_error(tmp_path):
    from loopnb.record import RecordingError

    (tmp_path / "r.html").mkdir()
    with pytest.raises(RecordingError, match=r"r\.html: cannot write there: it is a folder"):
        to_html(recorded(S.typo()), tmp_path / "r.html")


def test_a_full_disk_leaves_the_old_report_and_no_empty_file(tmp_path, monkeypatch):
    import pathlib

    from loopnb.record import RecordingError

    recorder = recorded(S.typo())
    old = tmp_path / "old.html"
    old.write_text("the old report", encoding="utf-8")

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", full_disk)
    for name in ("old.html", "new.html"):
        with pytest.raises(RecordingError, match=rf"{name}: cannot write: No space left on device"):
            to_html(recorder, tmp_path / name)
    monkeypatch.undo()
    assert old.read_text(encoding="utf-8") == "the old report"
    assert [p.name for p in tmp_path.iterdir()] == ["old.html"]
