"""The columns of the ``turns`` and ``events`` frames: the one place they are defined.

``TURNS`` and ``EVENTS`` are the schema: one declarative list of ``Column``s per frame, each
with its name, its pandas dtype, how it is read and what it holds, side by side (as Inspect
AI's columns are). Everything else is derived from these lists: the frame builders
(``loopnb.record._frames``), the pandas dtypes, the Parquet schema and the published JSON schemas
``TURN_SCHEMA`` and ``EVENT_SCHEMA`` (each column's dtype as ``x-pandas-dtype``). A turns column
is read from a ``Turn`` (``loopnb.engine._turns``: a turn put back together from its events); an
events column from each event class's layout (``loopnb.record._rows``). Column names are a public
contract: never rename one silently.

Dtypes: ``category`` (every allowed value declared, in order), ``Int64`` and ``Float64``
(nullable), ``bool``, ``boolean`` (nullable), ``string`` (``pd.NA`` for missing) and
``datetime64[us, UTC]`` (epoch seconds as read, converted a whole column at once). Reading the frames:

- Missing values show as ``<NA>`` in every column (a category's values are of the nullable
  ``string`` dtype, so a missing producer reads like a missing text, number or flag);
  ``isna()`` / ``notna()`` find them. Filter whole columns with ``eq`` or ``isin``
  (``turns[turns.producer.eq("timeout")]``): iterated, a missing value is ``pd.NA`` and
  ``if value == "x"`` raises on it (one picked out of a category with ``iloc`` is ``NaN``).
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

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from loopnb.engine import Turn
from loopnb.engine._errors import Channel, Producer
from loopnb.engine._events import EVENT_TYPES, BreakerState, DetectorAction, DetectorName

EVENT_KINDS: tuple[str, ...] = tuple(str(cls.__dataclass_fields__["kind"].default) for cls in EVENT_TYPES)
"""Every event kind, in the union's order."""

DtypeSpec = str | tuple[str, tuple[str, ...]]
"""A pandas dtype name, or ``("category", categories)``."""

_TIME = "datetime64[us, UTC]"


def _category(*literals: Any) -> DtypeSpec:
    """The categories of ``Literal`` types (or unions of them), in order."""
    values: list[str] = []
    for lit in literals:
        for arg in get_args(lit):
            values.extend(_category(arg)[1] if get_args(arg) else [arg])
    return ("category", tuple(values))


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a frame: its name, pandas dtype, how it is read, and what it holds."""

    name: str
    dtype: DtypeSpec
    doc: str
    read: Callable[[Turn], Any] | None = None
    """How a turns column is read from a ``Turn`` (events columns are filled per event class)."""

    @property
    def is_time(self) -> bool:
        return self.dtype == _TIME


@dataclass(frozen=True, slots=True)
class Table:
    """A frame's columns, in order."""

    name: str
    title: str
    columns: tuple[Column, ...]
    required: frozenset[str] = frozenset()
    """The columns that always hold a value (every other one may be missing)."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def dtypes(self) -> dict[str, DtypeSpec]:
        """Every column's pandas dtype."""
        return {c.name: c.dtype for c in self.columns}

    def json_schema(self) -> dict[str, Any]:
        """The published JSON schema of one row."""
        properties = {c.name: _json_type(c, c.name in self.required) for c in self.columns}
        return {
            "title": self.title,
            "description": _TITLES[self.name],
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }


_JSON = {"string": "string", "Int64": "integer", "Float64": "number", "bool": "boolean", "boolean": "boolean"}


def _json_type(column: Column, required: bool) -> dict[str, Any]:
    spec = column.dtype
    nullable = spec != "bool" and not required
    if isinstance(spec, tuple):
        schema: dict[str, Any] = {"enum": list(spec[1]), "type": "string"}
        pandas = spec[0]
    elif spec == _TIME:
        schema, pandas = {"type": "string", "format": "date-time"}, spec
    else:
        schema, pandas = {"type": _JSON[spec]}, spec
    if nullable:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return {**schema, "description": column.doc, "x-pandas-dtype": pandas}


# -- turns: read from a Turn --------------------------------------------------------------------


def _tools(t: Turn) -> str | None:
    calls = t.calls
    return ", ".join([c.name for c in calls]) if calls else None


def _reply_text(t: Turn) -> str | None:
    return t.replied.reply.text if t.replied is not None else None


_ALL_CLOSED: dict[tuple[str, ...], str | None] = {}
"""The ``breaker_states`` text of a run whose breakers are all closed, by the run's breakers."""


