"""Fitting a run's transcript to its context budget: per-item token counts and compaction.

``Compaction`` is a part of ``RunLoop`` (a mixin), kept apart because it is one concern: it reads
the run's state and engine and owns ``tokens`` and ``head``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopnb.engine._context import Item, approx_tokens, drop_oldest_turns, item_tokens
from loopnb.engine._errors import ContextExceeded, ModelContextOverflow, exception_text
from loopnb.engine._events import ContextCompacted
from loopnb.engine._messages import Message, ModelReply, ToolResult, Transcript
from loopnb.engine._state import RunState

if TYPE_CHECKING:
    from loopnb.engine._engine import Engine


class Compaction:
    """The context-fitting half of a run; ``RunLoop`` sets these attributes."""

    engine: Engine
    state: RunState
    transcript: Transcript
    tokens: list[int] | None  # per-item token counts, kept only with a budget
    head: int  # items never compacted: the system prompt and the task

    def _append(self, item: Message | ModelReply | ToolResult) -> None:
        self.state.messages.append(item)
        if self.tokens is not None:
            counter = self.engine.context.counter if self.engine.context else None
            self.tokens.append(item_tokens(item, counter or approx_tokens))

    async def _ask_after_overflow(
        self, overflow: ModelContextOverflow | None = None
    ) -> tuple[ModelReply, str]:
        """The model's server refused the request as too long: compact harder and ask again.

        When compaction cannot shrink the request any further, ``ContextExceeded`` says what the
        server refused (``overflow``, the latest refusal) and what compaction tried.
        """
        s, e = self.state, self.engine
        sizes = [sum(self._tokens())]  # the request's size by loopnb's count, after each compaction
        while True:
            try:
                self._fit(max(0, sizes[-1] - 1), forced=True)
            except ContextExceeded as exc:
                raise ContextExceeded(_overflow_message(overflow, sizes, exc.message)) from exc
            sizes.append(sum(self._tokens()))
            try:
                return await e.chain.ask(self.transcript, e.specs, s)
            except ModelContextOverflow as again:
                overflow = again

    def _tokens(self) -> list[int]:
        if self.tokens is None:
            budget = self.engine.context
            counter = budget.counter if budget else approx_tokens
            self.tokens = [item_tokens(i, counter) for i in self.state.messages]
        return self.tokens

    def _fit(self, target: int, *, forced: bool = False) -> None:
        """Compact until the transcript fits ``target`` tokens (the budget), or raise ``ContextExceeded``."""
        s = self.state
        tokens = self._tokens()
        total = sum(tokens)
        if total <= target and not forced:
            return
        head_tokens = sum(tokens[: self.head])
        tail, tail_tokens = s.messages[self.head :], tokens[self.head :]
        need = "" if forced else f"the request needs {total} tokens, the budget is {target}, and "
        new_tail, new_tokens = self._compacted(tail, tail_tokens, target - head_tokens, need)
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

    def _compacted(
        self, tail: list[Item], tail_tokens: list[int], room: int, need: str
    ) -> tuple[list[Item], list[int]]:
        """The tail (everything after the task) compacted toward ``room`` tokens, and its counts.

        The budget's compactor compacts it, else the oldest whole turns are dropped. The no-progress
        guard: ``ContextExceeded`` when compaction cannot shrink the tail (the compactor raised or
        gave back no fewer tokens; no turn is left to drop, which ``need`` may say more of).
        """
        budget = self.engine.context
        if budget is not None and budget.compactor is not None:
            try:
                new_tail = list(budget.compactor(list(tail), room))
            except Exception as exc:
                raise ContextExceeded(
                    f"the compactor raised {type(exc).__name__}: {exception_text(exc)}"
                ) from exc
            new_tokens = budget.count(new_tail)
            if sum(new_tokens) >= sum(tail_tokens):
                raise ContextExceeded(
                    f"compaction made no progress ({sum(tail_tokens)} -> {sum(new_tokens)} tokens)"
                )
            return new_tail, new_tokens
        cut = drop_oldest_turns(tail, tail_tokens, room)
        if cut == 0:
            raise ContextExceeded(need + _NOTHING_TO_DROP)
        return tail[cut:], tail_tokens[cut:]


_NOTHING_TO_DROP = (
    "compaction has nothing left to drop (the system prompt, the task and the latest turn are kept)"
)


def _overflow_message(overflow: ModelContextOverflow | None, sizes: list[int], why: str) -> str:
    """Why a request the server refused as too long cannot be sent: the refusal, the sizes
    compaction brought the request to (each refused in turn), and why it stopped."""
    refused = "the model's server refused the request's size"
    if overflow is not None:
        refused += f" ({exception_text(overflow)})"
    counted = " -> ".join(str(n) for n in sizes)
    if len(sizes) == 1:
        return f"{refused}; the request is {counted} tokens by loopnb's count, and {why}"
    times, again = ("once", "again") if len(sizes) == 2 else (f"{len(sizes) - 1} times", "each time")
    return (
        f"{refused}; compaction shrank the request {times} ({counted} tokens by loopnb's count), "
        f"the server refused it {again}, and then {why}"
    )
