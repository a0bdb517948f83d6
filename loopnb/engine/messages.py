"""What the model and the engine say to each other: the transcript's items.

A transcript is a list of three kinds of item, told apart by ``role``:

- ``Message``: text from the system or the user (the system prompt, the task, feedback such as a
  rejected answer or a convergence warning);
- ``ModelReply``: what the model answered (``role="assistant"``): text and/or tool calls;
- ``ToolResult``: one tool call's result (``role="tool"``), ``is_error=True`` for a soft error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field

from loopnb.engine.errors import SoftProducer

__all__ = [
    "Message",
    "ModelReply",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "TranscriptItem",
    "Usage",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolCall(BaseModel):
    """One call the model asks for: ``ToolCall("read_file", {"path": "src/main.rs"})``.

    ``arguments`` is a dict, or the raw string a model sent when it was not a JSON object (the
    dispatcher answers that softly). ``id`` is filled in by the engine when the model gives none.
    """

    model_config = _FROZEN

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str = ""

    def __init__(self, name: str, arguments: dict[str, Any] | str | None = None, **data: Any) -> None:
        super().__init__(name=name, arguments={} if arguments is None else arguments, **data)

    # Positional arguments are a convenience of this ``__init__`` alone: data that pydantic
    # validates (a recording being loaded, a nested dict) always names its fields. Marked as
    # pydantic's own ``__init__``, it is skipped there, and pydantic builds the model without a
    # call back into Python for each one (a quarter of loading a JSON Lines recording).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


class ToolResult(BaseModel):
    """The result of one tool call, exactly as the model reads it.

    ``is_error=True`` marks a soft error; ``producer`` says which row of the channel table made it
    (``None`` for a success). ``note`` carries a recovery analysis beside the result: it is never
    merged into ``content``. ``attempts`` counts calls of the tool made for this result (0 when
    nothing was executed, e.g. a pre-answer or a refusal).
    """

    model_config = _FROZEN

    role: Literal["tool"] = "tool"
    content: str
    is_error: bool = False
    name: str = ""
    call_id: str = ""
    producer: SoftProducer | None = None
    note: str | None = None
    attempts: int = 1

    def __init__(self, content: str | None = None, **data: Any) -> None:
        if content is not None:
            data["content"] = content
        super().__init__(**data)

    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # as for ToolCall


_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__  # the slot setters, looked up once
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# Shared by every trusted result: pydantic copies a model's fields-set before changing it
# (``model_copy``) and a frozen model never adds to it, so one set object is safe to share.
_FIELDS = {"content", "is_error", "name", "call_id", "producer", "attempts"}
_FIELDS_NOTE = _FIELDS | {"note"}


def trusted_result(
    content: str,
    is_error: bool,
    name: str,
    call_id: str,
    producer: SoftProducer | None,
    attempts: int,
    note: str | None = None,
) -> ToolResult:
    """Build a ``ToolResult`` from values the engine has already checked, skipping validation.

    The dispatcher builds one per tool call, so this sits on the per-turn path; it yields exactly
    the object ``ToolResult(...)`` would (the tests compare the two).
    """
    result: ToolResult = _new(ToolResult)
    _set_dict(
        result,
        {
            "role": "tool",
            "content": content,
            "is_error": is_error,
            "name": name,
            "call_id": call_id,
            "producer": producer,
            "note": note,
            "attempts": attempts,
        },
    )
    _set_fields(result, _FIELDS if note is None else _FIELDS_NOTE)
    _set_extra(result, None)
    _set_private(result, None)
    return result


class Usage(BaseModel):
    """Token usage a model reported for one request."""

    model_config = _FROZEN

    input_tokens: int = 0
    output_tokens: int = 0


class ModelReply(BaseModel):
    """What the model answered. No tool calls means a final reply whose ``text`` is the output."""

    model_config = _FROZEN

    role: Literal["assistant"] = "assistant"
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    model: str | None = None
    usage: Usage | None = None

    @property
    def is_final(self) -> bool:
        """True when the model asked for no tool: the run's answer (unless a done-check rejects it)."""
        return not self.tool_calls


class Message(BaseModel):
    """Text from the system or the user: the system prompt, the task, engine feedback."""

    model_config = _FROZEN

    role: Literal["system", "user"]
    content: str
    is_error: bool = False
    producer: SoftProducer | None = None


TranscriptItem = Annotated[Message | ModelReply | ToolResult, Field(discriminator="role")]


class ToolSpec(BaseModel):
    """A tool as the model is shown it: name, description and the JSON schema of its arguments."""

    model_config = _FROZEN

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Transcript(Sequence[Message | ModelReply | ToolResult]):
    """A read-only view of the engine's transcript, handed to models without copying it."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Message | ModelReply | ToolResult]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> Message | ModelReply | ToolResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message | ModelReply | ToolResult]: ...
    def __getitem__(
        self, index: int | slice
    ) -> Message | ModelReply | ToolResult | list[Message | ModelReply | ToolResult]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message | ModelReply | ToolResult]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"Transcript({len(self._items)} items)"
