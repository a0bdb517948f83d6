"""Watching stays honest (#26 item 5): a run whose agent span never ends is ended live when the
trace says it is over, with the turns ``from_otel`` reads from the spans that ended.

OpenInference never ends smolagents' agent span when the model raises (and leaves it current, so
the process's next run hangs below it). The spans are the smolagents golden's, made by smolagents
itself (``tests/golden/foreign/make_smolagents.py``), fed to ``LiveSpans`` through the SDK's span
processor calls as they started and ended, with the agent span its run that failed left open.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, Status, StatusCode

import loopnb
from loopnb.otel import LiveSpans

SMOLAGENTS = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "otlp" / "smolagents.otlp.json"
MS = 1_000_000


def _value(value: dict[str, Any]) -> Any:
    if "arrayValue" in value:
        return tuple(_value(v) for v in value["arrayValue"].get("values", []))
    if "intValue" in value:
        return int(value["intValue"])
    return next(iter(value.values()))


@dataclass(frozen=True)
class Spec:
    """One span of the golden, as the SDK would hand it over (``end`` None: it never ended)."""

    trace: int
    span: int
    parent: int | None
    name: str
    start: int
    end: int | None
    code: int = 0
    message: str | None = None
    attributes: tuple[tuple[str, Any], ...] = ()
    events: tuple[tuple[str, int, tuple[tuple[str, Any], ...]], ...] = ()
    scope: str = "openinference.instrumentation.smolagents"

    def sdk(self) -> ReadableSpan:
        return ReadableSpan(
            self.name,
            context=SpanContext(self.trace, self.span, is_remote=False),
            parent=None if self.parent is None else SpanContext(self.trace, self.parent, is_remote=False),
            resource=Resource({}),
            attributes=dict(self.attributes),
            events=[Event(name, dict(attrs), at) for name, at, attrs in self.events],
            status=Status(StatusCode(self.code), self.message if self.code == 2 else None),
            start_time=self.start,
            end_time=self.end,
            instrumentation_scope=InstrumentationScope(self.scope),
        )


def _golden() -> list[Spec]:
    found = []
    for resource in json.loads(SMOLAGENTS.read_text(encoding="utf-8"))["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for s in scope["spans"]:
                found.append(
                    Spec(
                        int(s["traceId"], 16),
                        int(s["spanId"], 16),
                        int(s["parentSpanId"], 16) if s.get("parentSpanId") else None,
                        s["name"],
                        int(s["startTimeUnixNano"]),
                        int(s["endTimeUnixNano"]),
                        s["status"].get("code", 0),
                        s["status"].get("message"),
                        tuple((a["key"], _value(a["value"])) for a in s.get("attributes", ())),
                        tuple(
                            (
                                e["name"],
                                int(e["timeUnixNano"]),
                                tuple((a["key"], _value(a["value"])) for a in e.get("attributes", ())),
                            )
                            for e in s.get("events", ())
                        ),
                    )
                )
    return found


GOLDEN = _golden()
(LOST,) = {s.parent for s in GOLDEN} - {s.span for s in GOLDEN} - {None}
"""The agent span of the run whose model failed: it never ended, so no exporter wrote it."""
FAILED = [s for s in GOLDEN if s.trace == next(g.trace for g in GOLDEN if g.parent == LOST)]
"""That run's spans: the tool raises, then the model's request fails."""
RECOVERS = [s for s in GOLDEN if s.trace == GOLDEN[0].trace]
"""The run that recovers, with its agent span (the root of its trace)."""
AGENT = Spec(
    FAILED[0].trace,
    LOST,
    None,
    "ToolCallingAgent.run",
    min(s.start for s in FAILED) - MS // 2,
    None,
    attributes=(("openinference.span.kind", "AGENT"), ("input.value", "What do the notes say?")),
)
"""The agent span OpenInference started for it and never ended."""


def feed(live: LiveSpans, specs: list[Spec]) -> None:
    """Start and end each span through the processor as the SDK would, in time order."""
    moments = [(s.start, 0, s) for s in specs] + [(s.end, 1, s) for s in specs if s.end is not None]
    for _, ended, spec in sorted(moments, key=lambda m: (m[0], m[1])):
        (live.on_end if ended else live.on_start)(spec.sdk())


def turns(rec: Any) -> list[tuple[Any, ...]]:
    frame = rec.turns if hasattr(rec, "turns") else rec
    return [
        tuple(None if pd.isna(v) else v for v in row)
        for row in frame[["turn", "channel", "producer", "source_status"]].itertuples(index=False)
    ]


FAILED_TURNS = [(1, "soft", "tool_error", "otlp:OK"), (2, "hard", "source_error", "otlp:ERROR:chat")]


def test_the_failed_run_is_not_ended_while_a_framework_could_still_try_the_request_again():
    live = LiveSpans()
    feed(live, [AGENT, *FAILED])
    assert turns(live) == FAILED_TURNS[:1]  # its agent span is open: nothing says it is over yet


def test_stopping_ends_it_with_the_turns_from_otel_reads():
    live = LiveSpans()
    feed(live, [AGENT, *FAILED])
    watched, whole = live.stop(), loopnb.from_otel(s.sdk() for s in FAILED)
    assert turns(whole) == FAILED_TURNS
    pd.testing.assert_frame_equal(watched.turns, whole.turns)
    assert live.errors == []


def test_the_next_run_below_its_agent_span_ends_it_as_it_starts():
    # smolagents' next run on the thread: its agent span hangs below the one left open and current
    trace, shift, ids = FAILED[0].trace, max(s.end or 0 for s in FAILED) + MS, {}

    def moved(s: Spec) -> Spec:
        span = ids.setdefault(s.span, 0x100 + len(ids))
        parent = LOST if s.parent is None else ids.setdefault(s.parent, 0x100 + len(ids))
        return replace(
            s, trace=trace, span=span, parent=parent, start=s.start + shift, end=(s.end or 0) + shift
        )

    nxt = [moved(s) for s in RECOVERS]
    live = LiveSpans()
    feed(live, [AGENT, *FAILED, next(s for s in nxt if s.parent == LOST)])
    assert turns(live) == FAILED_TURNS  # ended before the next run has a turn
    live = LiveSpans()
    feed(live, [AGENT, *FAILED, *nxt])
    whole = loopnb.from_otel(s.sdk() for s in [*FAILED, *nxt])
    assert turns(live) == turns(whole) and len(turns(whole)) == len(FAILED_TURNS) + 5
    # the same turns and texts; the run shown first keeps the trace's id (from_otel gives it to the
    # run whose agent span it has)
    columns = [c for c in whole.turns.columns if c != "run_id"]
    pd.testing.assert_frame_equal(live.turns[columns], whole.turns[columns])
    assert live.turns["run_id"].nunique() == 2 and live.errors == []


def test_its_root_span_ending_ends_it():
    root = Spec(AGENT.trace, 0x99, None, "main", AGENT.start - MS // 4, max(s.end or 0 for s in FAILED) + MS)
    live = LiveSpans()
    feed(live, [root, replace(AGENT, parent=root.span), *FAILED])
    whole = loopnb.from_otel(s.sdk() for s in [root, *FAILED])
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert turns(live) == FAILED_TURNS and live.errors == []


def test_a_run_whose_last_request_did_not_fail_is_left_where_it_was():
    # nothing in the trace says that a run whose model answered is over: its agent span may still end
    agent = next(s for s in RECOVERS if s.parent is None)
    live = LiveSpans()
    feed(live, [replace(agent, end=None), *(s for s in RECOVERS if s is not agent)])
    assert len(turns(live.stop())) == 4  # the answer's turn waits for the run's end
