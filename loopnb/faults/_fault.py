"""``Fault``: what goes wrong (its kind and arguments) and when (its schedule), as one immutable value.

The seven kinds, each made by the function of its name (``error("disk busy")``, ``hang(30)``):

- ``error(text)``: explicit, soft: the call fails with ``text`` as its error (a ``ToolError``);
- ``crash(exc)``: the call raises ``exc`` (a panic, reported softly by the dispatcher);
- ``hang(seconds)``: no answer for ``seconds``: a shorter timeout fires first; with none, the call
  fails after them as a ``TimeoutError`` would;
- ``wrong(value)`` and ``empty()``: implicit: a plausible result (``value``, or ``""``) with no
  error flag;
- ``slow(seconds)``: the real call, ``seconds`` late;
- ``unavailable(status=503, retry_after=None)``: for models: ``ModelUnavailable``.

A schedule says which calls fail: ``.always()`` (permanent, the default), ``.first(k)`` (transient:
the first ``k``), ``.sometimes(p)`` (each with chance ``p``, seeded) and ``.when(**arguments)`` (only
calls with those arguments, combined with any of the others). ``fault.label`` is its text, e.g.
``error("disk busy").first(2)``, which ``loopnb.faults.parse`` reads back.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, get_args

from loopnb.engine import ToolError
from loopnb.faults._literal import render

FaultKind = Literal["error", "crash", "hang", "wrong", "empty", "slow", "unavailable"]
KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
Every = Literal["always", "first", "sometimes"]

DEFAULT_ERROR = "injected error"
"""What the model reads for ``error()`` given no text."""
DEFAULT_CRASH = "injected crash"
"""The message of the ``RuntimeError`` that ``crash()`` given no exception raises."""


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Final = _Required()

SIGNATURES: dict[FaultKind, tuple[tuple[str, object], ...]] = {
    "error": (("text", DEFAULT_ERROR),),
    "crash": (("exc", None),),
    "hang": (("seconds", REQUIRED),),
    "wrong": (("value", REQUIRED),),
    "empty": (),
    "slow": (("seconds", REQUIRED),),
    "unavailable": (("status", 503), ("retry_after", None)),
}
"""Each kind's parameters in order, with their defaults (``REQUIRED``: none)."""


