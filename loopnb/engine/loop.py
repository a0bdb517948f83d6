"""``Engine``: the agent loop. One async core; ``run``, ``arun`` and ``iter`` all drive it.

A turn is one model request and the dispatch of all its tool calls. The run ends with the
model's final reply (``RunResult``) or with a ``LoopError``. On every hard error ``finalize``
runs: completed turns commit, the in-flight turn is dropped (``ContextExceeded`` discards the
scratchpad whole), the run is reported to observers, and the error carries the salvaged run.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from loopnb.engine.breakers import CircuitBreaker
from loopnb.engine.cancel import CancelToken, wake_task_on_cancel
from loopnb.engine.clock import Clock, SystemClock
from loopnb.engine.context import ContextBudget, approx_tokens, drop_oldest_turns, item_tokens
from loopnb.engine.dispatch import Dispatcher, Hook
from loopnb.engine.errors import (
    ContextExceeded,
    LoopError,
    ModelContextOverflow,
    SoftProducer,
    UserInputRequired,
)
from loopnb.engine.events import (
    BreakerState,
    CompletionRejected,
    ContextCompacted,
    HardErrorRaised,
    RunFinished,
    RunStarted,
    TurnFinished,
    new_soft_error_returned,
    new_turn_finished,
    new_turn_started,
)
from loopnb.engine.messages import Message, ModelReply, ToolResult, ToolSpec, Transcript
from loopnb.engine.models.base import Model
from loopnb.engine.models.fallback import FallbackChain
from loopnb.engine.models.scripted import distinct_ids, with_call_ids
from loopnb.engine.recovery import RecoveryStrategy
from loopnb.engine.result import RunResult
from loopnb.engine.safety import ConvergenceDetector, LoopDetector
from loopnb.engine.state import Observer, RunState
from loopnb.engine.tools import Tool, ToolRegistry

__all__ = ["DoneCheck", "Engine", "RunSteps"]

DoneCheck = Callable[[str], "bool | str | None"]
"""``done(reply_text)``: ``None``/``True`` accepts, ``False`` or a reason string rejects."""

_DEFAULT: Any = object()


class Engine:
    """The agent loop with the soft/hard error principle built in.

    See DESIGN.md for every option. Safety defaults: the loop detector is on, the recovery
    ceiling is 5, model breakers are on inside the (implicit) fallback chain; tool breakers,
    timeouts, convergence, a context budget and ``max_turns`` are opt-in.
    """

    def __init__(
        self,
        model: Model,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        system: str | None = None,
        hooks: Iterable[Hook] = (),
        recovery: RecoveryStrategy | None = None,
        loop_detector: LoopDetector | None = _DEFAULT,
        convergence: ConvergenceDetector | None = None,
        done: DoneCheck | None = None,
        breakers: CircuitBreaker | dict[str, CircuitBreaker] | None = None,
        timeout: float | None = None,
        context: ContextBudget | None = None,
        suggestions: bool = True,
        observers: Iterable[Observer] = (),
        clock: Clock | None = None,
        max_turns: int | None = None,
        advertise: Iterable[str | ToolSpec | Tool] | None = None,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.chain = model if isinstance(model, FallbackChain) else FallbackChain([model])
        self.chain.bind(self.clock)
        self.registry = ToolRegistry(tools)
        self.system = system
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"Engine: timeout must be seconds > 0 or None, got {timeout!r}")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
        ):
            raise ValueError(f"Engine: max_turns must be an int >= 1 or None, got {max_turns!r}")
        if recovery is not None and not callable(getattr(recovery, "decide", None)):
            raise TypeError(
                f"Engine: recovery must have decide(failure, attempt, max_attempts); got {recovery!r}"
            )
        if done is not None and not callable(done):
            raise TypeError(f"Engine: done must be a callable done(reply_text); got {done!r}")
        self.loop_detector = LoopDetector() if loop_detector is _DEFAULT else loop_detector
        self.convergence = convergence
        self.done = done
        self.context = context
        self.max_turns = max_turns
        self.specs = self._advertised(advertise)
        self.tool_breakers = self._tool_breakers(breakers)
        self.dispatcher = Dispatcher(
            self.registry,
            advertised=[s.name for s in self.specs],
            hooks=hooks,
            breakers=self.tool_breakers,
            timeout=None if timeout is None else float(timeout),
            suggestions=suggestions,
            recovery=recovery,
            clock=self.clock,
        )
        self._every_breaker = [*self.tool_breakers.items(), *self.chain.breakers.items()]
        self._observers: list[Observer] = []
        for observer in observers:
            self.subscribe(observer)

    def _advertised(self, advertise: Iterable[str | ToolSpec | Tool] | None) -> list[ToolSpec]:
        if advertise is None:
            return [t.spec for t in self.registry]
        specs: list[ToolSpec] = []
        for item in advertise:
            if isinstance(item, ToolSpec):
                specs.append(item)
            elif isinstance(item, Tool):
                specs.append(item.spec)
            elif isinstance(item, str):
                known = self.registry.get(item)
                specs.append(known.spec if known else ToolSpec(name=item))
            else:
                raise TypeError(f"Engine: advertise takes names or ToolSpecs, got {item!r:.60}")
        return specs

    def _tool_breakers(
        self, breakers: CircuitBreaker | dict[str, CircuitBreaker] | None
    ) -> dict[str, CircuitBreaker]:
        if breakers is None:
            return {}
        if isinstance(breakers, CircuitBreaker):
            return {t.name: breakers.spawn(t.name, self.clock) for t in self.registry}
        if isinstance(breakers, dict):
            out = {}
            for name, breaker in breakers.items():
                if name not in self.registry:
                    raise ValueError(
                        f"Engine: breakers names {name!r}, which is not a tool; tools are "
                        f"{self.registry.names}"
                    )
                out[name] = breaker.spawn(name, self.clock)
            return out
        raise TypeError(
            "Engine: breakers must be a CircuitBreaker (a template for every tool), a dict of "
            f"tool name -> CircuitBreaker, or None; got {breakers!r:.60}"
        )

    @property
    def tools(self) -> list[Tool]:
        return list(self.registry)

    def breaker_states(self) -> dict[str, BreakerState]:
        """Every tool's and model's breaker state, by name."""
        return {name: breaker.state for name, breaker in self._every_breaker}

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Deliver every event of every later run to ``observer``; returns an unsubscribe function."""
        if not callable(observer):
            raise TypeError(f"Engine.subscribe: an observer is a callable taking one event; got {observer!r}")
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    # -- entry points ---------------------------------------------------------------------

    async def arun(
        self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None
    ) -> RunResult:
        """Run until the final reply; a hard failure raises a ``LoopError`` carrying the salvaged run."""
        return await self._new_run(task, cancel, run_id, always_emit=False).complete()

    def run(self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None) -> RunResult:
        """``arun`` for synchronous code; works in a script and inside a running Jupyter loop.

        Ctrl-C (or a kernel interrupt) fires the cancel token: the run ends as ``Cancelled``.
        """
        cancel = cancel or CancelToken()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _run_here(self.arun(task, cancel=cancel, run_id=run_id), cancel)
        return _run_on_thread(lambda: self.arun(task, cancel=cancel, run_id=run_id), cancel)

    def iter(self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None) -> RunSteps:
        """Step through a run a turn at a time: ``for turn in engine.iter(task): ...``."""
        return RunSteps(self._new_run(task, cancel or CancelToken(), run_id, always_emit=True))

    def aiter(
        self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None
    ) -> AsyncIterator[TurnFinished | None]:
        """``async for turn in engine.aiter(task)``: each finished turn, as its event."""
        return self._new_run(task, cancel, run_id, always_emit=True).steps()

    def _new_run(
        self, task: str, cancel: CancelToken | None, run_id: str | None, *, always_emit: bool
    ) -> _Run:
        if not isinstance(task, str):
            raise TypeError(f"Engine.run: task must be a str, got {type(task).__name__}")
        state = RunState(
            run_id=run_id or uuid.uuid4().hex[:12],
            clock=self.clock,
            cancel=cancel or CancelToken(),
            observers=list(self._observers),
            on_detach=self._detach,
            always_emit=always_emit,
        )
        return _Run(self, state, task)

    def _detach(self, observer: Observer) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def __repr__(self) -> str:
        return f"Engine(model={self.chain.name!r}, tools={self.registry.names})"


