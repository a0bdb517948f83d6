"""``LiveSpans``: a real pydantic-ai agent's spans, read as they end, give the trace's turns.

The agents run on pydantic-ai's ``FunctionModel`` (offline, scripted), traced by pydantic-ai's
own instrumentation into an SDK ``TracerProvider`` that holds an ``InMemorySpanExporter`` and
the ``LiveSpans`` under test; what ``LiveSpans`` emitted is compared with
``loopnb.from_otel`` of every span at the end, and with when each span ended.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import pytest
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

import loopnb
from loopnb.notebook import LiveView, ViewModel
from loopnb.otel import LiveSpans
from tests.golden.foreign.make_otlp import call, say, scripted

NOTS = "file nots.txt not found; did you mean notes.txt?"
UNKNOWN = "Unknown tool name: 'serch'. Available tools: 'delete', 'read_file'"
READER = [
    call("read_file", {"path": "nots.txt"}, "c1"),  # ModelRetry: soft, and the model recovers
    call("serch", {"q": "notes"}, "c2"),  # an unknown tool: no tool span at all
    call("read_file", {"path": "notes.txt"}, "c3"),
    say("the notes say hi"),
]
EXPECTED = [  # (run, turn, channel, producer, error_text)
    (0, 1, "soft", "tool_error", NOTS),
    (0, 2, "soft", "not_advertised", UNKNOWN),
    (0, 3, "ok", None, None),
    (0, 4, "ok", None, None),
    (1, 1, "hard", "source_error", "KeyError: 'x'"),  # the tool's crash ended the run
]


class Log(SpanProcessor):
    """Writes each span's end into ``log`` (as ``("end", name)``), where ``LiveSpans``'s
    observer writes each event: the one list says what was emitted after which span ended."""

    def __init__(self, log: list[tuple[str, Any]], probe: Callable[[], Any] | None = None) -> None:
        self.log, self.probe = log, probe

    def on_end(self, span: Any) -> None:
        self.log.append(("end", span.name) if self.probe is None else ("after", self.probe()))


def traced(
    *processors: Any, log: list[tuple[str, Any]] | None = None
) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider with an in-memory exporter, then (with ``log``) a span-end log, then ``processors``."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if log is not None:
        provider.add_span_processor(Log(log))
    for processor in processors:
        provider.add_span_processor(processor)
    return provider, memory


def agent(
    provider: TracerProvider, name: str, steps: Sequence[ModelResponse] | FunctionModel, *, retries: int = 3
) -> Agent[None, str]:
    """A pydantic-ai agent with ``read_file`` (a ``ModelRetry`` for a wrong path) and ``delete`` (crashes)."""
    model = steps if isinstance(steps, FunctionModel) else scripted(steps)
    settings = InstrumentationSettings(tracer_provider=provider)
    built: Agent[None, str] = Agent(
        model, name=name, retries=retries, capabilities=[Instrumentation(settings=settings)]
    )

    @built.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        if path != "notes.txt":
            raise ModelRetry(f"file {path} not found; did you mean notes.txt?")
        return "hi"

    @built.tool_plain
    def delete(path: str) -> str:
        """Delete a file."""
        raise KeyError(path)

    return built


def run_both(provider: TracerProvider) -> None:
    """The reader recovers from a soft error and an unknown tool; the deleter's tool crashes the run."""
    agent(provider, "reader", READER).run_sync("read the notes")
    with pytest.raises(KeyError):
        agent(provider, "deleter", [call("delete", {"path": "x"}, "d1")]).run_sync("delete x")


def rows(turns: pd.DataFrame) -> list[tuple[Any, ...]]:
    runs = {r: i for i, r in enumerate(dict.fromkeys(turns["run_id"]))}
    out = []
    for r in turns[["run_id", "turn", "channel", "producer", "error_text"]].itertuples(index=False):
        out.append((runs[r.run_id], r.turn, r.channel, None if pd.isna(r.producer) else r.producer,
                    None if pd.isna(r.error_text) else r.error_text))  # fmt: skip
    return out


