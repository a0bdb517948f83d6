"""The columns of the ``turns`` and ``events`` frames: the one place they are defined.

``TurnRow`` and ``EventRow`` are the schema. Each field's annotation fixes its pandas dtype
(``dtypes()`` derives it, so a column and its documentation cannot drift apart) and its
description says what it holds. ``TURN_SCHEMA`` and ``EVENT_SCHEMA`` are their published JSON
schemas. Column names are a public contract: never rename one silently.

Dtypes, from the annotation:

========================  ============================================================
annotation                pandas dtype
========================  ============================================================
``Literal[...]``          ``category`` with every allowed value declared, in that order
``int`` / ``int | None``  ``Int64`` (nullable)
``float``                 ``Float64`` (nullable)
``bool``                  ``bool``; ``bool | None`` is ``boolean`` (nullable)
``str`` / ``str | None``  ``string`` (nullable, ``pd.NA`` for missing)
``AwareDatetime``         ``datetime64[us, UTC]``
========================  ============================================================

The published schemas carry each column's dtype as ``x-pandas-dtype``. Reading the frames:

- Missing values: pandas shows a missing category as ``NaN`` and a missing text, number or
  flag as ``<NA>``; ``isna()`` / ``notna()`` treat both alike. Filter whole columns with ``eq``
  or ``isin`` (``turns[turns.producer.eq("timeout")]``): a single missing text is ``pd.NA``,
  and ``if value == "x"`` raises on it.
- ``tools`` is one string per turn, the names joined by ``", "``; one row per call, to filter
  or group by tool: ``turns.assign(tool=turns.tools.str.split(", ")).explode("tool")``.
- ``breaker_states`` is a JSON object per turn; one column per breaker, on the turns' index:
  ``states = turns.breaker_states.dropna().map(json.loads)`` then
  ``pd.DataFrame(states.tolist(), index=states.index)``.
- ``error_text`` joins a turn's error texts with newlines, and one text may itself span lines
  (invalid arguments do): ``n_errors`` counts the calls that failed, and the ``events`` frame has
  each text the model read on its own ``soft_error_returned`` row.

This module imports no pandas: the live view builds rows without it.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from loopnb.engine.errors import Channel, Producer
from loopnb.engine.events import BreakerState

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_KINDS",
    "EVENT_SCHEMA",
    "TURN_COLUMNS",
    "TURN_SCHEMA",
    "EventKind",
    "EventRow",
    "TurnRow",
    "dtypes",
]

EventKind = Literal[
    "run_started",
    "turn_started",
    "model_replied",
    "model_failed",
    "tool_dispatched",
    "recovery_decided",
    "breaker_transitioned",
    "detector_fired",
    "completion_rejected",
    "context_compacted",
    "soft_error_returned",
    "hard_error_raised",
    "turn_finished",
    "run_finished",
]
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)


def _publish_dtypes(schema: dict[str, Any], row_model: type[BaseModel]) -> None:
    """Put each column's pandas dtype into the JSON schema, beside its description."""
    for name, spec in dtypes(row_model).items():
        schema["properties"][name]["x-pandas-dtype"] = spec if isinstance(spec, str) else spec[0]


_ROW = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_publish_dtypes)


class TurnRow(BaseModel):
    """One turn: one model request and the dispatch of all its tool calls."""

    model_config = _ROW

    run_id: str = Field(description="The run this turn belongs to.")
    turn: int = Field(description="1-based turn number within the run.")
    seq: int = Field(description="Sequence number of the turn's TurnFinished event in its run.")
    channel: Channel = Field(
        description="ok, soft (the model read an error) or hard (the run ended on this turn)."
    )
    producer: Producer | None = Field(
        description="Which row of the channel table failed: the first non-ok producer of the "
        "turn's calls, or the LoopError variant on the hard row; missing when ok."
    )
    dropped: bool = Field(
        description="True when the turn never reached (or was discarded from) the scratchpad: "
        "the hard turn, and every turn of a run that ended with ContextExceeded."
    )
    tools: str | None = Field(
        description="Names of the tools the model called this turn, in call order, "
        "joined by ', '; missing when it called none."
    )
    n_calls: int = Field(description="Number of tool calls the model made this turn.")
    n_errors: int = Field(description="Number of those calls whose result was an error.")
    error_text: str | None = Field(
        description="Exactly what the model read as errors this turn: the error results in call "
        "order, then the engine's feedback, joined by newlines (one text may span several lines; "
        "the events' soft_error_returned rows hold them one by one); on the hard row, the "
        "LoopError's message; missing when the model read no error."
    )
    notes: str | None = Field(
        description="Recovery notes that rode beside the results (never merged into them)."
    )
    reply_text: str | None = Field(description="The text of the model's reply, if any.")
    recovery_attempts: int = Field(
        description="The most recovery retries any one call of this turn was granted, against the "
        "ceiling of 5 (0 when none); each call's retries are in the events' recovery_decided rows."
    )
    breaker_states: str | None = Field(
        description="Every breaker's state as the turn ended, as a JSON object "
        '{"name": "closed" | "open" | "half_open"}; missing when there are no breakers.'
    )
    breakers_open: int = Field(description="How many of those breakers were not closed.")
    model: str | None = Field(description="The model that answered this turn.")
    latency_ms: float = Field(description="Wall time of the whole turn, in milliseconds.")
    input_tokens: int | None = Field(description="Input tokens the model reported, if any.")
    output_tokens: int | None = Field(description="Output tokens the model reported, if any.")
    started_at: AwareDatetime = Field(description="When the turn started (UTC).")


