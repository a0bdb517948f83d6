"""A fault: what goes wrong (its kind and arguments) and when (its schedule), and its label.

A ``Fault`` is a value: immutable, compared and hashed by what it does, and written as its label,
the same text the CLI takes (``error("disk busy").first(2)``). ``parse`` reads a label back
without evaluating anything: the text is parsed into Python's syntax tree, and only calls of the
seven kinds, the four schedules and literal arguments are accepted.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Kind = Literal["error", "crash", "hang", "wrong", "empty", "slow", "unavailable"]
KINDS: tuple[Kind, ...] = ("error", "crash", "hang", "wrong", "empty", "slow", "unavailable")
"""Every kind of fault, each the name of the function that makes one (``error``, ``crash``, ...)."""
EXPLICIT: frozenset[str] = frozenset({"error", "crash", "hang", "unavailable"})
"""Kinds that fail where the channel table can see it; ``wrong`` and ``empty`` are implicit (a
plausible result, no error flag) and ``slow`` is no failure until something times out."""

DEFAULT_ERROR = "the tool failed (an injected fault)"
DEFAULT_HANG = 3600.0
DEFAULT_SLOW = 1.0


@dataclass(frozen=True, slots=True, eq=False)
class Fault:
    """One fault and its schedule. Build one with ``loopnb.faults.error(...)`` and the others;
    each schedule method returns a new fault.

    ``first`` is how many calls it fails (``None``: no such limit), ``chance`` the share of calls
    it fails at random (seeded by ``inject``), ``where`` the arguments a call must have for the
    fault to apply to it; with none of them the fault is permanent: every call fails.
    """

    kind: Kind
    arguments: tuple[Any, ...] = ()
    first_k: int | None = None
    chance: float | None = None
    where: tuple[tuple[str, Any], ...] = field(default=())

    def first(self, k: int) -> Fault:
        """Transient: only the first ``k`` calls (that ``when`` lets through) fail."""
        if type(k) is not int or k < 1:
            raise ValueError(
                f"{self.label}.first(k): k is how many calls fail, a whole number >= 1, got {k!r}"
            )
        return replace(self, first_k=k, chance=None)

    def always(self) -> Fault:
        """Permanent: every call (that ``when`` lets through) fails. The default."""
        return replace(self, first_k=None, chance=None)

    def sometimes(self, p: float) -> Fault:
        """Each call fails with probability ``p``, from a generator ``inject``'s seed fixes."""
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"{self.label}.sometimes(p): p is a probability from 0 to 1, got {p!r}")
        return replace(self, chance=float(p), first_k=None)

    def when(self, **arguments: Any) -> Fault:
        """Only calls with these arguments (each equal) fail; the others run as they are."""
        if not arguments:
            raise ValueError(f"{self.label}.when(...): name at least one argument, e.g. .when(path='a.txt')")
        return replace(self, where=tuple(sorted(arguments.items())))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fault):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        """What the fault does: a crash's exception by its type and arguments (two exceptions
        with the same are equal only this way), so that ``parse(fault.label) == fault``."""
        arguments = tuple((type(a), a.args) if isinstance(a, BaseException) else a for a in self.arguments)
        return (self.kind, arguments, self.first_k, self.chance, self.where)

    def applies(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with these arguments is one the fault is about (``when``)."""
        for k, v in self.where:  # noqa: SIM110  (a loop, not all(...): it runs on every injected call)
            if k not in arguments or arguments[k] != v:
                return False
        return True

    @property
    def explicit(self) -> bool:
        """Whether the failure shows as one (an error, a crash, a hang); ``wrong``/``empty`` do not."""
        return self.kind in EXPLICIT

    @property
    def transient(self) -> bool:
        """Whether only the first calls fail (``first``)."""
        return self.first_k is not None

    @property
    def label(self) -> str:
        """The fault as text: ``error("disk busy").first(2)``; ``parse`` reads it back."""
        text = f"{self.kind}({', '.join(_literal(a) for a in self.arguments)})"
        if self.where:
            text += f".when({', '.join(f'{k}={_literal(v)}' for k, v in self.where)})"
        if self.first_k is not None:
            text += f".first({self.first_k})"
        elif self.chance is not None:
            text += f".sometimes({self.chance!r})"
        return text

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        return f"<Fault {self.label}>"


def _literal(value: Any) -> str:
    """A value as the label writes it: a literal, or ``Class("message")`` for an exception."""
    if isinstance(value, BaseException):
        return (
            f"{type(value).__name__}({_literal(str(value))})" if str(value) else f"{type(value).__name__}()"
        )
    text = repr(value)
    if isinstance(value, str) and '"' not in value:
        text = '"' + text[1:-1].replace("\\'", "'") + '"'  # the label's quotes: error("disk busy")
    return text


def error(text: str = DEFAULT_ERROR) -> Fault:
    """The call fails softly with ``text``: the tool's ordinary error, which the model reads."""
    return Fault("error", (_text("error", text),))


def crash(exc: BaseException | str | None = None) -> Fault:
    """The tool raises ``exc`` (a ``RuntimeError`` with that text, when given a text): a panic."""
    if exc is None:
        exc = RuntimeError("injected crash")
    elif isinstance(exc, str):
        exc = RuntimeError(exc)
    elif not isinstance(exc, Exception):
        raise TypeError(f"crash(exc): expected an exception or its text, got {type(exc).__name__}")
    return Fault("crash", (exc,))


def hang(seconds: float = DEFAULT_HANG) -> Fault:
    """The call does not answer for ``seconds``: it outlasts a timeout, which then fails it."""
    return Fault("hang", (_seconds("hang", seconds),))


def wrong(value: Any) -> Fault:
    """The call succeeds with ``value`` instead of the real result: implicit, no error flag."""
    _literal_only("wrong", value)
    return Fault("wrong", (value,))


def empty() -> Fault:
    """The call succeeds with an empty result: implicit, no error flag."""
    return Fault("empty")


def slow(seconds: float = DEFAULT_SLOW) -> Fault:
    """The call takes ``seconds`` longer, then runs as it is (fails only against a timeout)."""
    return Fault("slow", (_seconds("slow", seconds),))


def unavailable(status: int = 503, retry_after: float | None = None) -> Fault:
    """The service is down: a model raises ``ModelUnavailable(status, retry_after)``; a tool fails
    softly saying it is unavailable, with the status."""
    if type(status) is not int or not 100 <= status <= 599:
        raise ValueError(f"unavailable(status): an HTTP status from 100 to 599, got {status!r}")
    if retry_after is None:
        return Fault("unavailable", (status,))
    return Fault("unavailable", (status, _seconds("unavailable", retry_after)))


def _text(kind: str, text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{kind}(text): expected the text the model reads, got {type(text).__name__}")
    return text


def _seconds(kind: str, seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValueError(f"{kind}(seconds): a number of seconds, got {seconds!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{kind}(seconds): a finite number of seconds >= 0, got {seconds!r}")
    return float(seconds)


def _literal_only(kind: str, value: object) -> None:
    """A value a label can write and ``parse`` read back: literals, lists, tuples and dicts of them."""
    try:
        ast.literal_eval(repr(value))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise TypeError(
            f"{kind}(value): expected a literal (text, number, bool, None, or lists, tuples and dicts "
            f"of them), got {type(value).__name__}"
        ) from None


_MAKERS = {"error": error, "crash": crash, "hang": hang, "wrong": wrong, "empty": empty, "slow": slow}
_MAKERS["unavailable"] = unavailable
_SCHEDULES = ("first", "always", "sometimes", "when")


class FaultSyntaxError(ValueError):
    """A fault label that is not one: says where, and what was expected."""


def parse(label: str) -> Fault:
    """The fault a label describes: ``error("disk busy").first(2)``, ``crash``, ``wrong([])``.

    A bare kind takes its defaults (``error.first(2)`` is ``error().first(2)``). Nothing is
    evaluated: only the seven kinds, the schedules ``first``, ``always``, ``sometimes`` and
    ``when``, and literal arguments are read (a crash may name a built-in exception class:
    ``crash(TimeoutError("slow disk"))``).
    """
    if not isinstance(label, str):
        raise TypeError(f"parse(label): expected the fault's text, got {type(label).__name__}")
    label = label.strip()
    if len(label) > MAX_LABEL:
        raise FaultSyntaxError(
            f"{_quoted(label)}: a label of {len(label)} characters; at most {MAX_LABEL} are read"
        )
    try:
        tree = ast.parse(label, mode="eval").body
    except SyntaxError as exc:
        where = f" (at column {exc.offset})" if exc.offset and exc.lineno in (None, 1) else ""
        raise FaultSyntaxError(f"{_quoted(label)} is no fault: {exc.msg}; {_EXPECTED}{where}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL, nesting deeper than the parser goes
        raise FaultSyntaxError(f"{_quoted(label)} is no fault ({type(exc).__name__}); {_EXPECTED}") from None
    return _fault(tree, label)


MAX_LABEL = 10_000
"""The longest label ``parse`` reads, in characters."""


def _quoted(label: str) -> str:
    """A label as an error quotes it: cut short when long."""
    return repr(label) if len(label) <= 80 else repr(label[:77] + "...")


def _at(node: ast.AST, label: str) -> str:
    """`` (at column N)``: where ``node`` starts in ``label``, counted in characters from 1 (for a
    schedule, where its name starts after the dot)."""
    offset = getattr(node, "col_offset", None)
    if isinstance(node, ast.Attribute) and node.end_col_offset is not None:
        offset = node.end_col_offset - len(node.attr.encode("utf-8"))
    if not isinstance(offset, int):
        return ""
    column = len(label.encode("utf-8", errors="surrogatepass")[:offset].decode("utf-8", errors="ignore")) + 1
    return f" (at column {column})"


def _shown(node: ast.AST, label: str) -> str:
    """The text of ``node`` as the label wrote it (cut short), for an error to quote."""
    segment = ast.get_source_segment(label, node) or type(node).__name__
    return repr(segment if len(segment) <= 60 else segment[:57] + "...")


_EXPECTED = (
    'expected a kind (error, crash, hang, wrong, empty, slow, unavailable), e.g. error("disk busy"), '
    "then schedules: .first(k), .always(), .sometimes(p), .when(name=value)"
)


def _fault(node: ast.expr, label: str) -> Fault:
    if isinstance(node, ast.Name):
        return _make(node, node.id, [], {}, label)
    if isinstance(node, ast.Attribute):  # a bare schedule name: error.always
        return _schedule(_fault(node.value, label), node, [], {}, label)
    if isinstance(node, ast.Call):
        args = [_argument(a, label) for a in node.args]
        for keyword in node.keywords:
            if keyword.arg is None:
                raise FaultSyntaxError(
                    f"{_quoted(label)}: '**' is not a fault argument; {_EXPECTED}{_at(keyword, label)}"
                )
        kwargs = {k.arg: _argument(k.value, label) for k in node.keywords if k.arg is not None}
        if isinstance(node.func, ast.Name):
            return _make(node.func, node.func.id, args, kwargs, label)
        if isinstance(node.func, ast.Attribute):
            if node.func.attr == "when" and node.args:
                raise FaultSyntaxError(
                    f'{_quoted(label)}: when() takes arguments by name, e.g. .when(path="a.txt")'
                    + _at(node.args[0], label)
                )
            return _schedule(_fault(node.func.value, label), node.func, args, kwargs, label)
    raise FaultSyntaxError(
        f"{_quoted(label)}: {_shown(node, label)} is not a fault; {_EXPECTED}{_at(node, label)}"
    )


def _make(node: ast.AST, kind: str, args: list[Any], kwargs: dict[str, Any], label: str) -> Fault:
    maker = _MAKERS.get(kind)
    if maker is None:
        raise FaultSyntaxError(
            f"{_quoted(label)}: no fault is called {kind!r}; {_EXPECTED}{_at(node, label)}"
        )
    try:
        made: Fault = maker(*args, **kwargs)  # type: ignore[operator]
        return made
    except (TypeError, ValueError) as exc:
        raise FaultSyntaxError(f"{_quoted(label)}: {exc}{_at(node, label)}") from None


def _schedule(
    fault: Fault, node: ast.Attribute, args: list[Any], kwargs: dict[str, Any], label: str
) -> Fault:
    name = node.attr
    if name not in _SCHEDULES:
        raise FaultSyntaxError(f"{_quoted(label)}: {name!r} is no schedule; {_EXPECTED}{_at(node, label)}")
    try:
        return getattr(fault, name)(*args, **kwargs)  # type: ignore[no-any-return]
    except (TypeError, ValueError) as exc:
        raise FaultSyntaxError(f"{_quoted(label)}: {exc}{_at(node, label)}") from None


def _argument(node: ast.expr, label: str) -> Any:
    """A literal argument, or a built-in exception made from literals (``TimeoutError("x")``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        cls = getattr(builtins, node.func.id, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls(*(_argument(a, label) for a in node.args))
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise FaultSyntaxError(
            f"{_quoted(label)}: {_shown(node, label)} is not a literal; arguments are texts, numbers, "
            "True/False/None, lists, tuples and dicts of them" + _at(node, label)
        ) from None
