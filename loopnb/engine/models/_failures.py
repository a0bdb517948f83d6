"""How a real model's failure reaches the engine: one ``ModelUnavailable`` kind, in loopnb's words.

Every failure of a real adapter is decided here and nowhere else, from what it *is* (the HTTP
status, the exception's class, an ``errno`` on its chain of causes, whether the reply had begun),
never from the wording of the client, its HTTP library or the operating system:

- ``ModelAuthError`` for HTTP 401/403, naming the environment variable that holds the key;
- ``ModelContextOverflow`` for a 413, or a 4xx whose server says the context is too long;
- ``ModelUnavailable`` for everything else: 5xx, 429, other 4xx (a 404 names the URL asked and the
  model), replies the adapter cannot read, and failures without a status, whose ``reason`` says
  what happened: ``refused``, ``reset``, ``unresolved``, ``unreachable``, ``no_reply`` (the server
  closed the connection or broke HTTP before a reply began), ``cut_off`` (it had begun) and
  ``timed_out``. A 429 or 5xx carries the server's ``Retry-After`` in seconds (``retry_after``),
  which the fallback chain waits out before asking that model again.

The text is loopnb's own sentence, followed by the server's own words (its error body's message)
where it sent any: "HTTP 503: the server sent no error message" when it sent none. The key never
appears in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import json
import math
import re
import socket
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from loopnb.engine._errors import FailureReason, ModelAuthError, ModelContextOverflow, ModelUnavailable
from loopnb.engine.models._remote import error_detail, redact, snippet

NO_MESSAGE = "the server sent no error message"
"""What loopnb says of an error reply whose body holds no words of the server's."""

_OVERFLOW = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|reduce the length",
    re.IGNORECASE,
)

_ERRNO_REASONS: dict[int, FailureReason] = {
    errno.ECONNREFUSED: "refused",
    errno.ECONNRESET: "reset",
    errno.ECONNABORTED: "reset",
    errno.EPIPE: "reset",
    errno.ENETUNREACH: "unreachable",
    errno.EHOSTUNREACH: "unreachable",
    errno.ENETDOWN: "unreachable",
    errno.ETIMEDOUT: "timed_out",
}
_CLASS_REASONS: tuple[tuple[type[BaseException], FailureReason], ...] = (
    (ConnectionRefusedError, "refused"),
    (ConnectionResetError, "reset"),
    (ConnectionAbortedError, "reset"),
    (BrokenPipeError, "reset"),
    (TimeoutError, "timed_out"),
)
# The classes the HTTP libraries raise when a server breaks HTTP or hangs up before answering
# (httpx, httpcore and h11 share the first name; aiohttp raises the second).
_NO_REPLY_CLASSES = frozenset({"RemoteProtocolError", "ServerDisconnectedError"})

_SAID: dict[FailureReason, str] = {
    "refused": "connection refused by {server}",
    "reset": "connection reset by {server}",
    "unresolved": "{server} cannot be found: its name does not resolve",
    "unreachable": "the network cannot reach {server}",
    "no_reply": "{server} sent no valid reply (it closed the connection or broke HTTP)",
    "cut_off": "the reply was cut off before its end",
    "timed_out": "the connection to {server} timed out",
}

T = TypeVar("T")


@dataclass
class _Exchange:
    """One request's progress, as the HTTP client's response hook reports it."""

    began: bool = False


_EXCHANGE: contextvars.ContextVar[_Exchange | None] = contextvars.ContextVar("loopnb_exchange", default=None)


async def _reply_began(response: object) -> None:
    """The HTTP client's response hook: a reply's head has arrived; its body may yet fail."""
    exchange = _EXCHANGE.get()
    if exchange is not None:
        exchange.began = True


def watched_http_client(api: ModuleType) -> Any:
    """An HTTP client for ``api``'s client that tells ``sent`` when a reply has begun, so that a
    failure after it reads as a reply cut off; ``None`` (the client's own) if ``api`` offers none."""
    factory = getattr(api, "DefaultAsyncHttpxClient", None)
    return None if factory is None else factory(event_hooks={"response": [_reply_began]})