def test_the_live_turns_are_the_traces_turns_event_for_event():
    live = LiveSpans()
    provider, memory = traced(live)
    run_both(provider)
    whole = loopnb.from_otel(memory.get_finished_spans())
    assert rows(live.turns) == rows(whole.turns) == EXPECTED
    pd.testing.assert_frame_equal(live.turns, whole.turns)  # channels, producers, texts, seqs, times
    assert live.recorder.event_objects == list(whole.event_objects)
    assert live.errors == []


def test_each_turn_is_emitted_once_the_next_request_or_the_run_has_ended():
    log: list[tuple[str, Any]] = []
    live = LiveSpans(lambda e: log.append((e.kind, getattr(e, "turn", None))))
    provider, _ = traced(live, log=log)
    agent(provider, "reader", READER).run_sync("read the notes")
    # what had ended when each event was emitted
    ended: list[str] = []
    emitted_after: dict[tuple[str, Any], list[str]] = {}
    for what, detail in log:
        if what == "end":
            ended.append(detail)
        else:
            emitted_after[(what, detail)] = list(ended)
    chat, tool, run = "chat scripted-model", "execute_tool read_file", "invoke_agent reader"
    # the run shows once its first request has ended; turn k once request k + 1 has
    assert emitted_after[("run_started", None)] == [chat]
    assert emitted_after[("turn_finished", 1)] == [chat, tool, chat]
    assert emitted_after[("turn_finished", 2)] == [chat, tool, chat, chat]  # the unknown tool: no span
    assert emitted_after[("turn_finished", 3)] == [chat, tool, chat, chat, tool, chat]
    assert emitted_after[("turn_finished", 4)] == emitted_after[("run_finished", None)]
    assert emitted_after[("run_finished", None)][-1] == run
    # and each as soon as that span ended: nothing else ended in between
    position = {entry: i for i, entry in enumerate(log)}
    for k in (1, 2, 3):
        assert log[position[("turn_started", k)] - 1][0] == "end"
    assert [e for e in log if e[0] == "turn_finished"] == [("turn_finished", k) for k in (1, 2, 3, 4)]


def test_the_view_advances_turn_by_turn_as_the_spans_end():
    view = LiveView(first_frame=60.0)  # drawn once, at the end: the model is what is checked
    live = LiveSpans(view)
    log: list[tuple[str, Any]] = []
    probe = Log(log, lambda: (view.model.turns_finished, view.model.snapshot()))
    provider, memory = traced(live, probe, log=log)
    agent(provider, "reader", READER).run_sync("read the notes")
    seen = [detail for what, detail in log if what == "after"]
    names = [detail for what, detail in log if what == "end"]
    counts = [n for n, _ in seen]
    chats = [i for i, name in enumerate(names) if name.startswith("chat")]
    assert [counts[i] for i in chats] == [0, 1, 2, 3] and counts[-1] == 4
    assert counts == sorted(counts)  # it never goes back
    # after request k + 1 the view is exactly the recording's view up to turn k
    events = list(loopnb.from_otel(memory.get_finished_spans()).event_objects)
    finished = [i for i, e in enumerate(events) if e.kind == "turn_finished"]
    for k, i in enumerate(chats[1:], start=1):
        prefix = events[: finished[k - 1] + 1]
        assert seen[i][1] == ViewModel().extend(prefix).snapshot(), f"after request {k + 1}"
    final = seen[-1][1]
    assert final == ViewModel.fold(events) and final.run.phase == "ok"
    assert [t.channel for t in final.turns] == ["soft", "soft", "ok", "ok"]
    assert final.edge_counts != ViewModel.fold(events[: finished[0] + 1]).edge_counts
    assert view.finished and view.state.run.output == "the notes say hi"


