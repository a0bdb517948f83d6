"""The ``Model`` protocol: what the engine asks of a brain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from loopnb.engine._messages import ModelReply, ToolSpec, Transcript


@runtime_checkable
class Model(Protocol):
    """A model answers a transcript with a reply.

    ``complete`` receives a read-only view of the transcript (do not keep it past the call) and
    the tools advertised this run. It returns a ``ModelReply``; when it cannot answer (connection
    refused, 5xx, 429, timeout) it raises ``ModelUnavailable`` so breakers and the fallback chain
    can act. Anything else it raises is treated the same way, with the exception's text.
    """

    name: str

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply: ...
