"""Benchmark ``loopnb.otel.LiveSpans``: a pydantic-ai agent's run watched against the same run unwatched.

A script that prints figures (not a timed test)::

    PYTHONPATH=. python benchmarks/bench_live_spans.py                   # 50, 200 and 1,000 turns
    PYTHONPATH=. python benchmarks/bench_live_spans.py --turns 50 200 --repeats 5

The agent runs on pydantic-ai's ``FunctionModel`` (offline): ``turns - 1`` tool calls (every
fifth a ``ModelRetry`` the model reads back), then its answer, traced by pydantic-ai's own
instrumentation into an SDK ``TracerProvider``. Unwatched, the provider has no span processor;
watched, it has a ``LiveSpans`` (which decodes every span as it ends and emits each final turn
to its ``Recorder``). Each figure is the median of ``--repeats`` rounds, the two runs taken in
turn within a round (so that a busy machine slows both alike), in CPU seconds of this process.
What pydantic-ai does per turn grows with the run (every request carries the whole history, and
its instrumentation writes it down), so the figures to read are the overhead per turn, watched
minus unwatched, and the time spent inside ``LiveSpans`` per turn (the SDK calls it as each
span starts and ends; timed on its own, so a busy machine moves it less): flat in the run's
length when watching costs the same at every turn.
Target (issue 19): watched at most 1.5x unwatched at 1,000 turns.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import warnings
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import UsageLimits

from loopnb.otel import LiveSpans

TARGET = 1.5
"""Issue 19: a 1,000-turn run watched in at most this many times its unwatched time."""


def _agent(provider: TracerProvider, turns: int) -> Agent[None, str]:
    """An agent that calls ``add`` ``turns - 1`` times, then answers."""
    made = 0

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal made
        made += 1
        if made >= turns:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("add", {"a": made, "b": 1}, tool_call_id=f"c{made}")])

    settings = InstrumentationSettings(tracer_provider=provider)
    agent: Agent[None, str] = Agent(
        FunctionModel(answer, model_name="bench-model"),
        name="bench",
        retries=turns,
        capabilities=[Instrumentation(settings=settings)],
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        if a % 5 == 0:
            raise ModelRetry(f"a must not be a multiple of 5, got {a}")
        return a + b

    return agent


class _Timed(SpanProcessor):
    """A ``LiveSpans``, and the seconds spent in it (the SDK calls it as each span starts and ends)."""

    def __init__(self) -> None:
        self.live = LiveSpans()
        self.seconds = 0.0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        start = time.perf_counter()
        self.live.on_start(span, parent_context)
        self.seconds += time.perf_counter() - start

    def on_end(self, span: Any) -> None:
        start = time.perf_counter()
        self.live.on_end(span)
        self.seconds += time.perf_counter() - start


def _once(turns: int, watched: bool) -> tuple[float, _Timed | None]:
    """CPU seconds of one run (with the garbage collected before), and the ``LiveSpans`` if any."""
    provider = TracerProvider()
    timed = _Timed() if watched else None
    if timed is not None:
        provider.add_span_processor(timed)
    agent = _agent(provider, turns)
    gc.collect()
    start = time.process_time()
    agent.run_sync("add them up", usage_limits=UsageLimits(request_limit=turns + 1))
    took = time.process_time() - start
    provider.shutdown()
    return took, timed


def bench(turns: int, repeats: int) -> dict[str, Any]:
    """Median unwatched and watched seconds of a ``turns``-turn run, and what they make per turn."""
    plain: list[float] = []
    watched: list[float] = []
    inside: list[float] = []
    shown = 0
    for _ in range(repeats):
        plain.append(_once(turns, False)[0])
        took, timed = _once(turns, True)
        assert timed is not None
        watched.append(took)
        inside.append(timed.seconds)
        if timed.live.errors:
            raise RuntimeError(f"LiveSpans could not read the run: {timed.live.errors[0]}")
        shown = len(timed.live.turns)
    if shown != turns:
        raise RuntimeError(f"LiveSpans showed {shown} turns of {turns}")
    p, w = statistics.median(plain), statistics.median(watched)
    return {
        "turns": turns,
        "unwatched s": p,
        "watched s": w,
        "ratio": w / p,
        "unwatched ms/turn": 1000 * p / turns,
        "overhead ms/turn": 1000 * (w - p) / turns,
        "in LiveSpans ms/turn": 1000 * statistics.median(inside) / turns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # pydantic-ai's deprecation notes are not the figures
    for watched in (False, True):  # imports and first-use set-up, not timed
        _once(5, watched)
    for turns in args.turns:
        row = bench(turns, args.repeats)
        print(
            f"{row['turns']:>6,} turns   unwatched {row['unwatched s']:7.3f} s"
            f" ({row['unwatched ms/turn']:.2f} ms/turn)   watched {row['watched s']:7.3f} s"
            f"   overhead {row['overhead ms/turn']:.2f} ms/turn   {row['ratio']:.2f}x"
            f"   (in LiveSpans {row['in LiveSpans ms/turn']:.3f} ms/turn)",
            flush=True,
        )
    print(f"target: at most {TARGET}x at 1,000 turns, overhead per turn flat in the run's length")


if __name__ == "__main__":
    main()
