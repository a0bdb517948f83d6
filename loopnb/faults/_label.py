"""``parse``: a fault's label read back into the ``Fault``, never evaluated.

The language is the labels' own: a kind, its arguments, then schedules, each a call::

    error("disk busy").first(2)        crash(ValueError("bad input"))      hang(30)
    wrong({"rows": []}).when(path="a") unavailable(429, retry_after=2)    slow(0.5).sometimes(0.3)

A bare kind stands for its call with no arguments (``error.first(2)``, as the command line takes
it). The text is read by Python's own parser into a syntax tree, and only the shapes above are
taken from it: each argument must be a literal (read by ``ast.literal_eval``), and a crash's
exception a built-in one called with literals. Nothing is evaluated; anything else is a
``FaultSyntaxError`` naming what was expected and the column where it was found.
"""

from __future__ import annotations

import ast
import builtins
import functools
from typing import Any, cast

from loopnb.engine._errors import shown
from loopnb.engine._texts import suggest_name
from loopnb.faults._fault import KINDS, Fault, FaultKind, make

MAX_LABEL = 10_000
"""The longest label read, in characters."""

SCHEDULES = ("first", "always", "sometimes", "when")
_EXPECTED_FAULT = 'a fault such as error("disk busy"), ' + ", ".join(f"{k}(...)" for k in KINDS[1:])
_EXPECTED_SCHEDULE = "a schedule: .first(k), .always(), .sometimes(p) or .when(name=value)"
_EXPECTED_LITERAL = "a literal: a string in quotes, a number, True, False, None, or a list or dict of them"