def breaker_states(run_breakers: tuple[str, ...], not_closed: dict[str, Any]) -> str | None:
    """The ``breaker_states`` text of a turn: every breaker of its run, closed but for those its
    ``TurnFinished`` names (``Turn.breakers``), as JSON; ``None`` when the run has none."""
    if not not_closed:  # the usual turn: one text per run
        text = _ALL_CLOSED.get(run_breakers, "")
        if text == "":
            states = dict.fromkeys(run_breakers, "closed")
            text = _ALL_CLOSED[run_breakers] = json.dumps(states) if states else None
        return text
    states = dict.fromkeys(run_breakers, "closed")
    states.update(not_closed)
    return json.dumps(states) if states else None


def _breaker_states(t: Turn) -> str | None:
    return breaker_states(t.run_breakers, t.finished.breakers)  # type: ignore[union-attr]


def _breakers_open(t: Turn) -> int:
    return len(t.finished.breakers) if t.finished is not None else 0


def _tokens(side: str) -> Callable[[Turn], int | None]:
    def read(t: Turn) -> int | None:
        usage = t.replied.reply.usage if t.replied is not None else None
        return getattr(usage, side) if usage is not None else None

    return read


TURNS = Table(
    "turns",
    "TurnRow",
    (
        Column("run_id", "string", "The run this turn belongs to.", lambda t: t.run_id),
        Column("turn", "Int64", "1-based turn number within the run.", lambda t: t.turn),
        Column(
            "seq",
            "Int64",
            "Sequence number of the turn's TurnFinished event in its run.",
            lambda t: t.finished.seq,  # type: ignore[union-attr]
        ),
        Column(
            "channel",
            _category(Channel),
            "ok, soft (the model read an error) or hard (the run ended on this turn).",
            lambda t: t.finished.channel,  # type: ignore[union-attr]
        ),
        Column(
            "producer",
            _category(Producer),
            "Which row of the channel table failed: the first non-ok producer of the turn's calls, or "
            "the LoopError variant on the hard row; missing when ok.",
            lambda t: t.finished.producer,  # type: ignore[union-attr]
        ),
        Column(
            "dropped",
            "bool",
            "True when the turn never reached (or was discarded from) the scratchpad: the hard turn, "
            "and every turn of a run that ended with ContextExceeded.",
            lambda t: t.finished.dropped,  # type: ignore[union-attr]
        ),
        Column(
            "tools",
            "string",
            "Names of the tools the model called this turn, in call order, joined by ', '; missing "
            "when it called none.",
            _tools,
        ),
        Column("n_calls", "Int64", "Number of tool calls the model made this turn.", lambda t: len(t.calls)),
        Column("n_errors", "Int64", "Number of those calls whose result was an error.", lambda t: t.n_errors),
        Column(
            "error_text",
            "string",
            "Exactly what the model read as errors this turn: the error results in call order, then "
            "the engine's feedback, joined by newlines (one text may span several lines; the events' "
            "soft_error_returned rows hold them one by one); on the hard row, the LoopError's message; "
            "missing when the model read no error.",
            lambda t: t.error_text,
        ),
        Column(
            "notes",
            "string",
            "Recovery notes that rode beside the results (never merged into them).",
            lambda t: t.notes,
        ),
        Column("reply_text", "string", "The text of the model's reply, if any.", _reply_text),
        Column(
            "recovery_attempts",
            "Int64",
            "The most recovery retries any one call of this turn was granted, against the ceiling of 5 "
            "(0 when none); each call's retries are in the events' recovery_decided rows.",
            lambda t: t.recovery_attempts,
        ),
        Column(
            "breaker_states",
            "string",
            "Every breaker's state as the turn ended, as a JSON object "
            '{"name": "closed" | "open" | "half_open"}; missing when there are no breakers.',
            _breaker_states,
        ),
        Column("breakers_open", "Int64", "How many of those breakers were not closed.", _breakers_open),
        Column("model", "string", "The model that answered this turn.", lambda t: t.model),
        Column(
            "latency_ms",
            "Float64",
            "Time the whole turn took on the run's clock, in milliseconds: wall time, or simulated "
            "time for a run on a FakeClock (its run_started settings say clock 'simulated').",
            lambda t: t.latency_ms,
        ),
        Column("input_tokens", "Int64", "Input tokens the model reported, if any.", _tokens("input_tokens")),
        Column(
            "output_tokens", "Int64", "Output tokens the model reported, if any.", _tokens("output_tokens")
        ),
        Column(
            "started_at",
            _TIME,
            "When the turn started (UTC).",
            lambda t: t.started_at if t.started_at is not None else t.finished.at,  # type: ignore[union-attr]
        ),
        Column(
            "source_status",
            "string",
            "What the framework that made the run said of the turn (an OpenTelemetry status code, "
            "pydantic-ai's tool outcome, Inspect's error type, ...), for runs read from another "
            "framework; missing for loopnb's own runs.",
            lambda t: t.finished.source_status,  # type: ignore[union-attr]
        ),
        Column(
            "injected",
            "string",
            "The label of each fault loopnb.inject put into the turn (its model requests', then its "
            'calls\'), e.g. error("disk busy").first(2), joined by "; "; missing when nothing was '
            "injected: a natural failure.",
            lambda t: t.injected,
        ),
    ),
    frozenset(
        {"run_id", "turn", "seq", "channel", "n_calls", "n_errors", "recovery_attempts", "breakers_open"}
    ),
)
"""The ``turns`` frame: one row per turn (one model request and the dispatch of all its calls)."""