class _Run:
    """One run of an engine: the turn loop and ``finalize``."""

    def __init__(self, engine: Engine, state: RunState, task: str) -> None:
        self.engine = engine
        self.state = state
        self.task = task
        self.result: RunResult | None = None
        self.error: LoopError | None = None
        self.loop_watch = engine.loop_detector.new_run() if engine.loop_detector else None
        self.convergence = engine.convergence.new_run() if engine.convergence else None
        self.tokens: list[int] | None = None  # per-item token counts, kept only with a budget
        self.head = 0  # items never compacted: the system prompt and the task
        self.models_used: dict[str, None] = {}  # in order of first use
        self.started = False

    async def complete(self) -> RunResult:
        """Every remaining turn, to the end (what ``arun`` does)."""
        release = wake_task_on_cancel(self.state.cancel)
        try:
            if not self.started:
                self._start()
            while self.result is None:
                await self._turn()
        except BaseException as exc:
            self._ended_by(exc)
            raise
        finally:
            release()
        return self.result

    async def steps(self) -> AsyncGenerator[TurnFinished | None, None]:
        """Turn by turn (what ``iter`` and ``aiter`` do). Closing it early cancels the run."""
        try:
            while self.result is None:
                yield await self.turn()
        finally:
            if self.result is None and self.error is None:  # the caller stopped iterating
                self.state.cancel.cancel("the caller stopped the run")
                self._finalize(self._closed_error())

    async def turn(self) -> TurnFinished | None:
        """One turn, with the hard-error handling every driver shares."""
        release = wake_task_on_cancel(self.state.cancel)
        try:
            if not self.started:
                self._start()
            return await self._turn()
        except BaseException as exc:
            self._ended_by(exc)
            raise
        finally:
            release()

    def _ended_by(self, exc: BaseException) -> None:
        """A turn raised: finalise a hard error; an interrupt becomes ``Cancelled`` (raised here)."""
        if isinstance(exc, LoopError):
            self._finalize(exc)
        elif isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
            self.state.cancel.cancel("interrupted (Ctrl-C or kernel interrupt)")
            try:
                self.state.checkpoint()
            except LoopError as err:
                self._finalize(err)
                raise err from None

    def _closed_error(self) -> LoopError:
        try:
            self.state.checkpoint()
        except LoopError as err:
            return err
        raise AssertionError("unreachable: the token was fired")

    def _start(self) -> None:
        self.started = True
        s, e = self.state, self.engine
        if e.system:
            self._append(Message(role="system", content=e.system))
        self._append(Message(role="user", content=self.task))
        self.head = len(s.messages)
        s.committed_messages = self.head
        self.transcript = Transcript(s.messages)  # one read-only view of the list, for every request
        if s.observing:
            s.emit(
                RunStarted(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    task=self.task,
                    system=e.system,
                    models=tuple(e.chain.names),
                    tools=tuple(e.registry.names),
                    advertised=tuple(spec.name for spec in e.specs),
                    settings=self._settings(),
                )
            )

    def _settings(self) -> dict[str, Any]:
        e = self.engine
        return {
            "max_recovery_attempts": 5,
            "recovery": repr(e.dispatcher.recovery) if e.dispatcher.recovery else None,
            "loop_detector": repr(e.loop_detector) if e.loop_detector else None,
            "convergence": repr(e.convergence) if e.convergence else None,
            "tool_breakers": sorted(e.tool_breakers),
            "timeout": e.dispatcher.timeout,
            "max_tokens": e.context.max_tokens if e.context else None,
            "max_turns": e.max_turns,
            "done_check": e.done is not None,
        }

    def _append(self, item: Message | ModelReply | ToolResult) -> None:
        self.state.messages.append(item)
        if self.tokens is not None:
            counter = self.engine.context.counter if self.engine.context else None
            self.tokens.append(item_tokens(item, counter or approx_tokens))

    async def _turn(self) -> TurnFinished | None:
        s, e = self.state, self.engine
        s.turn += 1
        self.turn_model: str | None = None
        self.turn_reply: ModelReply | None = None
        if s.observing:
            self.turn_started, self.turn_t0 = s.clock.time(), s.clock.monotonic()
            s.emit(new_turn_started(s.next_seq(), s.run_id, self.turn_started, s.turn))
        if e.max_turns is not None and s.turn > e.max_turns:
            s.stop("max_turns", f"the run reached max_turns={e.max_turns} without a final reply", s.turn)
        if s.cancel.cancelled:
            s.checkpoint()
        if e.context is not None:
            self._fit(e.context.max_tokens)
        try:
            reply, model = await e.chain.ask(self.transcript, e.specs, s)
        except ModelContextOverflow:
            reply, model = await self._ask_after_overflow()
        calls = reply.tool_calls
        if calls and not distinct_ids(calls):  # results are matched to calls by id
            reply = with_call_ids(reply, f"t{s.turn}")
            calls = reply.tool_calls
        self.turn_model, self.turn_reply = model, reply
        if model not in self.models_used:
            self.models_used[model] = None
        append = s.messages.append if self.tokens is None else self._append
        append(reply)
        results: list[ToolResult] = []
        feedback: list[Message] = []
        if calls:
            dispatch, watch, token = e.dispatcher.dispatch, self.loop_watch, s.cancel
            for call in calls:
                if token.cancelled:
                    s.checkpoint()
                result = dispatch(call, s, watch)
                if not isinstance(result, ToolResult):  # it has to wait: an async tool, a timeout, recovery
                    result = await result
                results.append(result)
                append(result)
            s.tool_results += results
        else:
            feedback = self._judge(reply.text or "")
            for message in feedback:
                self._append(message)
        s.committed_messages = len(s.messages)
        s.committed_results = len(s.tool_results)
        if not s.observing:
            return None
        event = self._report(results, feedback)
        if self.result is not None:
            s.emit(
                RunFinished(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    outcome="ok",
                    turns=s.turn,
                    output=self.result.output,
                    error=None,
                    message=None,
                )
            )
        return event

    def _report(self, results: list[ToolResult], feedback: list[Message]) -> TurnFinished:
        """Report the soft errors the model read this turn, then the turn itself."""
        s = self.state
        producer: SoftProducer | None = None
        errors: list[str] = []
        retries = 0
        for result in results:
            if result.attempts > retries + 1:
                retries = result.attempts - 1
            if result.is_error:
                errors.append(self._soft(result.producer, result.content, result.name, result.call_id))
                producer = producer or result.producer
        for message in feedback:
            if message.is_error:
                errors.append(self._soft(message.producer, message.content, None, None))
                producer = producer or message.producer
        now = s.clock.time()
        event = new_turn_finished(  # positional, in field order (see events.TurnFinished)
            s.next_seq(),  # seq
            s.run_id,  # run_id
            now,  # at
            s.turn,  # turn
            self.turn_started,  # started_at
            (s.clock.monotonic() - self.turn_t0) * 1000.0,  # latency_ms
            "ok" if producer is None else "soft",  # channel
            producer,  # producer
            self.turn_model,  # model
            self.turn_reply,  # reply
            tuple(results),  # results
            tuple(feedback),  # feedback
            retries,  # recovery_attempts
            self.engine.breaker_states(),  # breakers
            False,  # dropped
            "\n".join(errors) or None,  # error_text
        )
        s.emit(event)
        return event

    def _soft(self, producer: SoftProducer | None, text: str, tool: str | None, call_id: str | None) -> str:
        s = self.state
        assert producer is not None
        s.emit(
            new_soft_error_returned(
                s.next_seq(), s.run_id, s.clock.time(), s.turn, producer, text, tool, call_id
            )
        )
        return text

    def _judge(self, text: str) -> list[Message]:
        """A final reply: accept it (the run is done) or reject it and let the model go on."""
        s, e = self.state, self.engine
        reason = _verdict(e.done, text)
        if reason is None:
            self.result = RunResult(
                run_id=s.run_id,
                output=text,
                messages=s.messages,
                tool_results=s.tool_results,
                turns=s.turn,
                models=tuple(self.models_used),
            )
            return []
        if s.observing:
            s.emit(
                CompletionRejected(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    turn=s.turn,
                    reply=text,
                    reason=reason,
                )
            )
        feedback = [
            Message(
                role="user",
                content=f"answer rejected: {reason}",
                is_error=True,
                producer="completion_rejected",
            )
        ]
        if self.convergence is not None:
            signal = self.convergence.observe(text)
            if signal is not None:
                if signal.action == "stop":
                    s.stop("convergence", signal.text, signal.count)
                if signal.action == "ask_user":
                    s.signal("convergence", "ask_user", signal.text, signal.count)
                    raise UserInputRequired(signal.text)
                s.signal("convergence", "warn", signal.text, signal.count)
                feedback.append(
                    Message(role="user", content=signal.text, is_error=True, producer="convergence_warning")
                )
        return feedback

    async def _ask_after_overflow(self) -> tuple[ModelReply, str]:
        """The model's server said the request is too long: compact harder and ask again."""
        s, e = self.state, self.engine
        while True:
            self._fit(max(0, sum(self._tokens()) - 1), forced=True)
            try:
                return await e.chain.ask(self.transcript, e.specs, s)
            except ModelContextOverflow:
                continue

    def _tokens(self) -> list[int]:
        if self.tokens is None:
            budget = self.engine.context
            counter = budget.counter if budget else approx_tokens
            self.tokens = [item_tokens(i, counter) for i in self.state.messages]
        return self.tokens

    def _fit(self, target: int, *, forced: bool = False) -> None:
        """Compact until the transcript fits ``target`` tokens, or raise ``ContextExceeded``."""
        s = self.state
        tokens = self._tokens()
        total = sum(tokens)
        if total <= target and not forced:
            return
        head_tokens = sum(tokens[: self.head])
        tail, tail_tokens = s.messages[self.head :], tokens[self.head :]
        budget = self.engine.context
        if budget is not None and budget.compactor is not None:
            try:
                new_tail = list(budget.compactor(list(tail), target - head_tokens))
            except Exception as exc:
                raise ContextExceeded(f"the compactor raised {type(exc).__name__}: {exc}") from exc
            new_tokens = budget.count(new_tail)
            if sum(new_tokens) >= sum(tail_tokens):
                raise ContextExceeded(
                    f"compaction made no progress ({sum(tail_tokens)} -> {sum(new_tokens)} tokens)"
                )
        else:
            cut = drop_oldest_turns(tail, tail_tokens, target - head_tokens)
            new_tail, new_tokens = tail[cut:], tail_tokens[cut:]
            if cut == 0:
                raise ContextExceeded(
                    f"the request needs {total} tokens, the budget is {target}, and compaction "
                    "has nothing left to drop"
                )
        after = head_tokens + sum(new_tokens)
        if after > target:
            raise ContextExceeded(
                f"the request needs {after} tokens after compaction; the budget is {target} "
                "(the system prompt and the task are never dropped)"
            )
        dropped = len(tail) - len(new_tail)
        s.messages[self.head :] = new_tail
        self.tokens = tokens[: self.head] + list(new_tokens)
        s.committed_messages = len(s.messages)
        if s.observing:
            s.emit(
                ContextCompacted(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    turn=s.turn,
                    tokens_before=total,
                    tokens_after=after,
                    dropped_items=dropped,
                    max_tokens=target,
                )
            )

    def _finalize(self, err: LoopError) -> None:
        """Salvage the run, report the hard ending, attach the run to the error."""
        s = self.state
        self.error = err
        discard = isinstance(err, ContextExceeded)
        keep = self.head if discard else s.committed_messages
        messages = s.messages[:keep]
        results = [] if discard else s.tool_results[: s.committed_results]
        err.run = RunResult(
            run_id=s.run_id,
            output=None,
            messages=messages,
            tool_results=results,
            turns=s.turn,
            models=tuple(self.models_used),
        )
        if not s.observing:
            return
        now = s.clock.time()
        s.emit(
            HardErrorRaised(
                seq=s.next_seq(),
                run_id=s.run_id,
                at=now,
                turn=s.turn,
                producer=err.producer,
                error=type(err).__name__,
                message=err.message,
            )
        )
        if s.turn > 0:
            s.emit(
                TurnFinished(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=now,
                    turn=s.turn,
                    started_at=getattr(self, "turn_started", now),
                    latency_ms=(s.clock.monotonic() - getattr(self, "turn_t0", s.clock.monotonic())) * 1000.0,
                    channel="hard",
                    producer=err.producer,
                    model=getattr(self, "turn_model", None),
                    reply=getattr(self, "turn_reply", None),
                    results=(),
                    feedback=(),
                    recovery_attempts=getattr(err, "attempts", 1) - 1,
                    breakers=self.engine.breaker_states(),
                    dropped=True,
                    error_text=err.message,
                )
            )
        s.emit(
            RunFinished(
                seq=s.next_seq(),
                run_id=s.run_id,
                at=now,
                outcome="hard",
                turns=s.turn,
                output=None,
                error=type(err).__name__,
                message=err.message,
                scratchpad_discarded=discard,
            )
        )