def failure_from_status(
    status: int, detail: str, *, who: str, env_var: str, retry_after: float | None = None
) -> ModelUnavailable:
    """Map an HTTP error status to the model failure the engine acts on (see the module doc);
    ``retry_after`` (seconds the server asked to wait) travels on it."""
    if status in (401, 403):
        return ModelAuthError(
            f"{who}: credentials refused (HTTP {status}: {detail}); set {env_var} to a valid key",
            status=status,
            env_var=env_var,
        )
    if status == 413 or (400 <= status < 500 and status != 429 and _OVERFLOW.search(detail)):
        return ModelContextOverflow(
            f"{who}: the request is too long for the model's context (HTTP {status}: {detail})",
            status=status,
        )
    return ModelUnavailable(f"{who}: HTTP {status}: {detail}", status=status, retry_after=retry_after)


def retry_after_seconds(milliseconds: str, retry_after: str, date: str) -> float | None:
    """The seconds a server asked the client to wait, from its headers: ``retry-after-ms`` (sent
    by OpenAI), else ``Retry-After`` as seconds or as an HTTP date, counted from the response's own
    ``Date`` (so neither the local clock nor its skew matters). ``None`` when they say nothing
    usable."""
    for text, scale in ((milliseconds, 0.001), (retry_after, 1.0)):
        try:
            value = float(text) * scale
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return value
    try:
        when, sent_at = parsedate_to_datetime(retry_after), parsedate_to_datetime(date)
        return max(0.0, (when - sent_at).total_seconds())
    except (TypeError, ValueError, IndexError):
        return None


def failure_from_exception(
    exc: Exception,
    *,
    api: ModuleType,
    who: str,
    env_var: str,
    key: str | None,
    timeout: float | None,
    model: str | None = None,
    root: str = "",
    began: bool = False,
) -> ModelUnavailable:
    """Map whatever an official client raised (``openai`` and ``anthropic`` share the exception
    names) to a model failure whose text names ``who`` and never holds ``key``.

    A 404 also names the URL asked and ``model``, with ``root`` saying where ``base_url`` should
    point; a refusal that says when to come back (``Retry-After``) says so. ``began``: the reply's
    head had arrived before the failure.
    """
    if isinstance(exc, api.APIStatusError):
        return _status_failure(exc, who=who, env_var=env_var, key=key, model=model, root=root)
    if isinstance(exc, api.APITimeoutError | TimeoutError):
        waited = f"within {timeout:g}s" if isinstance(timeout, int | float) else "in time"
        return ModelUnavailable(
            f"{who}: no reply {waited} (pass timeout=... to wait longer)", reason="timed_out"
        )
    if isinstance(exc, json.JSONDecodeError):
        return ModelUnavailable(f"{who}: the reply is not JSON: {redact(snippet(exc.doc), key)}")
    if isinstance(exc, api.APIConnectionError | OSError):
        reason: FailureReason | None = "cut_off" if began else connection_reason(exc)
        if reason is not None:
            return ModelUnavailable(f"{who}: {_SAID[reason].format(server=_server(exc))}", reason=reason)
        return ModelUnavailable(f"{who}: connection failed: {redact(describe_exception(exc), key)}")
    return ModelUnavailable(f"{who}: {redact(describe_exception(exc), key)}")


def connection_reason(exc: BaseException) -> FailureReason | None:
    """What a failure to talk to a server was, from the classes and ``errno`` values on its chain
    of causes (the nearest that says); ``None`` when none does."""
    for error in causes(exc):
        reason = _reason(error)
        if reason is not None:
            return reason
    for error in causes(exc):
        if _NO_REPLY_CLASSES & {cls.__name__ for cls in type(error).__mro__}:
            return "no_reply"
    return None


def _reason(error: BaseException) -> FailureReason | None:
    if isinstance(error, socket.gaierror):  # its errno is a resolver's code, not an errno
        return "unresolved"
    if isinstance(error, OSError) and error.errno in _ERRNO_REASONS:
        return _ERRNO_REASONS[error.errno]
    return next((reason for cls, reason in _CLASS_REASONS if isinstance(error, cls)), None)


