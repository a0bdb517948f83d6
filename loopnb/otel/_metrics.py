"""The GenAI conventions' metrics of the spans ``Exporter`` writes, taken from each span as it ends.

Each metric is the span's own figure, as the conventions ask ("the metric value SHOULD be the same
as the span duration", the same ``error.type`` on both): ``gen_ai.invoke_agent.duration`` per run,
with the run's ``gen_ai.invoke_agent.inference_calls`` and ``gen_ai.invoke_agent.tool_calls`` (its
model requests and tool executions, failed ones too: the ``chat`` and ``execute_tool`` spans under
its span), ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` per model
request, ``gen_ai.execute_tool.duration`` per dispatch attempt, with the buckets the conventions
advise. Only the low-cardinality attributes the conventions list for each metric
are kept (no call id, no text). ``gen_ai.provider.name`` is left out: loopnb's events name a model,
not who serves it.
"""

from __future__ import annotations

from typing import Any

SECONDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""The buckets the conventions advise for an operation's and a tool's duration."""
RUN_SECONDS = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)
"""The buckets they advise for an agent invocation's duration."""
TOKENS = tuple(float(4**i) for i in range(14))
"""1, 4, 16, ... 67,108,864: the buckets they advise for token counts."""
CALLS = tuple(float(2**i) for i in range(8))
"""1, 2, 4, ... 128: for a run's count of model requests and of tool executions."""

_KEPT = {
    "invoke_agent": ("gen_ai.agent.name", "error.type"),
    "chat": ("gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.model", "error.type"),
    "execute_tool": ("gen_ai.tool.name", "gen_ai.tool.type", "error.type"),
}
"""Per operation, the span attributes its metric keeps."""


class Meters:
    """The instruments, and what each ended span adds to them.

    Args:
        meter_provider: An SDK ``MeterProvider`` (or any with ``get_meter``).
        agent: The agent's name, on each tool's duration (``gen_ai.agent.name``).
        version: loopnb's version, the meter's.
    """

    def __init__(self, meter_provider: Any, *, agent: str, version: str) -> None:
        meter = meter_provider.get_meter("loopnb", version)
        self.agent = agent
        self.run = meter.create_histogram(
            "gen_ai.invoke_agent.duration",
            unit="s",
            description="The end-to-end duration of a single agent invocation.",
            explicit_bucket_boundaries_advisory=RUN_SECONDS,
        )
        self.operation = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKENS,
        )
        self.tool = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.inference_calls = meter.create_histogram(
            "gen_ai.invoke_agent.inference_calls",
            unit="{inference_call}",
            description="The model calls one agent invocation made.",
            explicit_bucket_boundaries_advisory=CALLS,
        )
        self.tool_calls = meter.create_histogram(
            "gen_ai.invoke_agent.tool_calls",
            unit="{tool_call}",
            description="The tool calls one agent invocation made.",
            explicit_bucket_boundaries_advisory=CALLS,
        )
        self._counts: dict[int, list[int]] = {}
        """By run span id, its model requests and tool executions so far (dropped as it ends)."""

    def ended(self, span: Any) -> None:
        """Record what ``span`` (an SDK span that has just ended) says: its duration, and a model
        request's tokens. A span that keeps no attributes (the API's no-op) records nothing."""
        attributes = getattr(span, "attributes", None)
        start, end = getattr(span, "start_time", None), getattr(span, "end_time", None)
        if not attributes or start is None or end is None:
            return
        operation = attributes.get("gen_ai.operation.name")
        kept = _KEPT.get(operation) if isinstance(operation, str) else None
        if kept is None:
            return
        labels = {key: attributes[key] for key in kept if key in attributes}
        seconds = max(0, end - start) / 1e9
        if operation == "invoke_agent":
            self.run.record(seconds, labels)
            chats, tools = self._counts.pop(span.context.span_id, [0, 0])
            named = {"gen_ai.agent.name": self.agent}
            self.inference_calls.record(chats, named)
            self.tool_calls.record(tools, named)
            return
        parent = getattr(span, "parent", None)
        if parent is not None:  # counted for the run it hangs under
            self._counts.setdefault(parent.span_id, [0, 0])[operation == "execute_tool"] += 1
        if operation == "execute_tool":
            self.tool.record(seconds, {**labels, "gen_ai.agent.name": self.agent})
        else:
            self.operation.record(seconds, labels)
            for kind in ("input", "output"):
                count = attributes.get(f"gen_ai.usage.{kind}_tokens")
                if isinstance(count, int):
                    self.tokens.record(count, {**labels, "gen_ai.token.type": kind})