Decision = Literal["retry", "skip", "ask_user", "fail"]


class EventRow(BaseModel):
    """One event, flattened. Columns that do not apply to an event's kind are missing."""

    model_config = _ROW

    run_id: str = Field(description="The run the event belongs to.")
    seq: int = Field(description="Sequence number within the run.")
    kind: EventKind = Field(description="The event's type, e.g. tool_dispatched.")
    turn: int | None = Field(description="The turn, for events inside one.")
    at: AwareDatetime = Field(description="When it happened (UTC).")
    tool: str | None = Field(description="The tool concerned (dispatch, recovery, soft error).")
    call_id: str | None = Field(description="The tool call concerned.")
    attempt: int | None = Field(
        description="Dispatch attempt: 0 for the original call, 1..5 for recovery retries; on a "
        "recovery decision, the attempt that failed and is decided on."
    )
    max_attempts: int | None = Field(description="The recovery ceiling the strategy was given.")
    decision: Decision | None = Field(description="What the recovery strategy answered.")
    valid: bool | None = Field(description="False when the strategy answered no real decision.")
    executed: bool | None = Field(description="Whether the tool actually ran for this dispatch.")
    is_error: bool | None = Field(description="Whether the dispatch's result was an error.")
    channel: Channel | None = Field(
        description="Turn's channel (turn_finished), run's outcome (run_finished), soft/hard "
        "for error events."
    )
    producer: Producer | None = Field(description="Producer of the error or turn, if any.")
    text: str | None = Field(
        description="The event's text: the task (run_started), a reply, a result the model read, "
        "a recovery note, a detector's message, a rejection reason, a compaction summary, an error "
        "message, a turn's error_text, the run's output."
    )
    model: str | None = Field(
        description="The model concerned; on run_started, every model of the chain joined by ', '."
    )
    latency_ms: float | None = Field(description="Duration of the request, dispatch or turn.")
    status: int | None = Field(description="HTTP-like status of a model failure, if known.")
    target: str | None = Field(description="The breaker's tool or model.")
    scope: Literal["tool", "model"] | None = Field(description="What the breaker guards.")
    previous: BreakerState | None = Field(description="Breaker state before the transition.")
    state: BreakerState | None = Field(description="Breaker state after the transition.")
    failures: int | None = Field(description="Failures the breaker had counted.")
    cooldown: float | None = Field(description="Seconds an open breaker waits.")
    detector: Literal["loop", "convergence", "max_turns"] | None = Field(
        description="The safety detector that fired."
    )
    action: Literal["refuse", "stop", "warn", "ask_user"] | None = Field(description="What the detector did.")
    count: int | None = Field(
        description="Detector's repeat count; compaction's dropped items; a run's turns."
    )
    delay: float | None = Field(description="Back-off before a recovery retry, in seconds.")
    dropped: bool | None = Field(description="A turn_finished event's own dropped flag.")


TURN_COLUMNS: tuple[str, ...] = tuple(TurnRow.model_fields)
EVENT_COLUMNS: tuple[str, ...] = tuple(EventRow.model_fields)

DtypeSpec = str | tuple[str, tuple[str, ...]]
"""A pandas dtype name, or ``("category", categories)``."""


def dtypes(row_model: type[BaseModel]) -> dict[str, DtypeSpec]:
    """The pandas dtype of every column of ``row_model``, derived from its annotations."""
    return {name: _dtype_of(f.annotation) for name, f in row_model.model_fields.items()}


def _dtype_of(annotation: Any) -> DtypeSpec:
    optional = False
    members = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        members = list(get_args(annotation))
    flat: list[Any] = []
    for member in members:
        if member is type(None):
            optional = True
        elif get_origin(member) in (Union, types.UnionType):
            flat.extend(get_args(member))
        else:
            flat.append(member)
    if all(get_origin(m) is Literal for m in flat):
        return ("category", tuple(v for m in flat for v in get_args(m)))
    if len(flat) != 1:
        raise TypeError(f"no column dtype for {annotation!r}")
    base = flat[0]
    if base is AwareDatetime:
        return "datetime64[us, UTC]"
    if base is bool:
        return "boolean" if optional else "bool"
    if base is int:
        return "Int64"
    if base is float:
        return "Float64"
    if base is str:
        return "string"
    raise TypeError(f"no column dtype for {annotation!r}")


TURN_SCHEMA: dict[str, Any] = TurnRow.model_json_schema()
"""The published JSON schema of a ``turns`` row: every column's description and pandas dtype."""
EVENT_SCHEMA: dict[str, Any] = EventRow.model_json_schema()
"""The published JSON schema of an ``events`` row."""
