"""One pass over a recorder's store: where each event begins, and each finished turn's row.

``Walk.advance`` reads the store from where it last stopped, so the frames, the rows a listener
gets and the counts each cost only the events that came since. Events are grouped into turns by
``TurnAssembler``'s rules (the same cases, in the same order), and each turn's row (the columns of
``TURNS``, ``started_at`` in epoch seconds) is made once, as the turn finishes, from the values the
store holds:

- a turn without a recovery decision and without a hard error (almost every turn) is read in one
  go: each value is what the ``Turn`` property its column reads gives for such a turn (a test holds
  the two equal on every scenario and on generated streams);
- any other turn is put back together as a ``Turn`` of its events and read by the schema's own
  column readers.
"""

from __future__ import annotations

from array import array
from typing import Any

from loopnb.engine._events import (
    BreakerTransitioned,
    CompletionRejected,
    ContextCompacted,
    DetectorFired,
    HardErrorRaised,
    ModelFailed,
    ModelReplied,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    SoftErrorReturned,
    ToolDispatched,
    TurnFinished,
    TurnStarted,
)
from loopnb.engine._turns import Turn
from loopnb.record._schema import TURN_COLUMNS, TURNS, breaker_states
from loopnb.record._store import BY_KIND, KEPT, LAYOUTS, WIDTH, event_at

_READERS = tuple(c.read for c in TURNS.columns)
_PLAIN_COLUMNS = (
    "run_id",
    "turn",
    "seq",
    "channel",
    "producer",
    "dropped",
    "tools",
    "n_calls",
    "n_errors",
    "error_text",
    "notes",
    "reply_text",
    "recovery_attempts",
    "breaker_states",
    "breakers_open",
    "model",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "started_at",
    "source_status",
    "injected",
)
if _PLAIN_COLUMNS != TURN_COLUMNS:  # the one-go row below must follow the schema's columns
    raise TypeError(f"the turns columns changed: {TURN_COLUMNS}; update Walk's plain row")
WIDTH_OF_ROW = len(TURN_COLUMNS)

_IGNORED = (BreakerTransitioned, DetectorFired, CompletionRejected, ContextCompacted)
"""Events inside a turn that none of its columns reads (``TurnAssembler`` passes them by)."""

# What the walk does with an event of each class, and how many places it takes. From _INSIDE on,
# the event belongs to its run's open turn; from _OPENS on, it opens one when none matches.
_PASS, _START, _INSIDE, _DISPATCH, _REPLY, _SOFT_ERROR, _OTHER, _OPENS, _FINISH = range(9)
_ROLE_OF: dict[type | None, int] = {
    TurnStarted: _START,
    ToolDispatched: _DISPATCH,
    ModelReplied: _REPLY,
    SoftErrorReturned: _SOFT_ERROR,
    RecoveryDecided: _OTHER,
    ModelFailed: _OTHER,
    HardErrorRaised: _OPENS,
    TurnFinished: _FINISH,
}
_ROLES: dict[Any, int] = {cls: _ROLE_OF.get(cls, _PASS) for cls in WIDTH}

_TURN = LAYOUTS[TurnStarted].at("turn")
_AT = LAYOUTS[TurnStarted].at("at")
_RS_BREAKERS = LAYOUTS[RunStarted].at("breakers")
_RF_DISCARDED = LAYOUTS[RunFinished].at("scratchpad_discarded")
_MF_INJECTED = LAYOUTS[ModelFailed].at("injected")
_MR_REPLY = LAYOUTS[ModelReplied].at("reply")
_TD_ATTEMPT = LAYOUTS[ToolDispatched].at("attempt")
_TD_INJECTED = LAYOUTS[ToolDispatched].at("injected")
_SE_TEXT = LAYOUTS[SoftErrorReturned].at("text")
_SE_CALL = LAYOUTS[SoftErrorReturned].at("call_id")
_RUN = LAYOUTS[TurnFinished].at("run_id")
if any(LAYOUTS[cls].at("turn") != _TURN for cls in LAYOUTS if "turn" in LAYOUTS[cls].names):
    raise TypeError("every event inside a turn keeps its turn number in the same place")

