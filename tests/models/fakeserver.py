"""A scripted HTTP server on 127.0.0.1 that speaks OpenAI chat completions and Anthropic messages.

Closely enough for the official clients: each request takes the next action of the script and
the server answers it in the protocol the request's path names (``.../chat/completions`` or
``.../messages``; an OpenAI request with ``"stream": true`` gets it as server-sent events).
Everything the clients sent is kept in ``server.requests``.

    with FakeServer([Reply(calls=[("read_file", {"path": "src/mian.rs"})]), Reply("done")]) as srv:
        model = OpenAIChatModel("gpt-test", base_url=srv.openai_url)
        ...
        srv.requests[1].body["messages"]     # what the model was sent on the second turn

Actions: ``Reply`` (text and/or tool calls), ``Fail`` (an HTTP error in the protocol's error
shape; ``Fail.overflow()`` is the context-too-long 400), ``Raw`` (any status and bytes),
``Drop`` (close the connection without answering, or reset it), ``Stall`` (answer nothing until
the client gives up), ``Cut`` (a reply that stops mid-body), or a callable
``action(request) -> action`` that decides from what was sent. With the script spent the
server answers 500 ``fake server: script exhausted``.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = ["Action", "Cut", "Drop", "Fail", "FakeServer", "Raw", "Received", "Reply", "Stall", "Trickle"]


@dataclass(frozen=True)
class Reply:
    """A model reply: ``text`` and/or tool ``calls`` given as ``(name, arguments)``.

    ``arguments`` is a dict, or a raw string sent as is (OpenAI only: garbage JSON on purpose).
    Token counts default to a rough size of the request and the reply.
    """

    text: str | None = None
    calls: Iterable[tuple[str, dict[str, Any] | str]] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class Fail:
    """An HTTP error with ``message`` in the protocol's error body."""

    status: int
    message: str = "fake failure"
    code: str | None = None
    headers: tuple[tuple[str, str], ...] | None = None
    """Extra response headers; ``None`` sends ``Retry-After: 0`` with a 429."""

    @classmethod
    def overflow(cls) -> Fail:
        """The 400 a server sends when the prompt does not fit the model's context."""
        return cls(
            400,
            "This model's maximum context length is 8192 tokens; your messages resulted in "
            "9100 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        )


@dataclass(frozen=True)
class Raw:
    """Any status and body, sent as given (an unreadable reply, an HTML error page)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Drop:
    """Close the connection without a reply (``reset=True``: abort it with a TCP RST)."""

    reset: bool = False


@dataclass(frozen=True)
class Stall:
    """Answer nothing for ``seconds`` (or until the server closes), then drop the connection."""

    seconds: float = 30.0


@dataclass(frozen=True)
class Cut:
    """A 200 announcing all of ``body`` but sending only its first ``sent`` bytes; then, after
    ``stall`` seconds of silence, the connection closes (``reset=True``: aborts with a TCP RST)."""

    body: bytes
    sent: int
    stall: float = 0.0
    reset: bool = False


@dataclass(frozen=True)
class Trickle:
    """A 200 announcing all of ``body`` and sending it one byte every ``every`` seconds: a
    server (or a proxy) that keeps the connection busy without ever finishing its reply."""

    body: bytes
    every: float = 0.05


@dataclass(frozen=True)
class Received:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = field(repr=False)

    @property
    def protocol(self) -> str:
        return _protocol(self.path)


Action: TypeAlias = "Reply | Fail | Raw | Drop | Stall | Cut | Trickle | Callable[[Received], Action]"


def _protocol(path: str) -> str:
    path = path.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return "unknown"


class FakeServer:
    """The server; start it with ``with FakeServer(script) as srv`` or ``start()`` / ``close()``."""

    def __init__(self, script: Iterable[Action] = ()) -> None:
        self.requests: list[Received] = []
        self._script: deque[Action] = deque(script)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ids: dict[str, int] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------
    def push(self, *actions: Action) -> None:
        """Append actions to the script."""
        with self._lock:
            self._script.extend(actions)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start the server first"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """The ``base_url`` for ``OpenAIChatModel`` (the API root ends in ``/v1``)."""
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        """The ``base_url`` for ``AnthropicModel`` (the client appends ``/v1/messages``)."""
        return self.url

    # -- answering ---------------------------------------------------------------------------
    def _next_action(self, request: Received) -> Action:
        with self._lock:
            self.requests.append(request)
            action: Action = (
                self._script.popleft() if self._script else Fail(500, "fake server: script exhausted")
            )
        while callable(action) and not isinstance(action, Reply | Fail | Raw | Drop | Stall | Cut | Trickle):
            action = action(request)
        return action

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids[prefix] = self._ids.get(prefix, 0) + 1
            return f"{prefix}{self._ids[prefix]}"

    def _reply_body(self, request: Received, reply: Reply) -> dict[str, Any]:
        calls = list(reply.calls)
        model = request.body.get("model", "fake") if isinstance(request.body, dict) else "fake"
        input_tokens = reply.input_tokens if reply.input_tokens is not None else len(request.raw) // 4
        output_tokens = (
            reply.output_tokens
            if reply.output_tokens is not None
            else len(reply.text or "") // 4 + 10 * len(calls) + 1
        )
        if request.protocol == "anthropic":
            content: list[dict[str, Any]] = []
            if reply.text:
                content.append({"type": "text", "text": reply.text})
            for name, arguments in calls:
                assert isinstance(arguments, dict), "Anthropic tool_use input is always an object"
                content.append(
                    {
                        "type": "tool_use",
                        "id": self._next_id("toolu_"),
                        "name": name,
                        "input": arguments,
                    }
                )
            return {
                "id": self._next_id("msg_"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": "tool_use" if calls else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if calls:
            message["tool_calls"] = [
                {
                    "id": self._next_id("call_"),
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
                for name, arguments in calls
            ]
        return {
            "id": self._next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        }


def _error_body(protocol: str, fail: Fail) -> dict[str, Any]:
    if protocol == "anthropic":
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "request_too_large",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(fail.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": fail.message}}
    return {
        "error": {
            "message": fail.message,
            "type": "invalid_request_error" if fail.status < 500 else "server_error",
            "param": None,
            "code": fail.code,
        }
    }


def _events(body: dict[str, Any]) -> bytes:
    """A chat completion as the server-sent events of a streamed one (a request with
    ``"stream": true``): the whole message in one chunk, its finish reason, its usage, ``[DONE]``."""
    choice = body["choices"][0]
    message = dict(choice["message"])
    if "tool_calls" in message:
        message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    head = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**head, "choices": [], "usage": body["usage"]},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection is closed after this many seconds
    fake: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._send(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Received(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        if request.protocol == "unknown":
            self.fake.requests.append(request)
            self._send(404, {"error": {"message": f"no route for POST {self.path}"}})
            return
        action = self.fake._next_action(request)
        if isinstance(action, Reply) and request.protocol == "openai" and request.body.get("stream"):
            self._send_bytes(200, _events(self.fake._reply_body(request, action)), "text/event-stream")
        elif isinstance(action, Reply):
            self._send(200, self.fake._reply_body(request, action))
        elif isinstance(action, Fail):
            headers = action.headers
            if headers is None:
                headers = (("Retry-After", "0"),) if action.status == 429 else ()
            body = json.dumps(_error_body(request.protocol, action)).encode()
            self._send_bytes(action.status, body, "application/json", headers)
        elif isinstance(action, Raw):
            self._send_bytes(action.status, action.body, action.content_type, action.headers)
        elif isinstance(action, Cut):
            self._send_cut(action)
        elif isinstance(action, Trickle):
            self._send_trickle(action)
        elif isinstance(action, Stall):
            self.fake._closing.wait(action.seconds)
            self._drop(reset=False)
        elif isinstance(action, Drop):
            self._drop(reset=action.reset)
        else:
            raise TypeError(f"not a fake-server action: {action!r}")

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json")

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Iterable[tuple[str, str]] = ()
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True  # the client went away first

    def _send_cut(self, cut: Cut) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(cut.body)))
            self.end_headers()
            self.wfile.write(cut.body[: cut.sent])
            self.wfile.flush()
        except OSError:
            pass
        if cut.stall:
            self.fake._closing.wait(cut.stall)
        self._drop(reset=cut.reset)

    def _send_trickle(self, trickle: Trickle) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(trickle.body)))
            self.end_headers()
            for i in range(len(trickle.body)):
                if self.fake._closing.wait(trickle.every):
                    break
                self.wfile.write(trickle.body[i : i + 1])
                self.wfile.flush()
        except OSError:
            pass  # the client gave up
        self._drop(reset=False)

    def _drop(self, *, reset: bool) -> None:
        self.close_connection = True
        try:
            if reset:
                # SO_LINGER with a zero timeout turns close() into an RST.
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