# -- events: filled per event class (loopnb.record._rows) ---------------------------------------

Decision = Literal["retry", "skip", "ask_user", "fail"]

EVENTS = Table(
    "events",
    "EventRow",
    (
        Column("run_id", "string", "The run the event belongs to."),
        Column("seq", "Int64", "Sequence number within the run."),
        Column("kind", ("category", EVENT_KINDS), "The event's type, e.g. tool_dispatched."),
        Column("turn", "Int64", "The turn, for events inside one."),
        Column("at", _TIME, "When it happened (UTC)."),
        Column("tool", "string", "The tool concerned (dispatch, recovery, soft error)."),
        Column("call_id", "string", "The tool call concerned."),
        Column(
            "attempt",
            "Int64",
            "Dispatch attempt: 0 for the original call, 1..5 for recovery retries; on a recovery "
            "decision, the attempt that failed and is decided on.",
        ),
        Column("max_attempts", "Int64", "The recovery ceiling the strategy was given."),
        Column("decision", _category(Decision), "What the recovery strategy answered."),
        Column("valid", "boolean", "False when the strategy answered no real decision."),
        Column("executed", "boolean", "Whether the tool actually ran for this dispatch."),
        Column("is_error", "boolean", "Whether the dispatch's result was an error."),
        Column(
            "channel",
            _category(Channel),
            "Turn's channel (turn_finished), run's outcome (run_finished), soft/hard for error events.",
        ),
        Column("producer", _category(Producer), "Producer of the error or turn, if any."),
        Column(
            "text",
            "string",
            "The event's text: the task (run_started), a reply, a result the model read, a recovery "
            "note, a detector's message, a rejection reason, a compaction summary, an error message, "
            "the run's output.",
        ),
        Column(
            "model",
            "string",
            "The model concerned; on run_started, every model of the chain joined by ', '.",
        ),
        Column("latency_ms", "Float64", "Duration of the request, dispatch or turn."),
        Column("status", "Int64", "HTTP-like status of a model failure, if known."),
        Column("target", "string", "The breaker's tool or model."),
        Column("scope", _category(Literal["tool", "model"]), "What the breaker guards."),
        Column("previous", _category(BreakerState), "Breaker state before the transition."),
        Column("state", _category(BreakerState), "Breaker state after the transition."),
        Column("failures", "Int64", "Failures the breaker had counted."),
        Column("cooldown", "Float64", "Seconds an open breaker waits."),
        Column(
            "detector",
            _category(DetectorName),
            "The safety detector that fired.",
        ),
        Column("action", _category(DetectorAction), "What the detector did."),
        Column("count", "Int64", "Detector's repeat count; compaction's dropped items; a run's turns."),
        Column("delay", "Float64", "Back-off before a recovery retry, in seconds."),
        Column("dropped", "boolean", "A turn_finished event's own dropped flag."),
        Column(
            "source_status",
            "string",
            "What the framework that made a foreign run said of the call (tool_dispatched) or the "
            "turn (turn_finished); missing for loopnb's own runs.",
        ),
        Column(
            "injected",
            "string",
            "The label of the fault loopnb.inject made a dispatch (tool_dispatched) or a model request "
            "(model_failed) fail with; missing otherwise.",
        ),
    ),
    frozenset({"run_id", "seq", "kind", "at"}),
)
"""The ``events`` frame: one row per event, flattened; columns that do not apply are missing."""

_TITLES = {
    "turns": "One turn: one model request and the dispatch of all its tool calls.",
    "events": "One event, flattened. Columns that do not apply to an event's kind are missing.",
}

ADDED_LATER: frozenset[str] = frozenset({"source_status", "injected"})
"""Columns a file written before they existed lacks: read back as missing values."""

TURN_COLUMNS: tuple[str, ...] = TURNS.names
EVENT_COLUMNS: tuple[str, ...] = EVENTS.names

TURN_SCHEMA: dict[str, Any] = TURNS.json_schema()
"""The published JSON schema of a ``turns`` row: every column's description and pandas dtype."""
EVENT_SCHEMA: dict[str, Any] = EVENTS.json_schema()
"""The published JSON schema of an ``events`` row."""
