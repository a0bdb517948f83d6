"""``OpenAIChatModel``: any OpenAI-compatible chat-completions server, through the official client.

The ``openai`` package is imported when a model is built, never when loopnb is imported
(extra ``openai``: ``pip install "loopnb[openai]"``).
"""

from __future__ import annotations

import json
import os
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

ERROR_PREFIX = "ERROR: "
"""Starts the content of a tool message that carries a soft error (``is_error=True``)."""

ENV_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
_ROOT = ", and that base_url is the API root, which ends in /v1 on most servers"


class OpenAIChatModel:
    """A model behind an OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, ...).

    ``OpenAIChatModel("gpt-4o-mini")`` talks to OpenAI with ``$OPENAI_API_KEY``;
    ``OpenAIChatModel("qwen2.5", base_url="http://127.0.0.1:11434/v1")`` to a local server.

    **How a soft error reaches the model.** Chat completions has no error flag on tool messages,
    so a ``ToolResult`` with ``is_error=True`` travels as a tool message whose content is
    ``"ERROR: "`` followed by the result's text, verbatim (``ERROR_PREFIX``); a success travels
    unprefixed. A recovery note rides beside the result as a second text part of the same tool
    message, ``"Note: ..."``, never merged into the first. Arguments the model sent that were
    not a JSON object go back inside one, ``{"raw": "<what came>"}`` (``wire_arguments``).

    **The key.** ``api_key``, else ``$OPENAI_API_KEY``. With a ``base_url`` (or
    ``$OPENAI_BASE_URL``) and no key, the placeholder ``"no-key"`` is sent: local servers need
    none. Otherwise construction fails with a ``ModelConfigError`` naming the variable. The key
    never appears in ``repr``, error texts or replies.

    **Failures.** The client runs with ``max_retries=0``: loopnb's breakers and fallback chain do
    the retrying. Connection refused or reset, timeouts, 5xx, 429 and other 4xx raise
    ``ModelUnavailable``; a 4xx saying the context is too long raises ``ModelContextOverflow``;
    401/403 raise ``ModelAuthError`` naming ``OPENAI_API_KEY``. No client exception escapes raw:
    the text is loopnb's own, with the server's words quoted, and a failure without a status says
    what it was in ``reason`` (``"refused"``, ``"cut_off"``, ...; see ``_failures``).

    Args:
        model: the model name the server knows (``"gpt-4o-mini"``).
        base_url: the server's API root, ending in ``/v1`` for most servers.
        api_key: the key; see above.
        timeout: seconds to wait for one reply (60 by default; ``None`` waits without limit).
        name: how the model is named in events and recordings; defaults to ``openai:<model>``,
            plus ``@host:port`` when a ``base_url`` is given.
        client: a ready ``openai.AsyncOpenAI`` to use instead (it owns its key and retries).
        **extra: passed to every ``chat.completions.create`` call (``temperature=0``, ...).
    """

    env_var = ENV_KEY

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = 60.0,
        name: str | None = None,
        client: Any = None,
        **extra: Any,
    ) -> None:
        self._openai = import_client("openai", extra="openai", adapter="OpenAIChatModel")
        self.model = check_model(model, adapter="OpenAIChatModel")
        self.base_url = check_base_url(
            base_url or os.environ.get(ENV_BASE_URL), adapter="OpenAIChatModel", env_var=ENV_BASE_URL
        )
        self.timeout = check_timeout(timeout, adapter="OpenAIChatModel")
        self.name = name or default_name("openai", model, self.base_url)
        self._extra = request_options(
            self._openai,
            "resources.chat.AsyncCompletions.create",
            extra,
            adapter=type(self).__name__,
        )
        if client is not None:
            self._key: str | None = None
            self._clients: PerLoop[Any] | None = None
            self._client = client
        else:
            self._key = resolve_key(
                api_key, env_var=ENV_KEY, base_url=self.base_url, adapter="OpenAIChatModel"
            )
            self._clients = PerLoop(self._new_client, _close)
            self._client = None

    def _new_client(self) -> Any:
        return self._openai.AsyncOpenAI(
            api_key=self._key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,
            http_client=watched_http_client(self._openai),
        )

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        request: dict[str, Any] = {
            **self._extra,
            "model": self.model,
            "messages": to_openai_messages(messages),
        }
        if tools:
            request["tools"] = to_openai_tools(tools)
        client = self._client if self._clients is None else await self._clients.get()
        completion = await sent(
            client.chat.completions.create(**request),
            api=self._openai,
            who=self.name,
            env_var=ENV_KEY,
            key=self._key,
            timeout=self.timeout,
            model=self.model,
            root=_ROOT,
        )
        return read_reply(self._reply, completion, who=self.name, key=self._key)

    def _reply(self, completion: Any) -> ModelReply:
        choices = field(completion, "choices")
        if not isinstance(choices, list | tuple) or not choices:
            raise ModelUnavailable(f"{self.name}: {_no_choices(completion)}")
        message = field(choices[0], "message")
        if message is None:
            raise ModelUnavailable(f"{self.name}: the server sent a choice without a message")
        wire_calls = field(message, "tool_calls") or ()
        if not isinstance(wire_calls, list | tuple):
            raise ModelUnavailable(f"{self.name}: tool_calls is not a list: {snippet(wire_calls)}")
        calls = unique_ids([_tool_call(call) for call in wire_calls])
        legacy = field(message, "function_call")
        if not calls and legacy is not None:
            calls.append(_tool_call({"type": "function", "function": legacy}))
        text = _text(field(message, "content"), self.name)
        if text is None and not calls:
            refusal = field(message, "refusal")
            text = refusal if isinstance(refusal, str) else ""
        usage = field(completion, "usage")
        return ModelReply(
            text=text,
            tool_calls=tuple(calls),
            model=self.name,
            usage=None
            if usage is None
            else Usage(
                input_tokens=token_count(field(usage, "prompt_tokens")),
                output_tokens=token_count(field(usage, "completion_tokens")),
            ),
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIChatModel({self.model!r}{where}, name={self.name!r})"


def _no_choices(completion: Any) -> str:
    """Why a reply without choices came, in the server's words when it sent an error."""
    if not hasattr(completion, "choices") and not isinstance(completion, dict):
        return f"the reply is not a chat completion: {snippet(completion)}"
    error = field(completion, "error")
    if error is not None:
        return f"the server answered with an error: {error_detail({'error': error}, snippet(error))}"
    return "the server sent a reply without choices"


def _text(content: Any, who: str) -> str | None:
    """The message's text; a list of content parts is joined (some servers send one)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        parts = [field(part, "text") for part in content]
        return "".join(part for part in parts if isinstance(part, str))
    raise ModelUnavailable(f"{who}: the message content is not text: {snippet(content)}")


def _tool_call(call: Any) -> ToolCall:
    """One wire tool call as a ``ToolCall``, whatever its shape: a call the engine cannot read
    becomes one the dispatcher answers softly (an unknown name, or arguments that are not an
    object), so the model hears about it instead of the run failing."""
    kind = field(call, "type") or "function"
    body = field(call, kind if isinstance(kind, str) else "function")
    if body is None and kind != "function":
        body = field(call, "function")
    name = field(body, "name")
    raw = field(body, "input") if kind == "custom" else field(body, "arguments")
    if isinstance(raw, dict):
        arguments: dict[str, Any] | str = raw
    elif raw is None or isinstance(raw, str):
        arguments = raw if kind == "custom" and raw is not None else parse_arguments(raw)
    else:
        arguments = json.dumps(raw, default=str)
    call_id = field(call, "id")
    return ToolCall(
        name if isinstance(name, str) else "",
        arguments,
        id=str(call_id) if isinstance(call_id, str | int) and call_id != "" else "",
    )


def parse_arguments(raw: str | None) -> dict[str, Any] | str:
    """Tool-call arguments as a dict; anything but a JSON object stays the raw string.

    The dispatcher answers a raw string softly, so the model learns its arguments were garbage.
    An empty string means no arguments.
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def wire_arguments(arguments: dict[str, Any] | str) -> str:
    """Arguments as the JSON object text a server takes back in an assistant message.

    Arguments that were not a JSON object travel inside one, ``{"raw": "<what came>"}``: Ollama
    and vLLM parse the arguments of every earlier call, and refuse the whole request when one
    is not an object, which would end the run over a mistake the model was told about softly.
    """
    if isinstance(arguments, dict):
        return json.dumps(arguments)
    if not isinstance(parse_arguments(arguments), dict):
        return json.dumps({"raw": arguments})
    return arguments if arguments.strip() else "{}"


def to_openai_messages(items: Iterable[Message | ModelReply | ToolResult]) -> list[dict[str, Any]]:
    """The transcript as chat-completions messages: exactly what the model will read."""
    wire: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Message):
            wire.append({"role": item.role, "content": item.content})
        elif isinstance(item, ModelReply):
            wire.append(_assistant(item))
        else:
            wire.append(_tool_message(item))
    return wire


def _assistant(reply: ModelReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or ""}
    if reply.tool_calls:
        message["content"] = reply.text or None
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": wire_arguments(call.arguments)},
            }
            for call in reply.tool_calls
        ]
    return message


def _tool_message(result: ToolResult) -> dict[str, Any]:
    text = ERROR_PREFIX + result.content if result.is_error else result.content
    content: str | list[dict[str, str]] = text
    if result.note:
        content = [
            {"type": "text", "text": text},
            {"type": "text", "text": NOTE_PREFIX + result.note},
        ]
    return {"role": "tool", "tool_call_id": result.call_id, "content": content}


def to_openai_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """The advertised tools as chat-completions function tools."""
    wire = []
    for spec in tools:
        function: dict[str, Any] = {"name": spec.name, "parameters": spec.parameters}
        if spec.description:
            function["description"] = spec.description
        wire.append({"type": "function", "function": function})
    return wire


async def _close(client: Any) -> None:
    await client.close()