# An open turn: [run_id, number, started_at, run_breakers, replied, dispatched, decisions,
# soft_errors, hard, model_injected, whole], the events as their places in the store (lists made
# when a first one comes); ``whole`` when a kept event is among them (read through ``Turn``).
_RUN_ID, _NUMBER, _STARTED, _BREAKERS = 0, 1, 2, 3
_REPLIED, _DISPATCHED, _DECISIONS, _SOFT, _HARD, _INJECTED, _WHOLE = 4, 5, 6, 7, 8, 9, 10


def _opened(run_id: Any, number: Any, started_at: Any, breakers: Any) -> list[Any]:
    return [run_id, number, started_at, breakers, None, None, None, None, None, None, False]


def _appended(turn: list[Any], slot: int, value: Any) -> None:
    if turn[slot] is None:
        turn[slot] = [value]
    else:
        turn[slot].append(value)


class Walk:
    """How far a store has been read, and what it held so far (see the module's docstring)."""

    __slots__ = ("_breakers", "_grouped", "_open", "discarded", "pos", "rows", "starts")

    def __init__(self) -> None:
        self.pos = 0
        """The place of the store where the next event begins."""
        self.starts = array("q")
        """Where each event read so far begins, in order."""
        self.rows: list[Any] = []
        """Each finished turn's row, one after the other (``WIDTH_OF_ROW`` values each)."""
        self.discarded: set[Any] = set()
        """The runs whose scratchpad was discarded whole (their turns are marked dropped)."""
        self._grouped = 0  # the events read into turns so far
        self._open: dict[Any, list[Any]] = {}
        self._breakers: dict[Any, Any] = {}

    @property
    def events(self) -> int:
        return len(self.starts)

    @property
    def turns(self) -> int:
        return len(self.rows) // WIDTH_OF_ROW

    def index(self, store: list[Any], end: int) -> None:
        """Note where each event of ``store`` up to place ``end`` (where an event ends) begins."""
        i, add_start, width = self.pos, self.starts.append, WIDTH
        while i < end:
            add_start(i)
            i += width[store[i]]
        self.pos = i

    def advance(self, store: list[Any], end: int) -> None:
        """Read the events of ``store`` up to place ``end`` into turns, and the finished ones into rows.

        The usual events are handled in this loop itself, with what it reads bound to local names
        (a call or a global lookup per event would cost a third of the frame); the cases are
        ``TurnAssembler.add``'s.
        """
        self.index(store, end)
        begins, self._grouped = self.starts[self._grouped :], len(self.starts)
        open_turns, breakers = self._open, self._breakers
        find, roles = open_turns.get, _ROLES
        run_at, turn_at, number_at, dispatched_at, soft_at = _RUN, _TURN, _NUMBER, _DISPATCHED, _SOFT
        inside, dispatch, reply, soft_error, finish = _INSIDE, _DISPATCH, _REPLY, _SOFT_ERROR, _FINISH
        for i in begins:
            cls = store[i]
            role = roles[cls]
            if role >= inside:
                run_id = store[i + run_at]
                turn = find(run_id)
                if turn is None or turn[number_at] != store[i + turn_at]:
                    if role < _OPENS:
                        continue  # an event outside any turn (a breaker moving before turn 1)
                    turn = self._open_at(store, i)
                if role == dispatch:
                    if turn[dispatched_at] is None:
                        turn[dispatched_at] = [i]
                    else:
                        turn[dispatched_at].append(i)
                elif role == reply:
                    turn[_REPLIED] = i
                elif role == finish:
                    del open_turns[run_id]
                    self._finish(store, turn, i)
                elif role == soft_error:
                    if turn[soft_at] is None:
                        turn[soft_at] = [i]
                    else:
                        turn[soft_at].append(i)
                else:
                    self._attach(store, turn, i, cls, False)
            elif role == _START:
                run_id = store[i + run_at]
                open_turns[run_id] = _opened(
                    run_id, store[i + turn_at], store[i + _AT], breakers.get(run_id, ())
                )
            else:
                self._outside(store, i, cls)

    def _open_at(self, store: list[Any], i: int) -> list[Any]:
        """A turn opened by its ``TurnFinished`` or ``HardErrorRaised`` (no ``TurnStarted`` came)."""
        run_id = store[i + _RUN]
        turn = self._open[run_id] = _opened(run_id, store[i + _TURN], None, self._breakers.get(run_id, ()))
        return turn

    def _attach(self, store: list[Any], turn: list[Any], i: int, cls: type, kept: bool) -> None:
        """The rest of ``TurnAssembler.add``: an event of ``cls`` at ``i``, inside ``turn``."""
        if kept:
            turn[_WHOLE] = True
        if cls is ToolDispatched:
            _appended(turn, _DISPATCHED, i)
        elif cls is ModelReplied:
            turn[_REPLIED] = i
        elif cls is SoftErrorReturned:
            _appended(turn, _SOFT, i)
        elif cls is RecoveryDecided:
            _appended(turn, _DECISIONS, i)
        elif cls is HardErrorRaised:
            turn[_HARD] = i
        elif cls is TurnFinished:
            del self._open[turn[_RUN_ID]]
            self._finish(store, turn, i)
        elif cls is ModelFailed:
            injected = getattr(event_at(store, i), "injected", None) if kept else store[i + _MF_INJECTED]
            if injected is not None:
                _appended(turn, _INJECTED, injected)

    def _finish(self, store: list[Any], turn: list[Any], i: int) -> None:
        """The row of ``turn``, finished by the event at ``i``."""
        whole = turn[_WHOLE] or turn[_DECISIONS] is not None or turn[_HARD] is not None
        self.rows.extend(_whole_row(store, turn, i) if whole else _plain_row(store, turn, i))

    def _outside(self, store: list[Any], i: int, cls: type | None) -> None:
        """An event no turn holds: a run's first or last, one a turn's columns never read, or one
        kept as itself."""
        if cls is RunStarted:
            self._breakers[store[i + _RUN]] = store[i + _RS_BREAKERS]
        elif cls is RunFinished:
            if store[i + _RF_DISCARDED]:
                self.discarded.add(store[i + _RUN])
        elif cls is KEPT:
            self._kept(store, i)

    def _kept(self, store: list[Any], i: int) -> None:
        """An event kept as itself (a subclass): its case found by its ``kind``, as the assembler does."""
        event: Any = event_at(store, i)
        cls = BY_KIND.get(event.kind)
        run_id = event.run_id
        if cls is None:
            raise TypeError(f"not an event: {type(event).__name__} of kind {event.kind!r}")
        if cls is TurnStarted:
            turn = self._open[run_id] = _opened(run_id, event.turn, event.at, self._breakers.get(run_id, ()))
            turn[_WHOLE] = True
        elif cls is RunStarted:
            self._breakers[run_id] = event.breakers
        elif cls is RunFinished:
            if event.scratchpad_discarded:
                self.discarded.add(run_id)
        elif cls not in _IGNORED:
            found = self._open.get(run_id)
            if found is None or found[_NUMBER] != event.turn:
                if cls is not TurnFinished and cls is not HardErrorRaised:
                    return  # an event outside any turn
                found = self._open[run_id] = _opened(run_id, event.turn, None, self._breakers.get(run_id, ()))
            self._attach(store, found, i, cls, True)


