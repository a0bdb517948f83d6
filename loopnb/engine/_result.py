"""What a run returns (and what a hard error salvages)."""

from __future__ import annotations

from dataclasses import dataclass, field

from loopnb.engine._messages import Message, ModelReply, ToolResult


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished or salvaged run.

    ``output`` is the final reply's text (``None`` when the run ended hard). ``messages`` is the
    transcript the model saw, ``tool_results`` one result per tool call the model made, in order:
    everything it read, including pre-answers, refusals and timeouts.
    """

    run_id: str
    output: str | None
    messages: list[Message | ModelReply | ToolResult]
    tool_results: list[ToolResult]
    turns: int
    models: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        return (
            f"RunResult(run_id={self.run_id!r}, turns={self.turns}, "
            f"tool_results={len(self.tool_results)}, output={self.output!r})"
        )
