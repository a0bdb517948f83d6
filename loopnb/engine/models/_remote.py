"""What the real adapters share: the lazy client import, the API key, the checks of their options,
the reading of a reply, and the server's own words in an error body (``error_detail``).

How a failure becomes a model failure is ``_failures``'s work. The key never appears in the text of
an error, in a reply, or in a repr.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import importlib
import inspect
import json
import math
import os
import re
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import replace
from types import ModuleType
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from loopnb.engine._errors import ModelUnavailable
from loopnb.engine._messages import ToolCall

NOTE_PREFIX = "Note: "
"""Starts the text that carries a recovery note beside a tool result, apart from its content."""

NO_KEY = "no-key"
"""The placeholder key sent to a server given by ``base_url`` when no key is configured."""

_DETAIL_LIMIT = 300
_RESERVED = frozenset({"model", "messages", "system", "tools", "stream"})

_HTML = re.compile(r"<\s*(!doctype|html|head|body|title|h1|p)\b", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")

T = TypeVar("T")


class ModelConfigError(ValueError):
    """A real model cannot be built as configured: no API key, or a model spec loopnb cannot read.

    Raised by: the adapters' constructors and ``model_from_spec``. Caught by: your code or the CLI,
    before any run starts. The message says what to set.
    """


def import_client(module: str, *, extra: str, adapter: str) -> ModuleType:
    """Import an official client package, or explain which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f'{adapter} needs the {module!r} package: pip install "loopnb[{extra}]"') from exc


def resolve_key(api_key: str | None, *, env_var: str, base_url: str | None, adapter: str) -> str:
    """Pick the key: ``api_key``, else ``$env_var``, else ``NO_KEY`` for a server at ``base_url``.

    Without any of them there is nothing to talk to: a ``ModelConfigError`` names the variable.
    """
    if api_key:
        return api_key
    from_env = os.environ.get(env_var)
    if from_env:
        return from_env
    if base_url:
        return NO_KEY
    raise ModelConfigError(
        f"{adapter} needs an API key: set {env_var} or pass api_key=...; "
        f"for a local server that needs no key, pass base_url=..."
    )


def check_model(model: object, *, adapter: str) -> str:
    """``model`` as a model name: a string with something in it."""
    if not isinstance(model, str) or not model.strip():
        raise ModelConfigError(f"{adapter}: say which model to ask (a model name), got {model!r}")
    return model


def check_base_url(base_url: str | None, *, adapter: str, env_var: str) -> str | None:
    """``base_url`` (blank means none) when it is an http(s) URL with a host; a URL every request
    would fail on is refused now, named without any credentials it holds."""
    if base_url is None or not base_url.strip():
        return None
    base_url = base_url.strip()
    parts = urlsplit(base_url)
    if parts.scheme.lower() in ("http", "https") and parts.hostname:
        return base_url
    shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if parts.netloc else base_url
    raise ModelConfigError(
        f"{adapter}: base_url (or ${env_var}) must be an http:// or https:// URL, got {shown!r}"
    )


def check_timeout(timeout: object, *, adapter: str) -> float | None:
    """``timeout`` as seconds to wait for one reply: a positive number, or ``None`` for no limit."""
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ModelConfigError(
            f"{adapter}: timeout must be a positive number of seconds (None waits without limit), "
            f"got {timeout!r}"
        )
    return float(timeout)


def request_options(api: ModuleType, create: str, options: dict[str, Any], *, adapter: str) -> dict[str, Any]:
    """Extra request options as the client's ``create`` method (its dotted path in ``api``)
    takes them.

    Its own parameters pass as keywords; the rest travel in ``extra_body``, so a server option the
    installed client does not know (``top_k``, ``repetition_penalty``) still reaches the server.
    """
    reserved = sorted(_RESERVED & options.keys())
    if reserved:
        raise ModelConfigError(f"{adapter} sets {', '.join(reserved)} itself; do not pass them")
    target: Any = api
    for part in create.split("."):
        target = getattr(target, part, None)
    try:
        known = set(inspect.signature(target).parameters) if target is not None else None
    except (TypeError, ValueError):
        known = None
    if known is None:
        return dict(options)
    direct = {key: value for key, value in options.items() if key in known}
    body = {key: value for key, value in options.items() if key not in known}
    if body:
        direct["extra_body"] = {**direct.get("extra_body", {}), **body}
    return direct


def server_label(base_url: str | None) -> str:
    """``host:port`` of a base URL, without any credentials it may embed; ``""`` for none."""
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    return f"{host}:{parts.port}" if parts.port else host