@dataclass(frozen=True, slots=True, eq=False)
class Fault:
    """One fault and its schedule. Immutable: every schedule method returns a new ``Fault``.

    Made by ``error``, ``crash``, ``hang``, ``wrong``, ``empty``, ``slow`` and ``unavailable`` (or
    ``parse``); ``inject`` puts it on a tool or a model.
    """

    kind: FaultKind
    params: tuple[tuple[str, Any], ...] = ()
    """The arguments it was made with, by name, in the signature's order; a default is left out."""
    every: Every = "always"
    """Which of the matching calls fail: all of them, the first ``times``, or each with ``chance``."""
    times: int = 0
    """``.first(k)``'s ``k``."""
    chance: float = 1.0
    """``.sometimes(p)``'s ``p``."""
    match: tuple[tuple[str, Any], ...] = ()
    """``.when(**arguments)``'s arguments, by name in sorted order: a call matches when it has each."""

    # -- schedules --------------------------------------------------------------------------------

    def always(self) -> Fault:
        """Every matching call fails (permanent): the default."""
        return replace(self, every="always", times=0, chance=1.0)

    def first(self, k: int) -> Fault:
        """The first ``k`` matching calls fail, the rest run (transient). Counted per run."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"faults: first(k) takes a whole number of calls >= 0, got {k!r}")
        return replace(self, every="first", times=k, chance=1.0)

    def sometimes(self, p: float) -> Fault:
        """Each matching call fails with chance ``p`` (0 to 1), drawn from ``inject``'s seed and the
        tool's name: the same seed fails the same calls."""
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise ValueError(f"faults: sometimes(p) takes a chance from 0 to 1, got {p!r}")
        return replace(self, every="sometimes", times=0, chance=p)

    def when(self, **arguments: Any) -> Fault:
        """Only calls with these arguments fail (``.when(path="src/main.rs")``); added to any earlier
        ``when``, and combined with the other schedules (``.when(path="a").first(1)``)."""
        if not arguments:
            raise ValueError("faults: when() needs at least one argument, e.g. when(path='src/main.rs')")
        merged = dict(self.match) | arguments
        return replace(self, match=tuple(sorted(merged.items())))

    # -- what it holds ----------------------------------------------------------------------------

    def param(self, name: str) -> Any:
        """The argument ``name`` it was made with, or the kind's default."""
        for key, value in self.params:
            if key == name:
                return value
        return dict(SIGNATURES[self.kind])[name]

    @property
    def text(self) -> str:
        """An ``error``'s text (what the model reads); for another kind, what its failure says."""
        match self.kind:
            case "error":
                return str(self.param("text"))
            case "hang":
                return f"no answer after {_seconds_text(self.seconds)}"
            case "unavailable":
                return _status_text(self.status)
            case "crash":
                return str(self.exception())
            case _:
                return ""

    @property
    def seconds(self) -> float:
        """A ``hang``'s or a ``slow``'s seconds (0 for the other kinds)."""
        return float(self.param("seconds")) if self.kind in ("hang", "slow") else 0.0

    @property
    def value(self) -> Any:
        """What a ``wrong`` call returns (``""`` for ``empty``; ``None`` for the other kinds)."""
        if self.kind == "wrong":
            return self.param("value")
        return "" if self.kind == "empty" else None

    @property
    def status(self) -> int:
        """An ``unavailable``'s HTTP status."""
        return int(self.param("status")) if self.kind == "unavailable" else 0

    @property
    def retry_after(self) -> float | None:
        """An ``unavailable``'s ``Retry-After`` seconds, when it has one."""
        value = self.param("retry_after") if self.kind == "unavailable" else None
        return None if value is None else float(value)

    def exception(self) -> Exception:
        """A fresh copy of the exception a ``crash`` raises (each call raises its own)."""
        exc = self.param("exc") if self.kind == "crash" else None
        if exc is None:
            return RuntimeError(DEFAULT_CRASH)
        try:
            fresh: Exception = copy.copy(exc)
        except Exception:  # an exception that cannot be copied is raised itself
            return exc  # type: ignore[no-any-return]
        return fresh

    @property
    def implicit(self) -> bool:
        """True for the faults no error flag shows (``wrong``, ``empty``): invisible to the channels."""
        return self.kind in ("wrong", "empty")

    @property
    def label(self) -> str:
        """Its text, as written: ``error("disk busy").first(2)``; ``parse(label)`` gives it back."""
        args = _arguments(self)
        text = f"{self.kind}({args})"
        if self.match:
            text += ".when(" + ", ".join(f"{k}={render(v)}" for k, v in self.match) + ")"
        if self.every == "first":
            text += f".first({self.times})"
        elif self.every == "sometimes":
            text += f".sometimes({render(self.chance)})"
        return text

    def __eq__(self, other: object) -> bool:
        """Equal when they fail the same calls the same way (a crash's exceptions by type and args)."""
        if not isinstance(other, Fault):
            return NotImplemented
        return _key(self) == _key(other)

    def __hash__(self) -> int:
        return hash(self.label)

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        return f"<Fault {self.label}>"


def _key(fault: Fault) -> tuple[Any, ...]:
    params = tuple((k, (type(v), v.args) if isinstance(v, BaseException) else v) for k, v in fault.params)
    return (fault.kind, params, fault.every, fault.times, fault.chance, fault.match)


def _arguments(fault: Fault) -> str:
    """The arguments of a label: the first positionally, the others by name."""
    names = [name for name, _ in SIGNATURES[fault.kind]]
    given = dict(fault.params)
    parts = []
    for i, name in enumerate(names):
        if name not in given:
            continue
        value = given[name]
        shown = _exception_text(value) if name == "exc" else render(value)
        parts.append(shown if i == 0 else f"{name}={shown}")
    return ", ".join(parts)


def _exception_text(exc: BaseException) -> str:
    """An exception as a label writes it: ``ValueError("bad input")``."""
    return f"{type(exc).__name__}({', '.join(render(a) for a in exc.args)})"


def _seconds_text(seconds: float) -> str:
    return f"{seconds:g}s"


def _status_text(status: int) -> str:
    import http

    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"
    return f"HTTP {status} {phrase}"


# -- the constructors -----------------------------------------------------------------------------