def _verdict(done: DoneCheck | None, text: str) -> str | None:
    """``None`` when the reply is accepted, else the reason it was rejected."""
    if done is None:
        return None
    try:
        verdict = done(text)
    except Exception as exc:
        return f"the completion check raised {type(exc).__name__}: {exc}"
    if verdict is None or verdict is True:
        return None
    if verdict is False:
        return "the answer did not pass the completion check"
    return str(verdict)


def _run_here(coro: Any, cancel: CancelToken) -> RunResult:
    """Drive a run on a private event loop in this thread; Ctrl-C becomes ``Cancelled``."""
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(coro)
        while True:
            try:
                result = loop.run_until_complete(task)
                assert isinstance(result, RunResult)
                return result
            except KeyboardInterrupt:
                if task.done():
                    raise
                cancel.cancel("interrupted (Ctrl-C or kernel interrupt)")
                task.cancel()
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _run_on_thread(make: Callable[[], Any], cancel: CancelToken) -> RunResult:
    """Inside a running loop (Jupyter): run on a worker thread, wait interruptibly."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = _run_here(make(), cancel)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, name="loopnb-run", daemon=True)
    worker.start()
    while worker.is_alive():
        try:
            worker.join()
        except KeyboardInterrupt:
            cancel.cancel("interrupted (Ctrl-C or kernel interrupt)")
    if "error" in box:
        raise box["error"]
    result = box["result"]
    assert isinstance(result, RunResult)
    return result


class RunSteps(Iterator["TurnFinished | None"]):
    """A run you advance a turn at a time (``step()``), e.g. from Pause/Step/Resume controls.

    Each step returns that turn's ``TurnFinished`` event; ``result`` is set once the run ends,
    ``error`` if it ended hard (``step`` then raises it). Runs on its own thread and loop, so it
    works inside Jupyter.
    """

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._agen: AsyncGenerator[TurnFinished | None, None] = run.steps()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="loopnb-steps", daemon=True)
        self._thread.start()
        self.done = False

    @property
    def result(self) -> RunResult | None:
        return self._run.result

    @property
    def error(self) -> LoopError | None:
        return self._run.error

    @property
    def cancel(self) -> CancelToken:
        return self._run.state.cancel

    def step(self) -> TurnFinished | None:
        """Run one turn. Raises ``StopIteration`` when the run is over, ``LoopError`` if it ends hard."""
        if self.done:
            raise StopIteration
        future = asyncio.run_coroutine_threadsafe(_anext(self._agen), self._loop)
        try:
            outcome = future.result()
        except BaseException:
            self._close()
            raise
        if outcome is _END or self._run.result is not None:
            self._close()
            if outcome is _END:
                raise StopIteration
        return outcome  # type: ignore[no-any-return]

    def __next__(self) -> TurnFinished | None:
        return self.step()

    def run_to_end(self) -> RunResult:
        """Finish the run; returns the result or raises the ``LoopError``."""
        for _ in self:
            pass
        if self._run.error is not None:
            raise self._run.error
        assert self._run.result is not None
        return self._run.result

    def close(self) -> None:
        """Stop early: the run ends as ``Cancelled`` (finalised and reported like any other)."""
        if not self.done:
            future = asyncio.run_coroutine_threadsafe(self._agen.aclose(), self._loop)
            try:
                future.result()
            finally:
                self._close()

    def _close(self) -> None:
        self.done = True
        if self._loop.is_closed():
            return
        done = asyncio.run_coroutine_threadsafe(self._loop.shutdown_asyncgens(), self._loop)
        with contextlib.suppress(Exception):
            done.result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


_END: Any = object()


async def _anext(agen: AsyncIterator[Any]) -> Any:
    try:
        return await agen.__anext__()
    except StopAsyncIteration:
        return _END