def causes(exc: BaseException, limit: int = 50) -> Iterator[BaseException]:
    """``exc`` and what lies behind it, nearest first: its cause or context, the exceptions it
    was given as arguments (httpcore keeps the one it wraps there) and a group's members."""
    seen: set[int] = set()
    queue = [exc]
    while queue and len(seen) < limit:
        error = queue.pop(0)
        if id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        inner = [error.__cause__, error.__context__, *error.args, *getattr(error, "exceptions", ())]
        queue.extend(item for item in inner if isinstance(item, BaseException))


def _status_failure(
    exc: Any, *, who: str, env_var: str, key: str | None, model: str | None, root: str
) -> ModelUnavailable:
    detail = error_detail(_error_body(exc), NO_MESSAGE)
    status = exc.status_code
    if status == 404:
        detail += f" ({_asked(exc)}model {model!r}: check the model name{root})"
    wait: float | None = None
    if status == 429 or status >= 500:
        retry_after = _header(exc, "retry-after")
        if retry_after:
            unit = "s" if retry_after.isdigit() else ""
            detail += f"; retry after {retry_after[:40]}{unit}"
        wait = retry_after_seconds(_header(exc, "retry-after-ms"), retry_after, _header(exc, "date"))
    return failure_from_status(status, redact(detail, key), who=who, env_var=env_var, retry_after=wait)


def _error_body(exc: Any) -> object:
    """The body of an error reply as the server sent it (JSON decoded), never the client's message
    about it; the client's parse of it when the reply's text cannot be had."""
    try:
        text = exc.response.text
    except Exception:
        return getattr(exc, "body", None)
    if not isinstance(text, str):
        return getattr(exc, "body", None)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _server(exc: BaseException) -> str:
    """``the server at host:port`` for the request a failure answers, without credentials."""
    try:
        netloc = urlsplit(str(exc.request.url)).netloc  # type: ignore[attr-defined]
    except Exception:
        netloc = ""
    host = netloc.rpartition("@")[2]
    return f"the server at {host}" if host else "the server"


def _asked(exc: Any) -> str:
    """``POST <url>, `` for the request an error answers: no credentials, no query string."""
    try:
        request = exc.request
        url = urlsplit(str(request.url))
        return f"{request.method} {url.scheme}://{url.netloc.rpartition('@')[2]}{url.path}, "
    except Exception:
        return ""


def _header(exc: Any, name: str) -> str:
    try:
        value = exc.response.headers.get(name)
    except Exception:
        return ""
    return value.strip() if isinstance(value, str) else ""


def deadline(seconds: float | None) -> contextlib.AbstractAsyncContextManager[object]:
    """The whole request's time limit. The clients apply ``timeout`` to each network step, so a
    server sending a byte now and then would never time out; this raises ``TimeoutError`` once
    ``seconds`` have passed in all (``None``: no limit)."""
    return contextlib.nullcontext() if seconds is None else asyncio.timeout(seconds)


async def sent(
    request: Awaitable[T],
    *,
    api: ModuleType,
    who: str,
    env_var: str,
    key: str | None,
    timeout: float | None,
    model: str,
    root: str,
) -> T:
    """Await a client's ``request`` within ``timeout`` in all; a failure is the model failure
    ``failure_from_exception`` makes of it, linked to nothing of the client's (its exception holds
    the request, whose headers carry the key)."""
    exchange = _Exchange()
    token = _EXCHANGE.set(exchange)
    try:
        async with deadline(timeout):
            return await request
    except Exception as exc:
        failure = failure_from_exception(
            exc,
            api=api,
            who=who,
            env_var=env_var,
            key=key,
            timeout=timeout,
            model=model,
            root=root,
            began=exchange.began,
        )
    finally:
        _EXCHANGE.reset(token)
    # Raised out here, not inside the except block, so not even __context__ points back at the
    # client's exception: pickling with tblib (as dask does) would carry it, and the key with it.
    raise failure


def describe_exception(exc: BaseException) -> str:
    """A one-line account of a failure: the exception and the deepest cause that says something."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    root: BaseException | None = None
    seen: set[int] = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen and len(seen) < 20:
        seen.add(id(cause))
        if str(cause):
            root = cause
        cause = cause.__cause__ or cause.__context__
    if root is not None and str(root) not in text:
        text += f" ({type(root).__name__}: {root})"
    return text
