"""What the model and the engine say to each other: the transcript's items.

A transcript is a list of three kinds of item, told apart by ``role``:

- ``Message``: text from the system or the user (the system prompt, the task, feedback such as a
  rejected answer or a convergence warning);
- ``ModelReply``: what the model answered (``role="assistant"``): text and/or tool calls;
- ``ToolResult``: one tool call's result (``role="tool"``), ``is_error=True`` for a soft error.

Items are plain slotted dataclasses, as events are: the engine builds several a turn, and pydantic
validates them only where data comes from outside (a recording being loaded, through the one
adapter in ``events``; a model's reply, checked by ``checked_reply``). Treat them as immutable:
the engine never changes one after building it, and neither should an observer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, overload

from loopnb.engine._errors import SoftProducer


@dataclass(slots=True)
class ToolCall:
    """One call the model asks for: ``ToolCall("read_file", {"path": "src/main.rs"})``."""

    name: str
    """The tool's name, as the model spelt it."""
    arguments: dict[str, Any] | str = field(default_factory=dict)
    """The arguments: a dict, or the raw string a model sent when it was not a JSON object (the
    dispatcher answers that softly)."""
    id: str = ""
    """The call's id; the engine fills one in when the model gives none."""


@dataclass(slots=True)
class ToolResult:
    """The result of one tool call, exactly as the model reads it."""

    content: str
    """The text the model reads."""
    _: KW_ONLY
    is_error: bool = False
    """True for a soft error."""
    name: str = ""
    """The tool the call named."""
    call_id: str = ""
    """The id of the call this answers."""
    producer: SoftProducer | None = None
    """Which row of the channel table made this error; ``None`` for a success."""
    note: str | None = None
    """A recovery analysis riding beside the result: never merged into ``content``."""
    attempts: int = 1
    """Calls of the tool made for this result (0 when nothing was executed: a pre-answer, a refusal)."""
    role: Literal["tool"] = "tool"


@dataclass(slots=True)
class Usage:
    """Token usage a model reported for one request."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(slots=True, kw_only=True)
class ModelReply:
    """What the model answered. No tool calls means a final reply whose ``text`` is the output."""

    text: str | None = None
    """The reply's text: the run's output when it is final."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls the model asks for, in order."""
    model: str | None = None
    """The name of the model that answered."""
    usage: Usage | None = None
    """The tokens the request used, when the model reported them."""
    role: Literal["assistant"] = "assistant"

    @property
    def is_final(self) -> bool:
        """True when the model asked for no tool: the run's answer (unless a done-check rejects it)."""
        return not self.tool_calls


@dataclass(slots=True, kw_only=True)
class Message:
    """Text from the system or the user: the system prompt, the task, engine feedback."""

    role: Literal["system", "user"]
    content: str
    is_error: bool = False
    """True for engine feedback the model reads as an error (a rejected answer)."""
    producer: SoftProducer | None = None
    """Which row of the channel table made this feedback; ``None`` for the prompt and the task."""


_MAX_TOKENS = 2**63
"""Token counts are recorded as 64-bit integers: a count from 0 up to (not including) this."""


def reply_problem(reply: object) -> str | None:
    """What is wrong with a model's reply, in words, or ``None`` when it is a well-formed
    ``ModelReply`` (nothing validates a dataclass as it is built, so the engine checks here).

    Well-formed: ``text`` a str or None; ``tool_calls`` a tuple of ``ToolCall`` each with a str
    ``name`` and ``id``; ``model`` a str or None; ``usage`` None or a ``Usage`` of two ints from 0
    to 2**63 - 1; ``role`` ``"assistant"``. A call's arguments may be anything: the dispatcher
    answers those that are not a JSON object softly, as invalid arguments.
    """
    if not isinstance(reply, ModelReply):
        return f"{type(reply).__name__}, not a ModelReply"
    calls: object = reply.tool_calls
    text: object = reply.text
    if (text is None or type(text) is str) and type(calls) is tuple and len(calls) == 1:
        only: object = calls[0]  # the usual reply: one call, checked without a loop
        if type(only) is ToolCall and type(only.name) is str and type(only.id) is str:
            return None
    if text is not None and not isinstance(text, str):
        return f"a ModelReply whose text is {type(text).__name__}, not a str or None"
    if not isinstance(calls, tuple):
        return f"a ModelReply whose tool_calls is {type(calls).__name__}, not a tuple of ToolCall"
    for i, call in enumerate(calls):
        problem = _call_problem(call)
        if problem is not None:
            return f"a ModelReply whose tool_calls[{i}] {problem}"
    model: object = reply.model
    if model is not None and not isinstance(model, str):
        return f"a ModelReply whose model is {type(model).__name__}, not a str or None"
    role: object = reply.role
    if type(role) is not str or role != "assistant":
        return "a ModelReply whose role is not 'assistant'"
    return _usage_problem(reply.usage)


def _call_problem(call: object) -> str | None:
    if not isinstance(call, ToolCall):
        return f"is {type(call).__name__}, not a ToolCall"
    name: object = call.name
    call_id: object = call.id
    if not isinstance(name, str) or not isinstance(call_id, str):
        return "has a name or id that is not a str"
    return None


def _usage_problem(usage: object) -> str | None:
    if usage is None:
        return None
    if not isinstance(usage, Usage):
        return f"a ModelReply whose usage is {type(usage).__name__}, not a Usage or None"
    for side in ("input_tokens", "output_tokens"):
        count: object = getattr(usage, side)
        if type(count) is not int or not 0 <= count < _MAX_TOKENS:
            return f"a ModelReply whose usage.{side} is not an int from 0 to 2**63 - 1"
    return None


TranscriptItem = Message | ModelReply | ToolResult
"""One item of a transcript (told apart by ``role``)."""


@dataclass(slots=True, kw_only=True)
class ToolSpec:
    """A tool as the model is shown it: name, description and the JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


class Transcript(Sequence[TranscriptItem]):
    """A read-only view of the engine's transcript, handed to models without copying it."""

    __slots__ = ("_items",)

    def __init__(self, items: list[TranscriptItem]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> TranscriptItem: ...
    @overload
    def __getitem__(self, index: slice) -> list[TranscriptItem]: ...
    def __getitem__(self, index: int | slice) -> TranscriptItem | list[TranscriptItem]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[TranscriptItem]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"Transcript({len(self._items)} items)"