class FaultSyntaxError(ValueError):
    """A fault label that ``parse`` cannot read: says what was expected, and where.

    Raised by: ``loopnb.faults.parse`` (and so ``inject`` and the command line's ``--fault``, which
    take labels). ``label`` is the text, ``column`` the 1-based column of the part that is wrong
    (``None`` when the whole label is).
    """

    def __init__(self, message: str, *, label: str = "", column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.label = label
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        return (functools.partial(type(self), label=self.label, column=self.column), (self.message,))


def parse(label: str) -> Fault:
    """The ``Fault`` a label writes: ``parse('error("disk busy").first(2)')``.

    Raises:
        FaultSyntaxError: the text is not a fault label (what was expected, at which column).
        TypeError: ``label`` is not a str.
    """
    if not isinstance(label, str):
        raise TypeError(f"faults.parse: a label is a str, got {type(label).__name__}")
    text = label.strip()
    if not text:
        raise _error(text, None, f"the label is empty; expected {_EXPECTED_FAULT}")
    if len(text) > MAX_LABEL:
        raise _error(text, None, f"the label is {len(text)} characters long; at most {MAX_LABEL} are read")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        column = exc.offset if exc.lineno in (None, 1) else None
        raise _error(text, column, f"not a fault label ({exc.msg}); expected {_EXPECTED_FAULT}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL character, nesting past the parser
        raise _error(
            text, None, f"not a fault label ({type(exc).__name__}); expected {_EXPECTED_FAULT}"
        ) from None
    return _Reader(text).fault(tree.body)


class _Reader:
    """Reads one label's syntax tree; ``text`` is the label, for columns and quoting."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._bytes = text.encode("utf-8", errors="surrogatepass")

    def fault(self, node: ast.expr) -> Fault:
        if isinstance(node, ast.Name):
            return self._made(node, self._kind(node), [], [])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._made(node, self._kind(node.func), node.args, node.keywords)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return self._scheduled(node, node.func)
        if isinstance(node, ast.Attribute):
            attr = node.attr
            if attr in SCHEDULES:
                raise self.error(node, f"the schedule .{attr} needs its parentheses, e.g. .{_example(attr)}")
            raise self.error(
                node, f"unknown schedule .{attr}; expected {_EXPECTED_SCHEDULE}{_mean(attr, SCHEDULES)}"
            )
        raise self.error(node, f"expected {_EXPECTED_FAULT}, found {self.source(node)}")

    def _kind(self, node: ast.Name) -> FaultKind:
        if node.id not in KINDS:
            raise self.error(
                node, f"unknown fault {node.id!r}; expected one of {', '.join(KINDS)}{_mean(node.id, KINDS)}"
            )
        return node.id

    def _made(
        self, node: ast.expr, kind: FaultKind, args: list[ast.expr], keywords: list[ast.keyword]
    ) -> Fault:
        crash = kind == "crash"
        values = [self._exception(a) if crash and i == 0 else self.literal(a) for i, a in enumerate(args)]
        named = self._keywords(keywords, exception="exc" if crash else None)
        try:
            return make(kind, *values, **named)
        except (TypeError, ValueError) as exc:
            raise self.error(node, str(exc)) from None

    def _scheduled(self, node: ast.Call, func: ast.Attribute) -> Fault:
        inner = self.fault(func.value)
        method = func.attr
        if method not in SCHEDULES:
            raise self.error(
                func, f"unknown schedule .{method}(); expected {_EXPECTED_SCHEDULE}{_mean(method, SCHEDULES)}"
            )
        args = [self.literal(a) for a in node.args]
        named = self._keywords(node.keywords)
        if method == "when" and args:
            raise self.error(node.args[0], 'when() takes arguments by name, e.g. .when(path="src/main.rs")')
        try:
            return cast("Fault", getattr(inner, method)(*args, **named))
        except TypeError:
            raise self.error(func, f".{method}() takes {_takes(method)}, e.g. .{_example(method)}") from None
        except ValueError as exc:
            raise self.error(func, str(exc)) from None

    def _keywords(self, keywords: list[ast.keyword], exception: str | None = None) -> dict[str, Any]:
        """Arguments by name, each a literal (but the one named ``exception``: a crash's exception)."""
        named: dict[str, Any] = {}
        for keyword in keywords:
            if keyword.arg is None:
                raise self.error(keyword.value, f"expected name=value, found **{self.source(keyword.value)}")
            read = self._exception if keyword.arg == exception else self.literal
            named[keyword.arg] = read(keyword.value)
        return named

    def literal(self, node: ast.expr) -> Any:
        """The literal ``node`` writes, or a ``FaultSyntaxError`` at its column."""
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            raise self.error(node, f"expected {_EXPECTED_LITERAL}, found {self.source(node)}") from None

    def _exception(self, node: ast.expr) -> Any:
        """A crash's exception: a built-in one's name, or its call with literals (``ValueError("x")``)."""
        name_node = node.func if isinstance(node, ast.Call) else node
        if not isinstance(name_node, ast.Name):
            return self.literal(node)  # a literal: ``crash()``'s checks will refuse it by name
        kind = getattr(builtins, name_node.id, None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise self.error(
                name_node,
                'expected a built-in exception such as RuntimeError("boom") or ValueError, '
                f"found {name_node.id}",
            )
        if not isinstance(node, ast.Call):
            return kind
        if node.keywords:
            raise self.error(
                node.keywords[0].value, f"{name_node.id}(...) takes its arguments by position here"
            )
        args = [self.literal(a) for a in node.args]
        try:
            return kind(*args)
        except Exception as exc:
            raise self.error(node, f"{name_node.id}{tuple(args)!r} cannot be made: {exc}") from None

    def source(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text, node)
        return shown(segment, 60) if segment is not None else type(node).__name__

    def error(self, node: ast.AST, what: str) -> FaultSyntaxError:
        """``what`` was wrong at ``node``: its column counted in characters, from 1."""
        offset = getattr(node, "col_offset", None)
        if isinstance(node, ast.Attribute) and node.end_col_offset is not None:  # at the name after the dot
            offset = node.end_col_offset - len(node.attr.encode("utf-8"))
        column = None
        if isinstance(offset, int):
            column = len(self._bytes[:offset].decode("utf-8", errors="ignore")) + 1
        return _error(self.text, column, what)


def _error(text: str, column: int | None, what: str) -> FaultSyntaxError:
    where = f" (at column {column})" if column is not None else ""
    return FaultSyntaxError(f"fault {shown(text, 80)}: {what}{where}", label=text, column=column)


def _mean(name: str, names: tuple[str, ...]) -> str:
    best = suggest_name(name, names)
    return f"; did you mean {best!r}?" if best is not None else ""


def _takes(method: str) -> str:
    return {
        "first": "a number of calls",
        "always": "no arguments",
        "sometimes": "a chance from 0 to 1",
        "when": "arguments by name",
    }[method]


def _example(method: str) -> str:
    return {
        "first": "first(2)",
        "always": "always()",
        "sometimes": "sometimes(0.3)",
        "when": 'when(path="a")',
    }[method]