def make(kind: FaultKind, *args: Any, **kwargs: Any) -> Fault:
    """A fault of ``kind`` with its arguments checked (what each constructor and ``parse`` call)."""
    signature = SIGNATURES[kind]
    names = [name for name, _ in signature]
    if len(args) > len(names):
        raise TypeError(f"faults.{kind}() takes {_takes(names)}, got {len(args)} arguments")
    given = dict(zip(names, args, strict=False))
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"faults.{kind}() has no argument {name!r}; it takes {_takes(names)}")
        if name in given:
            raise TypeError(f"faults.{kind}() got {name!r} twice")
        given[name] = value
    for name, default in signature:
        if default is REQUIRED and name not in given:
            raise TypeError(f"faults.{kind}() needs its {name}: e.g. {kind}({_EXAMPLES[kind]})")
    for name, value in given.items():
        _check(kind, name, value)
    defaults = dict(signature)
    params = tuple(
        (name, _kept(given[name]))
        for name in names
        if name in given and not _same(given[name], defaults[name])
    )
    return Fault(kind, params)


_EXAMPLES = {"hang": "30", "slow": "0.5", "wrong": '"a plausible answer"'}


def _takes(names: list[str]) -> str:
    return ", ".join(names) if names else "no arguments"


def _same(value: object, default: object) -> bool:
    """Whether ``value`` is the default (left out of the label); ``True`` is not ``1``."""
    return type(value) is type(default) and value == default


def _kept(value: Any) -> Any:
    """A ``crash``'s exception class becomes an instance of it (``crash(ValueError)``)."""
    return value() if isinstance(value, type) else value


def _check(kind: FaultKind, name: str, value: object) -> None:
    """Raise ``TypeError``/``ValueError`` naming what ``kind``'s ``name`` takes, when ``value`` is not it."""
    if name == "text" and not isinstance(value, str):
        raise TypeError(f"faults.error: text must be a str (what the model reads), got {value!r:.60}")
    if name == "seconds" and not _finite(value):
        raise ValueError(f"faults.{kind}: seconds must be a finite number >= 0, got {value!r:.60}")
    if name == "retry_after" and value is not None and not _finite(value):
        raise ValueError(f"faults.unavailable: retry_after must be None or seconds >= 0, got {value!r:.60}")
    if name == "status" and (isinstance(value, bool) or not isinstance(value, int) or not 100 <= value < 600):
        raise ValueError(
            f"faults.unavailable: status must be an HTTP status from 100 to 599, got {value!r:.60}"
        )
    if name == "exc" and value is not None:
        _check_exception(value)


def _finite(value: object) -> bool:
    return (
        not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value >= 0
    )


def _check_exception(value: object) -> None:
    kind = value if isinstance(value, type) else type(value)
    if not issubclass(kind, Exception):
        raise TypeError(
            f"faults.crash: exc must be an exception (an Exception or its class), got {value!r:.60}; "
            "KeyboardInterrupt, SystemExit and the like would not crash a tool, they would end your program"
        )
    if issubclass(kind, ToolError):
        raise TypeError("faults.crash: a ToolError is a soft error, not a crash; use faults.error(text)")
    if isinstance(value, type):
        try:
            value()
        except Exception as exc:
            raise TypeError(
                f"faults.crash: {kind.__name__}() cannot be made without arguments ({exc}); "
                f"pass an instance, e.g. crash({kind.__name__}('boom'))"
            ) from exc


def error(text: str = DEFAULT_ERROR) -> Fault:
    """The call fails softly with ``text``: a ``ToolError`` the model reads (explicit)."""
    return make("error", text)


def crash(exc: BaseException | type[BaseException] | None = None) -> Fault:
    """The call raises ``exc`` (default ``RuntimeError("injected crash")``): a panic."""
    return make("crash", exc)


def hang(seconds: float) -> Fault:
    """No answer for ``seconds``: a shorter timeout fires first; with none, the call then fails as
    a ``TimeoutError`` would."""
    return make("hang", seconds)


def wrong(value: Any) -> Fault:
    """The call returns ``value`` instead of its real result, with no error flag (implicit)."""
    return make("wrong", value)


def empty() -> Fault:
    """The call returns an empty result (``""``) with no error flag (implicit)."""
    return make("empty")


def slow(seconds: float) -> Fault:
    """The real call, ``seconds`` late (a timeout shorter than that fires first)."""
    return make("slow", seconds)


def unavailable(status: int = 503, retry_after: float | None = None) -> Fault:
    """For a model: the request fails with ``ModelUnavailable`` (``status``, and ``retry_after``
    seconds when given), as a server's 503 or 429 does."""
    return make("unavailable", status, retry_after=retry_after)
