"""Hand-built transcripts, shaped as the engine builds them, for the adapter tests."""

from __future__ import annotations

from loopnb.engine import Message, ModelReply, ToolCall, ToolResult, ToolSpec
from loopnb.engine._messages import Transcript

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a UTF-8 text file.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
)
TASK = "What does src/main.rs do?"


def start(system: str | None = "You read code.") -> list[Message | ModelReply | ToolResult]:
    items: list[Message | ModelReply | ToolResult] = []
    if system is not None:
        items.append(Message(role="system", content=system))
    items.append(Message(role="user", content=TASK))
    return items


def after_mistyped_path(call_id: str = "call_1") -> Transcript:
    """The transcript after turn 1 of the spec's scenario: src/mian.rs was not found."""
    items = start()
    items.append(ModelReply(tool_calls=(ToolCall("read_file", {"path": "src/mian.rs"}, id=call_id),)))
    items.append(
        ToolResult(
            "file src/mian.rs not found",
            is_error=True,
            name="read_file",
            call_id=call_id,
            producer="tool_error",
        )
    )
    return Transcript(items)
