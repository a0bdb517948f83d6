"""The static report: one self-contained offline HTML file, escaped, secrets redacted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loopnb
from loopnb import load, scenarios
from loopnb._palette import PALETTE
from loopnb.analysis._flowchart import EDGES
from loopnb.engine import ToolCall
from loopnb.fileformats import REASONS
from loopnb.foreign._transcript import RunWriter
from loopnb.notebook import ViewModel, report_html, to_html
from loopnb.notebook._markup import esc
from loopnb.notebook._report import FULL_ROWS, TEXT_LIMIT
from loopnb.notebook._viewmodel import runs_of
from loopnb.record import Recorder, Recording
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events


def recorded(*scenarios):
    recorder = Recorder()
    for scenario in scenarios:
        engine, _task = scenario[0], scenario[1]
        engine.subscribe(recorder)
        run_events(scenario)
    return recorder


NETWORK = re.compile(r"""(?:src|href|action|xlink:href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def assert_offline(html: str) -> None:
    """Nothing on the page would be fetched: no remote link or source, no script, no import."""
    assert not NETWORK.search(html), NETWORK.search(html)
    assert "<script" not in html.lower()  # the report needs no script at all
    style = re.search(r"<style>(.*?)</style>", html, flags=re.S)
    assert style is not None and "@import" not in style.group(1) and "url(" not in style.group(1)


def test_report_is_one_offline_file(tmp_path):
    recorder = recorded(S.payload(), S.looping())
    path = to_html(recorder, tmp_path / "report.html")
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert html.count('<section class="loopnb-run"') == 2
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert html.count('<svg class="loopnb-svg loopnb-flow"') == 2  # the panes are drawn inline
    assert len(html.encode()) < 100_000
    assert_offline(html)


def test_a_100_turn_report_is_under_120_kb_as_the_readme_says():
    html = report_html(recorded(S.long_run(100)))
    size = len(html.encode())
    assert 20_000 < size < 120_000, size
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "100-turn report is about 106 KB (under 120 KB" in " ".join(readme.split())
    # its gauge is the last call's, as the live view shows it with that turn selected
    assert "no tool call yet" not in html
    assert html.count('class="loopnb-turn"') == 100
    assert html.count('class="loopnb-mark"') == 100
    assert_offline(html)


@pytest.mark.parametrize("name", scenarios.names())
def test_every_built_in_scenario_makes_a_small_offline_report(name):
    outcome = scenarios.get(name).run()
    html = report_html(outcome.events)
    assert len(html.encode()) < 300_000, (name, len(html.encode()))
    assert html.count('class="loopnb-turn"') == len(outcome.turns)
    assert_offline(html)


def test_every_turn_shows_what_the_model_read_inline():
    """Error texts, results and hard endings are visible text in their row, not folded away."""
    events = [e for s in (S.demo(), S.payload(), S.exhausted(), S.looping()) for e in run_events(s)[0]]
    html = report_html(events)
    assert "<details" not in html and "<summary" not in html
    rows = re.findall(r'<tr class="loopnb-turn" id="(loopnb-r\d+-t\d+)"(.*?)</tr>', html, flags=re.S)
    states = [ViewModel.fold(run) for run in runs_of(events).values()]
    turns = [t for state in states for t in state.turns]
    assert len(rows) == len(turns) > 10
    hard = 0
    for (row_id, row), t in zip(rows, turns, strict=True):
        assert row_id.endswith(f"-t{t.turn}")
        for item in t.read:
            assert esc(item.text, TEXT_LIMIT) in row, (t.turn, item.text)
        if t.channel == "hard":
            hard += 1
            assert t.error_text and esc(t.error_text, 2000) in row
    assert hard == 2  # the recovery wall and the loop detector
    assert html.count("src/mian.rs not found") >= 1


def test_a_long_run_shows_its_first_thousand_turns_in_full():
    html = report_html(run_events(S.long_run(FULL_ROWS + 5))[0])
    assert html.count('class="loopnb-turn"') == FULL_ROWS + 5
    # the timeline: 1,005 turns in 144 marks of 7 (the last of 6), each a link to its worst turn
    link = r'<a href="#loopnb-r0-t(\d+)" class="loopnb-mark" data-channel="\w+" data-turns="(\d+)-(\d+)"'
    bins = re.findall(link, html)
    assert len(bins) == 144 and bins[0][1:] == ("1", "7") and bins[-1][1:] == ("1002", "1005")
    assert all(int(a) <= int(t) <= int(b) for t, a, b in bins)
    assert html.count('<pre class="loopnb-read') == FULL_ROWS  # every read of the first 1,000
    assert html.count('colspan="2"') == 5 and f"past the first {FULL_ROWS:,}" in html
    assert f'id="loopnb-r0-t{FULL_ROWS + 5}"' in html  # the last mark still has its row
    assert len(html.encode()) < 1_000_000


def test_narrow_columns_do_not_break_inside_words():
    """``overflow-wrap:anywhere`` let a squeezed column break "soft" into "sof" and "t"."""
    html = report_html(recorded(S.typo()))
    style = html[: html.index("</style>")].split("@media print")[0]
    rules = dict(re.findall(r"(table\.loopnb-turns t[dh][^{]*)\{([^}]*)\}", style))
    assert "white-space:nowrap" in rules["table.loopnb-turns th"]
    assert "overflow-wrap:break-word" in rules["table.loopnb-turns td"]
    assert "anywhere" not in rules["table.loopnb-turns td"]
    assert "overflow-wrap:anywhere" in rules["table.loopnb-turns td.wide"]


def test_timeline_marks_link_to_their_rows():
    html = report_html(recorded(S.typo(), S.exhausted()))
    links = re.findall(r'<a href="#([^"]+)" class="loopnb-mark" data-channel="(\w+)">', html)
    ids = set(re.findall(r'<tr class="loopnb-turn" id="([^"]+)" data-channel="(\w+)"', html))
    assert len(links) == 4 and set(links) == ids  # channels agree too
    assert {"loopnb-r0-t1", "loopnb-r0-t3", "loopnb-r1-t1"} <= {i for i, _ in links}


def test_channels_pair_colour_with_shape_and_word():
    html = report_html(recorded(S.typo(), S.exhausted()))
    for channel, colour in PALETTE.items():
        assert f".k-{channel}{{fill:{colour}}}" in html
    assert PALETTE == {"ok": "#009E73", "soft": "#E69F00", "hard": "#D55E00"}
    hit = r'<rect class="hit"[^>]*/>'
    assert re.search(rf'data-channel="soft">{hit}<path class="m k-soft"', html)
    assert re.search(rf'data-channel="ok">{hit}<circle class="m k-ok"', html)
    assert re.search(rf'data-channel="hard">{hit}<rect class="m k-hard"', html)
    for word in ("soft", "ok", "hard"):  # the badge in a row says its channel in words
        assert re.search(rf'<td><span class="word"[^>]*><svg[^>]*>.*?</svg>{word}</span></td>', html)


def test_the_flow_shows_the_view_states_counts():
    events = run_events(S.demo())[0]
    state = ViewModel.fold(events)
    html = report_html(events)
    drawn = dict(re.findall(r'data-edge="([\w-]+)" data-count="(\d+)"', html))
    assert drawn == {e.id: str(n) for e, n in zip(EDGES, state.edge_counts, strict=True)}
    assert sum(state.edge_counts) > 0
    lit = re.findall(r'data-edge="([\w-]+)" data-count="\d+"><line[^>]*stroke-width="4"', html)
    assert tuple(lit) == tuple(e.id for e in EDGES if e.id in state.lit)


def test_the_gauge_and_board_are_drawn_as_text_too():
    html = report_html(recorded(S.exhausted()))
    assert "asked for retry 6: hit the wall (ToolRecoveryExhausted)" in html
    assert html.count("<rect x=") >= 7  # the call, five retries and the wall
    html = report_html(recorded(S.demo()))
    assert re.search(r'class="loopnb-breaker-state"[^>]*>.*?</svg> open</td>', html)


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


# -- where a foreign run's source disagrees with the channel table --------------------------------

FOREIGN = Path(__file__).resolve().parents[1] / "golden" / "foreign"


def _disagreement_rows(html: str) -> list[tuple[str, str, str, str]]:
    """Each row of the section: (reason, turn link, tool, source status)."""
    section = re.search(r'<section class="loopnb-disagreements">(.*?)</section>', html, flags=re.S)
    assert section is not None, "no disagreements section"
    return re.findall(
        r'<tr class="loopnb-disagreement" data-reason="([a-z_]+)"><td><code>[^<]*</code></td>'
        r'<td class="n"><a href="#([^"]+)">\d+</a></td><td><code>([^<]*)</code></td><td><code>([^<]*)</code>',
        section.group(1),
    )


def test_a_foreign_run_shows_where_its_source_disagrees():
    rec = load(FOREIGN / "otlp" / "pydantic_ai.otlp.json")
    html = report_html(rec)
    rows = _disagreement_rows(html)
    expected = loopnb.audit(rec).disagreements()
    assert [r[0] for r in rows] == expected["reason"].tolist()
    assert [r[2] for r in rows] == expected["tool"].tolist()
    assert [r[3] for r in rows] == expected["source_status"].tolist()
    assert rows[0] == ("missing_tool_record", "loopnb-r0-t2", "serch", "otlp:missing")
    for _reason, anchor, _tool, _status in rows:  # each turn links to its row in the run's section
        assert f'id="{anchor}"' in html
    assert html.index("where the source disagrees") < html.index('<section class="loopnb-run"')
    for reason in set(expected["reason"]):
        assert f"<code>{reason}</code>: {esc(REASONS[reason])}</li>" in html
    assert_offline(html)


def test_a_foreign_run_its_source_marks_as_the_table_does_says_so():
    html = report_html(load(FOREIGN / "pydantic-ai" / "recovered.json"))
    assert "where the source disagrees" in html and "nowhere: the source marks every call" in html
    assert 'class="loopnb-disagreement"' not in html


def test_a_loopnb_run_has_no_disagreements_section():
    html = report_html(recorded(S.typo(), S.exhausted()))
    assert "loopnb-disagreements" not in html and "where the source disagrees" not in html


def test_the_disagreements_section_escapes_untrusted_text():
    run = RunWriter("r1", task="read", models=("m",), tools=("read_file",))
    t = run.turn()
    t.reply(calls=[ToolCall(S.PAYLOAD, {}, id="a")], model="m")
    t.result(
        "a", f"upstream said: {S.PAYLOAD}", name=S.PAYLOAD, producer="tool_error", source_status="otlp:OK"
    )
    t.finish(source_status="otlp:UNSET")
    rec = Recording.from_events(run.finish("done"), meta={"source": {"format": "otlp", "version": "1"}})
    html = report_html(rec)
    section = html[
        html.index('<section class="loopnb-disagreements">') : html.index('<section class="loopnb-run"')
    ]
    assert 'data-reason="soft_shown_as_success"' in section
    assert S.PAYLOAD not in html and "<img src=x" not in html
    assert f"upstream said: {esc(S.PAYLOAD)}" in section and f"<code>{esc(S.PAYLOAD, 80)}</code>" in section
    assert_offline(html)
