"""The context budget: counting tokens, compacting old turns, and knowing when nothing fits.

Each transcript item is counted once, when it is added, so a run's cost does not grow with its
length. Before a request would overflow, compaction drops the oldest whole turns (never the
system prompt or the task). If the request still cannot fit, or a custom compactor makes no
progress, the run ends with ``ContextExceeded``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loopnb.engine._errors import text_of
from loopnb.engine._messages import Message, ModelReply, ToolResult

Item = Message | ModelReply | ToolResult
TokenCounter = Callable[[str], int]
Compactor = Callable[[list[Item], int], list[Item]]
"""``compactor(tail, target_tokens) -> new_tail``: the tail is everything after the task."""


def approx_tokens(text: str) -> int:
    """About four characters a token: the default counter, with no extra dependency."""
    return (len(text) + 3) // 4


def item_tokens(item: Item, counter: TokenCounter) -> int:
    """Tokens one transcript item costs, with a small overhead per item."""
    if isinstance(item, ModelReply):
        n = counter(item.text or "")
        for call in item.tool_calls:
            n += counter(call.name) + counter(text_of(call.arguments)) + 3
        return n + 4
    return counter(item.content) + 4


class ContextBudget:
    """How many tokens a request may hold, how to count them, and how to compact.

    ``compactor`` replaces the default (drop the oldest whole turns) with your own, for example a
    summariser; it receives the items after the task and a target, and must return fewer tokens.
    """

    def __init__(
        self,
        max_tokens: int,
        *,
        counter: TokenCounter | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise TypeError(f"ContextBudget: max_tokens must be an int, got {max_tokens!r}")
        if max_tokens < 1:
            raise ValueError(f"ContextBudget: max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.counter: TokenCounter = counter or approx_tokens
        self.compactor = compactor

    def count(self, items: Sequence[Item]) -> list[int]:
        return [item_tokens(item, self.counter) for item in items]

    def __repr__(self) -> str:
        return f"ContextBudget(max_tokens={self.max_tokens})"


def drop_oldest_turns(tail: list[Item], tokens: list[int], target: int) -> int:
    """How many leading tail items to drop (whole turns) to get the tail's total under ``target``.

    A turn starts at a ``ModelReply``; its tool results and feedback follow it. The latest turn is
    never dropped: the model must see what its last request produced, or it would only ask again.
    """
    last = max((i for i, item in enumerate(tail) if isinstance(item, ModelReply)), default=0)
    total = sum(tokens)
    cut = 0
    while total > target and cut < last:
        total -= tokens[cut]
        cut += 1
        while cut < last and not isinstance(tail[cut], ModelReply):
            total -= tokens[cut]
            cut += 1
    return cut
