"""``AnthropicModel``: Claude through the official ``anthropic`` client's Messages API.

The ``anthropic`` package is imported when a model is built, never when loopnb is imported
(extra ``anthropic``: ``pip install "loopnb[anthropic]"``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from loopnb.engine._errors import ModelUnavailable
from loopnb.engine._messages import (
    Message,
    ModelReply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Transcript,
    Usage,
)
from loopnb.engine.models._failures import sent, watched_http_client
from loopnb.engine.models._remote import (
    NOTE_PREFIX,
    PerLoop,
    check_base_url,
    check_model,
    check_timeout,
    default_name,
    error_detail,
    field,
    import_client,
    read_reply,
    request_options,
    resolve_key,
    snippet,
    token_count,
    unique_ids,
)

ENV_KEY = "ANTHROPIC_API_KEY"
ENV_BASE_URL = "ANTHROPIC_BASE_URL"
_ROOT = ", and that base_url is the server root: the client adds /v1/messages"

_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class AnthropicModel:
    """Claude through the Messages API: ``AnthropicModel("claude-haiku-4-5")``.

    **How a soft error reaches the model.** Natively: a ``ToolResult`` becomes a ``tool_result``
    block with ``is_error: true`` and the result's text verbatim as its content. The results of
    one turn's calls travel together in one user message. A recovery note rides beside the
    result as a second text block of the same ``tool_result``, ``"Note: ..."``.

    **The transcript.** Leading system messages become the ``system`` prompt; a system message
    later in the run (engine feedback) travels as user text, since the API has no other place
    for it. Consecutive items of one role merge into one message, as the API expects.

    **The key.** ``api_key``, else ``$ANTHROPIC_API_KEY``. With a ``base_url`` (or
    ``$ANTHROPIC_BASE_URL``) and no key, the placeholder ``"no-key"`` is sent. Otherwise
    construction fails with a ``ModelConfigError`` naming the variable. The key never appears in
    ``repr``, error texts or replies.

    **Failures.** As ``OpenAIChatModel``: ``max_retries=0``; connection errors, timeouts, 5xx
    (529 overloaded included), 429 and other 4xx raise ``ModelUnavailable``; 413 or a 4xx saying
    the prompt is too long raise ``ModelContextOverflow``; 401/403 raise ``ModelAuthError``
    naming ``ANTHROPIC_API_KEY``; the text and ``reason`` are decided as for ``OpenAIChatModel``.

    Args:
        model: the model name (``"claude-haiku-4-5"``).
        base_url: the API root (the client appends ``/v1/messages``).
        api_key: the key; see above.
        max_tokens: the most tokens one reply may use.
        timeout: seconds to wait for one reply (60 by default; ``None`` waits without limit).
        name: the name in events and recordings; ``anthropic:<model>`` (``@host:port`` with a
            ``base_url``) by default.
        client: a ready ``anthropic.AsyncAnthropic`` to use instead.
        **extra: passed to every ``messages.create`` call (``temperature=0``, ...).
    """

    env_var = ENV_KEY

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        timeout: float | None = 60.0,
        name: str | None = None,
        client: Any = None,
        **extra: Any,
    ) -> None:
        self._anthropic = import_client("anthropic", extra="anthropic", adapter="AnthropicModel")
        self.model = check_model(model, adapter="AnthropicModel")
        self.base_url = check_base_url(
            base_url or os.environ.get(ENV_BASE_URL), adapter="AnthropicModel", env_var=ENV_BASE_URL
        )
        self.max_tokens = max_tokens
        self.timeout = check_timeout(timeout, adapter="AnthropicModel")
        self.name = name or default_name("anthropic", model, self.base_url)
        self._extra = request_options(
            self._anthropic, "resources.AsyncMessages.create", extra, adapter=type(self).__name__
        )
        if client is not None:
            self._key: str | None = None
            self._clients: PerLoop[Any] | None = None
            self._client = client
        else:
            self._key = resolve_key(
                api_key, env_var=ENV_KEY, base_url=self.base_url, adapter="AnthropicModel"
            )
            self._clients = PerLoop(self._new_client, _close)
            self._client = None

    def _new_client(self) -> Any:
        return self._anthropic.AsyncAnthropic(
            api_key=self._key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,
            http_client=watched_http_client(self._anthropic),
        )

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        request: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            **self._extra,
            "model": self.model,
            **to_anthropic_request(messages),
        }
        if tools:
            request["tools"] = to_anthropic_tools(tools)
        client = self._client if self._clients is None else await self._clients.get()
        response = await sent(
            client.messages.create(**request),
            api=self._anthropic,
            who=self.name,
            env_var=ENV_KEY,
            key=self._key,
            timeout=self.timeout,
            model=self.model,
            root=_ROOT,
        )
        return read_reply(self._reply, response, who=self.name, key=self._key)

    def _reply(self, response: Any) -> ModelReply:
        if field(response, "type") == "error" or field(response, "error") is not None:
            error = field(response, "error")
            detail = error_detail({"error": error}, snippet(error))
            raise ModelUnavailable(f"{self.name}: the server answered with an error: {detail}")
        content = field(response, "content")
        if not hasattr(response, "content") and not isinstance(response, dict):
            raise ModelUnavailable(f"{self.name}: the reply is not a message: {snippet(response)}")
        if not isinstance(content, list | tuple):
            content = () if content is None else (content,)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            kind = field(block, "type")
            if kind == "text" and isinstance(field(block, "text"), str):
                texts.append(field(block, "text"))
            elif kind == "tool_use":
                calls.append(_tool_call(block))
        usage = field(response, "usage")
        return ModelReply(
            text="\n".join(texts) if texts or not calls else None,
            tool_calls=tuple(unique_ids(calls)),
            model=self.name,
            usage=None if usage is None else _usage(usage),
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"AnthropicModel({self.model!r}{where}, name={self.name!r})"


def _usage(usage: Any) -> Usage:
    # Cached prompt tokens are reported apart from the rest; the request read them all.
    read = sum(
        token_count(field(usage, name))
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(input_tokens=read, output_tokens=token_count(field(usage, "output_tokens")))


def _tool_call(block: Any) -> ToolCall:
    """A ``tool_use`` block as a ``ToolCall``; a missing name or an input that is not an object
    becomes a call the dispatcher answers softly."""
    name, raw, block_id = field(block, "name"), field(block, "input"), field(block, "id")
    if isinstance(raw, dict):
        arguments: dict[str, Any] | str = raw
    elif raw is None:
        arguments = {}
    else:
        arguments = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    return ToolCall(
        name if isinstance(name, str) else "",
        arguments,
        id=block_id if isinstance(block_id, str) else "",
    )


def _block_id(call_id: str) -> str:
    """An id the API accepts (``[A-Za-z0-9_-]+``); the same id always maps to the same one."""
    return _BAD_ID_CHARS.sub("_", call_id) or "call"


def to_anthropic_request(items: Iterable[Message | ModelReply | ToolResult]) -> dict[str, Any]:
    """The transcript as ``system`` and ``messages``: exactly what the model will read."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})

    for item in items:
        if isinstance(item, Message):
            if item.role == "system" and not turns:
                system.append(item.content)
            else:
                add("user", {"type": "text", "text": item.content})
        elif isinstance(item, ModelReply):
            if item.text or not item.tool_calls:
                # The API refuses an empty text block; an empty final reply still needs a turn.
                add("assistant", {"type": "text", "text": item.text or "(empty reply)"})
            for call in item.tool_calls:
                arguments = call.arguments
                add(
                    "assistant",
                    {
                        "type": "tool_use",
                        "id": _block_id(call.id),
                        "name": call.name,
                        # The API takes an object; garbage arguments travel inside one.
                        "input": arguments if isinstance(arguments, dict) else {"raw": arguments},
                    },
                )
        else:
            add("user", _tool_result(item))
    request: dict[str, Any] = {"messages": turns}
    if system:
        request["system"] = "\n\n".join(system)
    return request


def _tool_result(result: ToolResult) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _block_id(result.call_id)}
    if result.content:
        block["content"] = result.content  # the API refuses an empty text
    if result.note:
        block["content"] = [
            {"type": "text", "text": result.content},
            {"type": "text", "text": NOTE_PREFIX + result.note},
        ]
    if result.is_error:
        block["is_error"] = True
    return block


def to_anthropic_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """The advertised tools in the Messages API's shape."""
    wire = []
    for spec in tools:
        tool: dict[str, Any] = {"name": spec.name, "input_schema": spec.parameters}
        if spec.description:
            tool["description"] = spec.description
        wire.append(tool)
    return wire


async def _close(client: Any) -> None:
    await client.close()
