"""``FallbackChain``: models tried in order, each behind its own circuit breaker.

One ``ask`` repeats these steps until a model answers or none is left:

1. choose: the first model, in chain order, whose breaker admits a call and whose back-off has run
   out; when every admitted model is still backing off, wait on the engine's clock for the one
   whose back-off ends first; when no model is admitted, give up;
2. ask it: its reply, checked to be a ``ModelReply`` (a context overflow, Ctrl-C and the run's
   own cancellation pass through; anything else it raises is its failure);
3. classify the failure: ``fatal`` when asking again cannot help (credentials refused, no such
   model, any 4xx but 408, 409, 425 and 429, a spent script), ``transient`` otherwise;
4. decide: a fatal failure opens the model's breaker at once; a transient one counts on it and
   sets the model's back-off. The next choice moves on to another model at once, or waits out the
   back-off before asking the same model again. A model whose breaker opened is not asked again
   within this ``ask``;
5. give up: ``FallbackExhausted`` naming each model's last failure, and the variable to set when a
   key was refused.

The back-off is the server's ``Retry-After`` when it sent one, else ``backoff * 2**(n-1)`` seconds
after the n-th failure in a row, at most ``max_wait``, cut by a random part of up to a half
(jitter, from ``rng``). No single wait is longer than ``max_wait`` (60 s by default): a model that
asks for more is not asked again within this ``ask``. With the default breaker a model is asked at
most 3 times in a row, so it waits at most twice.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._cancel import task_cancelling
from loopnb.engine._clock import Clock, SystemClock
from loopnb.engine._errors import (
    FallbackExhausted,
    ModelAuthError,
    ModelContextOverflow,
    ModelUnavailable,
    exception_text,
)
from loopnb.engine._events import ModelFailed, ModelReplied
from loopnb.engine._messages import ModelReply, ToolSpec, Transcript, reply_problem
from loopnb.engine._state import RunState
from loopnb.engine.models._protocol import Model
from loopnb.engine.models._scripted import distinct_ids, with_call_ids

Severity = Literal["fatal", "transient"]

_RETRYABLE_4XX = frozenset({408, 409, 425, 429})
"""Client errors that another try may get past: a timeout, a conflict, too early, rate limited."""


def classify(exc: BaseException) -> Severity:
    """``fatal`` when asking the same model again cannot help, else ``transient``.

    Fatal: refused credentials (401/403), no such model or wrong ``base_url`` (404), any other 4xx
    but 408, 409, 425 and 429 (an invalid model name: the same request is refused again), and a
    failure whose ``retry_after`` is infinite (a spent script).
    Transient: 429, 5xx, connection failures, timeouts, unreadable replies, a model's own exception.
    """
    if isinstance(exc, ModelAuthError) or _retry_after(exc) == math.inf:
        return "fatal"
    status = _status(exc)
    if status is not None and 400 <= status < 500 and status not in _RETRYABLE_4XX:
        return "fatal"
    return "transient"


@dataclass(eq=False)
class _Link:
    """One model of the chain, its breaker, and when it may be asked again (on the chain's clock)."""

    model: Model
    name: str
    breaker: CircuitBreaker
    ready_at: float = -math.inf


@dataclass(eq=False)
class _Ask:
    """The state of one ``ask``: each model's last failure, the key variable, the models spent."""

    state: RunState | None
    errors: dict[str, str] = field(default_factory=dict)
    env_var: str | None = None
    spent: set[str] = field(default_factory=set)


class FallbackChain:
    """Ask each model in turn; a model whose breaker is open is skipped until its cooldown ends.

    A failure (``ModelUnavailable`` or any other exception from the model, even ``SystemExit`` or a
    ``CancelledError`` of its own) counts on that model's breaker, and the next model is asked at
    once. A model is asked again only after its back-off (see the module docstring); a refused key
    (401/403), a 404 or another 4xx no retry can fix opens its breaker at once. When every breaker
    is open the run ends with ``FallbackExhausted``. A single model given to ``Engine`` is a chain
    of one.

    Args:
        models: the models, in order of preference.
        breaker: the template of each model's breaker (default: 3 failures, 30 s cooldown).
        backoff: seconds to wait before asking a model again after its first failure (doubling
            with each failure in a row).
        max_wait: the longest single wait, in seconds, whether the back-off or a ``Retry-After``.
        rng: where the jitter comes from; pass ``random.Random(seed)`` for repeatable waits.
    """

    def __init__(
        self,
        models: Iterable[Model],
        *,
        breaker: CircuitBreaker | None = None,
        backoff: float = 0.5,
        max_wait: float = 60.0,
        rng: random.Random | None = None,
    ) -> None:
        self.models: list[Model] = list(models)
        if not self.models:
            raise ValueError("FallbackChain needs at least one model; got an empty list")
        for i, model in enumerate(self.models):
            if not callable(getattr(model, "complete", None)) or not hasattr(model, "name"):
                raise TypeError(
                    f"FallbackChain: item {i} ({model!r:.60}) is not a model: expected an object "
                    "with .name and async complete(messages, tools)"
                )
        self.backoff = _seconds("backoff", backoff)
        self.max_wait = _seconds("max_wait", max_wait)
        self.rng = rng if rng is not None else random.Random()
        self.clock: Clock = SystemClock()
        template = breaker or CircuitBreaker(failure_threshold=3, cooldown=30.0)
        self.names: list[str] = []
        for model in self.models:
            name, n = str(model.name), 2
            while name in self.names:
                name, n = f"{model.name}#{n}", n + 1
            self.names.append(name)
        self.breakers: dict[str, CircuitBreaker] = {name: template.spawn(name) for name in self.names}
        self.name = " > ".join(self.names)
        pairs = zip(self.models, self.names, strict=True)
        self._links = [_Link(model, name, self.breakers[name]) for model, name in pairs]

    def bind(self, clock: Clock) -> None:
        """Wait on ``clock``, and put every breaker on it (but those given a clock of their own).

        Back-offs measured on another clock are forgotten.
        """
        if clock is not self.clock:
            for link in self._links:
                link.ready_at = -math.inf
        self.clock = clock
        for breaker in self.breakers.values():
            if not breaker.own_clock:
                breaker.clock = clock

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        """Use the chain as a plain model (outside an engine, no events)."""
        reply, _ = await self.ask(messages, tools, None)
        return reply

    async def ask(
        self, messages: Transcript, tools: Sequence[ToolSpec], state: RunState | None
    ) -> tuple[ModelReply, str]:
        """The first reply any model gives, and the name of the model that gave it."""
        ask = _Ask(state)
        while (link := self._ready(ask) or await self._wait_for_one(ask)) is not None:
            t0 = self.clock.monotonic()
            outcome = await self._call(link, messages, tools)
            if isinstance(outcome, ModelReply):
                reply = self._answered(link, outcome, ask, t0)
                return reply, link.name
            self._failed(link, outcome, ask, t0)
        raise self._exhausted(ask)

    # -- 1. choose ---------------------------------------------------------------------------
    def _ready(self, ask: _Ask) -> _Link | None:
        """The model to ask, when it needs no wait (the usual turn, chosen without an await): the
        first in chain order that is admitted, unless one before it is still backing off (then
        ``_wait_for_one`` chooses, with the same calls on the breakers)."""
        now = self.clock.monotonic()
        for link in self._links:
            if link.name in ask.spent:
                continue
            if link.ready_at > now:
                return None
            if self._admits(link, ask):
                return link
        return None

    async def _wait_for_one(self, ask: _Ask) -> _Link | None:
        """The model to ask next, after waiting out its back-off, when every admitted model has one."""
        while True:
            now = self.clock.monotonic()
            waiting: list[_Link] = []
            for link in self._links:
                if link.name in ask.spent or not self._admits(link, ask):
                    continue
                if link.ready_at <= now:
                    return link
                if link.ready_at - now > self.max_wait:
                    self._too_long(link, link.ready_at - now, ask)
                    continue
                waiting.append(link)
            if not waiting:
                return None
            soonest = min(waiting, key=lambda link: link.ready_at)
            await self.clock.sleep(soonest.ready_at - now)
            if self._admits(soonest, ask):
                return soonest

    def _too_long(self, link: _Link, wait: float, ask: _Ask) -> None:
        """The model asked to wait longer than ``max_wait``: it is spent for this ask."""
        ask.spent.add(link.name)
        note = f"not asked again: it asked for {wait:.3g}s, longer than max_wait={self.max_wait:g}s"
        ask.errors[link.name] = f"{ask.errors.get(link.name, 'backing off')}; {note}"

    def _admits(self, link: _Link, ask: _Ask) -> bool:
        """Does the model's breaker let a call through? A refusal spends the model for this ask."""
        breaker = link.breaker
        if breaker.state == "closed":
            return True
        before = breaker.state
        allowed = breaker.allow()
        if ask.state is not None:
            ask.state.note_breaker(breaker, before, "model")
        if not allowed:
            ask.spent.add(link.name)
            ask.errors.setdefault(link.name, f"breaker open, {breaker.cooldown_left():.3g}s of cooldown left")
        return allowed

    # -- 2. ask it ---------------------------------------------------------------------------
    async def _call(
        self, link: _Link, messages: Transcript, tools: Sequence[ToolSpec]
    ) -> ModelReply | BaseException:
        """The model's reply, or what it raised in its place."""
        try:
            reply: object = await link.model.complete(messages, tools)
        except (ModelContextOverflow, KeyboardInterrupt):
            raise
        except BaseException as exc:  # whatever a model raises is its failure, not the run's
            if isinstance(exc, asyncio.CancelledError) and task_cancelling():
                raise
            return exc
        problem = reply_problem(reply)  # nothing validates a dataclass as it is built
        if problem is not None:
            return ModelUnavailable(f"{link.name} returned {problem}")
        return reply  # type: ignore[return-value]

    def _answered(self, link: _Link, reply: ModelReply, ask: _Ask, t0: float) -> ModelReply:
        """Close the model's breaker, forget its back-off, and report the reply: named after the
        model that gave it, each call with an id of its own (results name the call they answer)."""
        if reply.model != link.name:
            reply = replace(reply, model=link.name)
        if reply.tool_calls and not distinct_ids(reply.tool_calls):
            reply = with_call_ids(reply, f"t{ask.state.turn if ask.state is not None else 0}")
        breaker, state = link.breaker, ask.state
        link.ready_at = -math.inf
        if breaker.failures or breaker.state != "closed":
            before = breaker.state
            breaker.record_success()
            if state is not None:
                state.note_breaker(breaker, before, "model")
        if state is not None and state.observing:
            clock = self.clock
            state.emit(
                ModelReplied(
                    seq=state.next_seq(),
                    run_id=state.run_id,
                    at=clock.time(),
                    turn=state.turn,
                    reply=reply,
                    latency_ms=round((clock.monotonic() - t0) * 1000.0, 3),  # to the microsecond
                )
            )
        return reply

    # -- 3. classify and 4. decide ----------------------------------------------------------------
    def _failed(self, link: _Link, exc: BaseException, ask: _Ask, t0: float) -> None:
        """Count the failure on the model's breaker, set its back-off, and report it."""
        name, breaker = link.name, link.breaker
        text = _failure_text(name, exc)
        ask.errors[name] = text
        env_var = _attribute(exc, "env_var") if isinstance(exc, ModelAuthError) else None
        if isinstance(env_var, str) and env_var:
            ask.env_var = str.__str__(env_var)
        before = breaker.state
        if classify(exc) == "fatal":
            breaker.trip()
        else:
            breaker.record_failure()
            link.ready_at = self.clock.monotonic() + self._delay(link, exc)
        if breaker.state == "open":
            ask.spent.add(name)
        state = ask.state
        if state is None:
            return
        if state.observing:
            state.emit(
                ModelFailed(
                    seq=state.next_seq(),
                    run_id=state.run_id,
                    at=self.clock.time(),
                    turn=state.turn,
                    model=name,
                    error=text,
                    status=_status(exc),
                    latency_ms=round((self.clock.monotonic() - t0) * 1000.0, 3),
                    injected=_injected(exc),
                )
            )
        state.note_breaker(breaker, before, "model")

    def _delay(self, link: _Link, exc: BaseException) -> float:
        """Seconds before the model may be asked again: the server's ``Retry-After`` (as sent: a
        longer one than ``max_wait`` spends the model), else the jittered exponential back-off."""
        hint = _retry_after(exc) if isinstance(exc, ModelUnavailable) else None
        if hint is not None and math.isfinite(hint):
            return hint
        doublings = min(max(link.breaker.failures, 1) - 1, 64)
        delay = min(self.max_wait, self.backoff * 2.0**doublings)
        return delay * (1.0 - 0.5 * self.rng.random())

    # -- 5. give up --------------------------------------------------------------------------
    def _exhausted(self, ask: _Ask) -> FallbackExhausted:
        detail = "; ".join(f"{name}: {text}" for name, text in ask.errors.items())
        message = f"every model in the fallback chain is spent ({detail})"
        env_var = ask.env_var
        if env_var and env_var not in message:
            message += f"; set {env_var} to a valid API key"
        return FallbackExhausted(message, env_var=env_var)

    def __repr__(self) -> str:
        return f"FallbackChain({self.names})"


def _failure_text(name: str, exc: BaseException) -> str:
    """What failed, for events and ``FallbackExhausted``: named once (adapters name themselves)."""
    text = exception_text(exc) or type(exc).__name__
    if not isinstance(exc, ModelUnavailable):
        return f"{type(exc).__name__}: {text}"
    return text[len(name) + 2 :] if text.startswith(f"{name}: ") else text


def _seconds(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"FallbackChain: {what} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


def _attribute(exc: BaseException, name: str) -> object:
    """``exc.<name>``, or ``None`` when it has none or reading it raises (a model's own exception
    may carry anything)."""
    try:
        return getattr(exc, name, None)
    except Exception:
        return None


def _status(exc: BaseException) -> int | None:
    """The HTTP-like status a failure carries: an int from 100 to 599, else ``None``."""
    status = _attribute(exc, "status")
    if type(status) is int and 100 <= status < 600:
        return status
    return None


def _retry_after(exc: BaseException) -> float | None:
    """The seconds a failure asks to wait (``inf``: never ask again), else ``None``."""
    hint = _attribute(exc, "retry_after")
    if (type(hint) is int or type(hint) is float) and hint >= 0:
        try:
            return float(hint)
        except OverflowError:  # an int past a float's range: as good as never
            return math.inf
    return None


def _injected(exc: BaseException) -> str | None:
    """The label of the fault ``loopnb.inject`` raised ``exc`` for (its ``loopnb_injected``)."""
    label = _attribute(exc, "loopnb_injected")
    return str.__str__(label) if isinstance(label, str) else None