_F_SEQ, _F_AT, _F_CHANNEL, _F_PRODUCER, _F_BREAKERS, _F_DROPPED, _F_SOURCE = (
    LAYOUTS[TurnFinished].at(name)
    for name in ("seq", "at", "channel", "producer", "breakers", "dropped", "source_status")
)


def _plain_row(store: list[Any], turn: list[Any], f: int) -> tuple[Any, ...]:
    """The row of a turn without recovery decisions or a hard error, finished by the event at
    ``f``. Each value is what the ``Turn`` property (or schema reader) of its column gives."""
    started, at, not_closed = turn[_STARTED], store[f + _F_AT], store[f + _F_BREAKERS]
    replied = turn[_REPLIED]
    if replied is None:
        text = model = input_tokens = output_tokens = None
        names: Any = ()
    else:
        reply = store[replied + _MR_REPLY]
        if type(reply) is tuple:  # a digest
            text, model, input_tokens, output_tokens, names = reply
        else:  # Turn.calls, _reply_text, Turn.model and _tokens
            text, model, usage, calls = reply.text, reply.model, reply.usage, reply.tool_calls
            if not calls:
                names = ()
            elif len(calls) == 1:  # most replies: no comprehension (a frame of its own)
                names = [calls[0].name]
            else:
                names = [c.name for c in calls]
            if usage is None:
                input_tokens = output_tokens = None
            else:
                input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
    soft = turn[_SOFT]
    if soft is None:
        n_errors, error_text = 0, None
    elif len(soft) == 1:  # Turn.n_errors and Turn.error_text
        n_errors = 0 if store[soft[0] + _SE_CALL] is None else 1
        error_text = "\n".join([store[soft[0] + _SE_TEXT]])
    else:
        n_errors = sum([store[p + _SE_CALL] is not None for p in soft])
        error_text = "\n".join([store[p + _SE_TEXT] for p in soft])
    labels = turn[_INJECTED]
    dispatched = turn[_DISPATCHED]
    if dispatched is None:
        attempts = 0
    elif len(dispatched) == 1:  # Turn.recovery_attempts and the calls' part of Turn.injected
        attempts = store[dispatched[0] + _TD_ATTEMPT]
        label = store[dispatched[0] + _TD_INJECTED]
        if label is not None:
            labels = [*(labels or ()), label]
    else:
        attempts = max([store[p + _TD_ATTEMPT] for p in dispatched])
        called = [x for x in [store[p + _TD_INJECTED] for p in dispatched] if x is not None]
        if called:
            labels = [*(labels or ()), *called]
    return (
        turn[_RUN_ID],
        turn[_NUMBER],
        store[f + _F_SEQ],
        store[f + _F_CHANNEL],
        store[f + _F_PRODUCER],
        store[f + _F_DROPPED],
        ", ".join(names) if names else None,
        len(names),
        n_errors,
        error_text,
        None,  # Turn.notes: only recovery decisions leave notes
        text,
        attempts,
        breaker_states(turn[_BREAKERS], not_closed),
        len(not_closed),
        model,
        None if started is None else round((at - started) * 1000.0, 3),  # Turn.latency_ms
        input_tokens,
        output_tokens,
        at if started is None else started,
        store[f + _F_SOURCE],
        "; ".join(dict.fromkeys(labels)) if labels else None,
    )


def _whole_row(store: list[Any], turn: list[Any], f: int) -> tuple[Any, ...]:
    """The row of any turn: its events put back together as a ``Turn``, read by the schema."""
    whole = Turn(turn[_RUN_ID], turn[_NUMBER], turn[_STARTED])
    whole.run_breakers = turn[_BREAKERS]
    if turn[_REPLIED] is not None:
        whole.replied = event_at(store, turn[_REPLIED])  # type: ignore[assignment]
    whole.dispatched = [event_at(store, p) for p in turn[_DISPATCHED] or ()]  # type: ignore[misc]
    whole.decisions = [event_at(store, p) for p in turn[_DECISIONS] or ()]  # type: ignore[misc]
    whole.soft_errors = [event_at(store, p) for p in turn[_SOFT] or ()]  # type: ignore[misc]
    if turn[_HARD] is not None:
        whole.hard = event_at(store, turn[_HARD])  # type: ignore[assignment]
    whole.finished = event_at(store, f)  # type: ignore[assignment]
    whole.model_injected = list(turn[_INJECTED] or ())
    return tuple([read(whole) for read in _READERS])  # type: ignore[misc]