def test_an_agent_run_inside_a_tool_is_a_run_of_its_own_with_the_readers_id():
    live = LiveSpans()
    provider, memory = traced(live)
    settings = InstrumentationSettings(tracer_provider=provider)
    helper: Agent[None, str] = Agent(
        scripted([say("the summary")]), name="helper", capabilities=[Instrumentation(settings=settings)]
    )
    lead: Agent[None, str] = Agent(
        scripted([call("summarise", {"text": "notes"}, "h1"), say("done")]),
        name="lead",
        capabilities=[Instrumentation(settings=settings)],
    )

    @lead.tool_plain
    async def summarise(text: str) -> str:
        """Summarise with the helper agent."""
        return (await helper.run(text)).output

    lead.run_sync("summarise the notes")
    whole = loopnb.from_otel(memory.get_finished_spans())
    key = ["run_id", "turn"]
    pd.testing.assert_frame_equal(
        live.turns.sort_values(key).reset_index(drop=True),
        whole.turns.sort_values(key).reset_index(drop=True),
    )
    # the lead shows first (its first request ended first); the helper's turn, inside the lead's
    # first, is final first: the recorder has it first
    assert live.recorder.run_ids == whole.meta["run_ids"]
    assert list(live.turns["tools"].fillna("")) == ["", "summarise", ""]


def test_watch_follows_agents_on_the_provider_and_stops():
    provider, memory = traced()
    view = loopnb.watch(provider, display=False)
    assert isinstance(view, LiveView) and view.provider is provider
    run_both(provider)
    assert [t.channel for t in view.state.turns] == ["hard"]  # the view is on the last run
    assert view.state.run.phase == "hard" and len(view.turns) == 5
    rec = view.stop()
    assert not view.spans.watching and view.status.value.count("stopped watching") == 1
    assert rows(rec.turns) == rows(loopnb.from_otel(memory.get_finished_spans()).turns) == EXPECTED
    agent(provider, "reader", READER).run_sync("read the notes")  # no longer watched
    assert len(view.turns) == 5 and len(view.recording().turns) == 5


def test_agent_instrument_all_on_the_watched_provider():
    provider, memory = traced()
    view = loopnb.watch(provider, display=False)
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    try:
        plain: Agent[None, str] = Agent(scripted([call("lookup", {"key": "a"}, "k1"), say("a is 1")]))

        @plain.tool_plain
        def lookup(key: str) -> str:
            """Look a key up."""
            return "1"

        plain.run_sync("what is a?")
    finally:
        Agent.instrument_all(False)
    assert list(view.turns["tools"].fillna("")) == ["lookup", ""]
    pd.testing.assert_frame_equal(view.turns, loopnb.from_otel(memory.get_finished_spans()).turns)


def test_watch_refuses_a_provider_it_cannot_add_a_processor_to():
    with pytest.raises(TypeError, match=r"SDK TracerProvider .*got object"):
        loopnb.watch(object(), display=False)


