"""Usage and cost where people look: the live view's header, the replay's, the HTML report and
``loopnb audit``. Every figure shown is read back and compared with ``Audit.usage()``'s frame."""

from __future__ import annotations

import html
import re
import sys

import pytest

from loopnb import FakeClock, audit, replay
from loopnb.analysis._usage import NOT_INSTALLED, dollars
from loopnb.cli import main
from loopnb.notebook import LiveView
from loopnb.notebook._report import report_html

from .conftest import record, scripted

TOKENS = [(1200, 80), (1500, 40), (1700, 25)]


def words(header: str) -> str:
    """The header as text."""
    return html.unescape(re.sub(r"<[^>]+>", "", header))


def figures(turns, cost) -> str:
    """The header's figures for tokens in and out (sums of ``turns``' rows) and ``cost``."""
    shown = (
        f"{int(turns['input_tokens'].sum()):,} tokens in · {int(turns['output_tokens'].sum()):,} tokens out"
    )
    return shown + (f" · {dollars(cost)}" if cost is not None else "")


def test_the_live_header_shows_the_tokens_and_cost_of_the_run():
    view = LiveView(title="look k up")
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)), clock=FakeClock())
    for event in rec.event_objects:
        view(event)
    run = audit(rec).usage().iloc[0]
    assert words(view.header.value) == f"look k up · {figures(audit(rec).usage('turn'), run['cost_usd'])}"
    assert f"{run['input_tokens']:,} tokens in · {run['output_tokens']:,} tokens out" in words(
        view.header.value
    )
    assert dollars(run["cost_usd"]) in view.header.value


def test_the_replay_header_counts_up_to_the_selected_turn():
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)))
    turns = audit(rec).usage("turn")
    view = replay(rec)
    for k in (1, 2, 3):
        view.select(k)
        upto = turns[turns["turn"] <= k]
        cost = upto["cost_usd"].sum()  # every turn priced: the run's cost so far
        assert words(view.header.value) == f"loopnb replay · {figures(upto, cost)}", k
    view.select(0)
    assert view.header.value == "<b>loopnb replay</b>"
    view.select(3)
    assert dollars(audit(rec).usage().loc[0, "cost_usd"]) in view.header.value


def test_an_unpriced_run_shows_its_tokens_and_no_cost_and_a_silent_one_only_its_title():
    unpriced = replay(record(("r1", scripted("scripted", TOKENS))))
    assert words(unpriced.header.value) == "loopnb replay · 4,400 tokens in · 145 tokens out"
    silent = replay(record(("r1", scripted("gpt-4o-mini", [None, None]))))
    assert silent.header.value == "<b>loopnb replay</b>"


def test_without_genai_prices_the_header_keeps_the_tokens(monkeypatch):
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)))
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    assert words(replay(rec).header.value) == "loopnb replay · 4,400 tokens in · 145 tokens out"
    page = report_html(rec)
    assert html.escape(NOT_INSTALLED, quote=True) in page and "$" not in usage_section(page)


def usage_section(page: str) -> str:
    start = page.index('class="loopnb-usage"')
    return page[start : page.index("</section>", start)]


def test_the_report_has_a_usage_table_drawn_from_the_frame():
    rec = record(("priced", scripted("gpt-4o-mini", TOKENS)), ("unknown", scripted("scripted", TOKENS)))
    runs = audit(rec).usage()
    table = usage_section(report_html(rec))
    rows = re.findall(r"<tr><td.*?</tr>", table)
    assert len(rows) == 2
    cells = [
        [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)]
        for r in rows
    ]
    for row, cell in zip(runs.astype(object).to_dict("records"), cells, strict=True):
        assert cell[:5] == [
            row["run_id"],
            row["models"],
            str(row["turns"]),
            str(row["input_tokens"]),
            str(row["output_tokens"]),
        ]
        assert cell[6] == (dollars(row["cost_usd"]) if isinstance(row["cost_usd"], float) else "-")
    assert cells[0][6].startswith("$") and cells[1][6] == "-"
    assert "genai-prices has no price for scripted" in table and "genai-prices " in table


def test_the_report_escapes_a_hostile_model_name():
    name = 'gpt-4o-mini"><script>alert(1)</script>'
    rec = record(("r1", scripted(name, TOKENS)))
    page = report_html(rec)
    table = usage_section(page)
    assert "<script>" not in page and html.escape(name, quote=True) in table
    view = replay(rec)
    assert "<script>" not in view.header.value


def test_a_run_without_tokens_gets_one_line_in_the_report():
    page = report_html(record(("r1", scripted("scripted", [None, None]))))
    assert "usage and cost: no model reported tokens" in page and "<h2>usage and cost</h2>" not in page


def test_loopnb_audit_prints_a_usage_table_when_tokens_are_known(capsys, tmp_path):
    rec = record(("priced", scripted("gpt-4o-mini", TOKENS)), ("unknown", scripted("scripted", TOKENS)))
    path = rec.save(tmp_path / "two.jsonl")
    capsys.readouterr()
    assert main(["audit", str(path), "--width", "120"]) == 0
    out = capsys.readouterr().out
    lines = out.split("\nUsage and cost\n", 1)[1].split("\n\n")[0].splitlines()
    assert lines[0].split() == [
        "model",
        "runs",
        "turns",
        "tokens",
        "in",
        "tokens",
        "out",
        "cost",
        "priced",
        "as",
    ]
    models = audit(rec).usage("model").set_index("model")
    mini = next(line for line in lines if line.startswith("  gpt-4o-mini "))
    cost = dollars(models.loc["gpt-4o-mini", "cost_usd"])
    assert mini.split() == ["gpt-4o-mini", "1", "3", "4400", "145", cost, "openai/gpt-4o-mini"]
    other = next(line for line in lines if line.startswith("  scripted "))
    assert other.split() == ["scripted", "1", "3", "4400", "145", "-", "-"]
    notes = " ".join(out.split("\nUsage and cost\n", 1)[1].split("\nRuns that ended hard")[0].split())
    assert "genai-prices has no price for scripted" in notes and "from genai-prices " in notes


def test_loopnb_audit_leaves_the_usage_table_out_without_tokens(capsys, tmp_path):
    path = record(("r1", scripted("gpt-4o-mini", [None, None]))).save(tmp_path / "silent.jsonl")
    capsys.readouterr()
    assert main(["audit", str(path)]) == 0
    assert "Usage and cost" not in capsys.readouterr().out


@pytest.mark.parametrize("simulated", [True, False])
def test_the_report_says_which_time_is_simulated(simulated):
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)), clock=FakeClock() if simulated else None)
    table = usage_section(report_html(rec))
    assert ("simulated clock" in table) is simulated
    latency = audit(rec).usage().loc[0, "latency_ms"]
    assert (str(latency) == "<NA>") is simulated