def default_name(provider: str, model: str, base_url: str | None) -> str:
    """``provider:model``, plus ``@host:port`` when the model lives at a given ``base_url``."""
    label = server_label(base_url)
    return f"{provider}:{model}@{label}" if label else f"{provider}:{model}"


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``."""
    if secret and secret != NO_KEY and secret in text:
        return text.replace(secret, "***")
    return text


def error_detail(body: object, fallback: str) -> str:
    """The server's own words from an error body: ``{"error": {"message", "code"|"type"}}``, that
    inner object (the ``openai`` client unwraps it), ``{"detail": ...}``, or a page of text or
    HTML (its title or its text); ``fallback`` when the body says nothing."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code") or error.get("type")
        detail = f"{error['message']} [{code}]" if isinstance(code, str) else error["message"]
    elif isinstance(error, dict) and isinstance(error.get("detail"), str):
        detail = error["detail"]
    elif isinstance(error, str) and plain_text(error):
        detail = plain_text(error)
    elif isinstance(error, dict) and error:
        detail = json.dumps(error, default=str)
    else:
        detail = fallback
    return detail if len(detail) <= _DETAIL_LIMIT else detail[: _DETAIL_LIMIT - 3] + "..."


def plain_text(text: str) -> str:
    """``text`` on one line; an HTML page (a proxy's error page) as its title, else its text."""
    if _HTML.search(text):
        title = _TITLE.search(text)
        page = title.group(1) if title and title.group(1).strip() else _SCRIPT.sub(" ", text)
        text = html.unescape(_TAG.sub(" ", page))
    return " ".join(text.split())


def field(obj: object, name: str) -> Any:
    """``obj.name``, or ``obj[name]`` for a dict: the clients leave parts they cannot type as
    plain dicts. ``None`` when absent."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def token_count(value: object) -> int:
    """A token count from a reply's usage; anything but a whole number >= 0 counts as 0 (usage is
    bookkeeping: a server's odd numbers never cost a good reply)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not value.is_integer():
        return 0
    return max(int(value), 0)


def unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """``calls`` with a repeated id made unique (``c1``, ``c1_2``): each result must answer one
    call, and the Messages API refuses a request whose ids repeat. Empty ids stay empty (the
    engine fills them)."""
    seen: set[str] = set()
    out = []
    for call in calls:
        new_id, n = call.id, 1
        while new_id and new_id in seen:
            n += 1
            new_id = f"{call.id}_{n}"
        seen.add(new_id)
        out.append(call if new_id == call.id else replace(call, id=new_id))
    return out


def read_reply(parse: Callable[[Any], T], response: Any, *, who: str, key: str | None) -> T:
    """``parse(response)``; a reply that cannot be read is a model failure whose text never holds
    ``key`` (the text quotes the reply, which may echo it), raised with no link to the first
    failure, whose text is not redacted (see ``_failures.sent``)."""
    try:
        return parse(response)
    except ModelUnavailable as exc:
        failure = ModelUnavailable(redact(str(exc), key), status=exc.status)
    except Exception as exc:  # a reply of a shape no server should send
        what = redact(snippet(str(exc)), key)
        failure = ModelUnavailable(f"{who}: unreadable reply ({type(exc).__name__}: {what})")
    raise failure


def snippet(value: object, limit: int = 120) -> str:
    """What came, for an error text: a clipped string, or the type and a clipped repr."""
    try:
        text = plain_text(value) if isinstance(value, str) else f"{type(value).__name__} {value!r}"
    except Exception:
        text = f"<unprintable {type(value).__name__}>"
    text = " ".join(text.split()) or "(empty)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class PerLoop(Generic[T]):
    """One client per event loop, closed when its loop shuts down.

    An async HTTP connection pool belongs to the loop it was opened on, and ``Engine.run`` runs
    each run on a fresh loop: one pool shared across loops fails on the second run. Each client
    is paired with a parked async generator; ``loop.shutdown_asyncgens()`` (which
    ``Engine.run`` and ``asyncio.run`` call before closing a loop) wakes it to close the
    client, so no connection outlives its loop.
    """

    def __init__(self, factory: Callable[[], T], close: Callable[[T], Awaitable[object]]) -> None:
        self._factory = factory
        self._close = close
        self._entries: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[T, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()

    async def get(self) -> T:
        loop = asyncio.get_running_loop()
        entry = self._entries.get(loop)
        if entry is None:
            client = self._factory()
            keeper = self._closer(client)
            await keeper.__anext__()  # registers it with this loop's async generators
            entry = self._entries[loop] = (client, keeper)
        return entry[0]

    async def _closer(self, client: T) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                await self._close(client)