def test_two_agents_on_two_threads_do_not_mix():
    live = LiveSpans()
    provider, memory = traced()
    view = loopnb.watch(provider, display=False)
    provider.add_span_processor(live)
    both = threading.Barrier(2, timeout=20)

    def model(steps: list[ModelResponse]) -> FunctionModel:
        script = iter(steps)

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            both.wait()  # each request waits for the other agent's: the runs overlap turn by turn
            return next(script)

        return FunctionModel(answer, model_name="scripted-model")

    reader = [call("read_file", {"path": f"n{i}.txt"}, f"r{i}") for i in range(3)] + [say("read")]
    other = [call("serch", {"q": str(i)}, f"s{i}") for i in range(3)] + [say("searched")]
    failures: list[BaseException] = []

    def go(name: str, steps: list[ModelResponse]) -> None:
        try:
            agent(provider, name, model(steps), retries=5).run_sync(name)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=go, args=a) for a in (("reader", reader), ("searcher", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures and live.errors == [] and view.spans.errors == []
    whole = loopnb.from_otel(memory.get_finished_spans()).turns
    for turns in (live.turns, view.turns):
        assert len(turns) == len(whole) == 8
        key = ["run_id", "turn"]
        pd.testing.assert_frame_equal(
            turns.sort_values(key).reset_index(drop=True), whole.sort_values(key).reset_index(drop=True)
        )
        by_run = turns.groupby("run_id", observed=True)["tools"].agg(lambda s: set(s.dropna()))
        assert sorted(map(sorted, by_run)) == [["read_file"], ["serch"]]  # each run its own calls
    shown = view.spans.recorder.event_objects  # the view's own processor: its order, not ``live``'s
    kinds = [(e.kind, e.run_id) for e in shown if e.kind in ("run_started", "run_finished")]
    assert [k for k, _ in kinds[:2]] == ["run_started", "run_started"]  # they did overlap
    # the view showed the first run, then the second caught up: it ends on the second, whole
    second = kinds[1][1]
    assert view.state.run.run_id == second and view.state.run.phase == "ok"
    assert len(view.state.turns) == len(whole[whole["run_id"] == second])


def test_a_span_that_cannot_be_read_crashes_neither_the_processor_nor_the_agent():
    from opentelemetry.sdk.trace import ReadableSpan

    live = LiveSpans()
    provider, memory = traced(live)
    tracer = provider.get_tracer("broken")
    with pytest.warns(loopnb.LoopnbWarning) as warned:
        live.on_start(object())
        live.on_end(ReadableSpan("no context"))
        with tracer.start_as_current_span(
            "invoke_agent broken", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            for _ in range(2):  # a model request whose output is not messages at all
                attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"parts": 7}]'}
                with tracer.start_as_current_span("chat m", attributes=attributes):
                    pass
        run_both(provider)  # the next runs are read as ever
    assert len(live.errors) == len([w for w in warned if w.category is loopnb.LoopnbWarning]) == 3
    assert "object" in live.errors[0] and "'no context'" in live.errors[1]
    assert "could not be read on" in live.errors[2]
    good = [s for s in memory.get_finished_spans() if s.instrumentation_scope.name != "broken"]
    assert rows(live.turns) == rows(loopnb.from_otel(good).turns) == EXPECTED


def test_an_observer_that_raises_is_detached_and_the_others_go_on():
    seen: list[str] = []

    def broken(event: Any) -> None:
        raise RuntimeError("observer bug")

    live = LiveSpans(broken, lambda e: seen.append(e.kind))
    provider, _ = traced(live)
    with pytest.warns(loopnb.LoopnbWarning, match="observer bug; it was detached"):
        run_both(provider)
    assert len(live.errors) == 1 and seen.count("run_finished") == 2 and len(live.turns) == 5


GLOBAL = """
import json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
import loopnb

view = loopnb.watch(display=False)  # no global provider yet: one is made and set
made = trace.get_tracer_provider()
again = loopnb.watch(display=False)  # now the global one is an SDK provider: it is used
script = iter([ModelResponse(parts=[ToolCallPart("lookup", {"key": "a"}, tool_call_id="k1")]),
               ModelResponse(parts=[TextPart("a is 1")])])
agent = Agent(FunctionModel(lambda messages, info: next(script)))

@agent.tool_plain
def lookup(key: str) -> str:
    return "1"

Agent.instrument_all()  # pydantic-ai's default: the global tracer provider
agent.run_sync("what is a?")
print(json.dumps({
    "sdk": isinstance(made, TracerProvider),
    "same": view.provider is made and again.provider is made,
    "turns": [list(v.turns["channel"]) for v in (view, again)],
}))
"""

NOT_SDK = """
from opentelemetry import trace
import loopnb

trace.set_tracer_provider(trace.NoOpTracerProvider())
try:
    loopnb.watch(display=False)
except TypeError as exc:
    print(exc)
"""


def _python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_watch_without_a_provider_makes_the_global_one_and_then_uses_it():
    found = json.loads(_python(GLOBAL))
    assert found == {"sdk": True, "same": True, "turns": [["ok", "ok"], ["ok", "ok"]]}


def test_watch_says_why_a_global_provider_that_is_not_the_sdks_cannot_be_watched():
    said = _python(NOT_SDK)
    assert "the global tracer provider is a NoOpTracerProvider, not an SDK TracerProvider" in said
    assert "loopnb.watch(provider)" in said
