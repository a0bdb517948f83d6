"""Every format ``loopnb.load`` reads, one object each: ``formats()`` and ``register_format``.

``formats()`` lists them in the order ``load`` tries them: loopnb's own (JSON Lines, Parquet),
then the other frameworks' that loopnb ships, then the ones ``register_format`` added. Adding a
framework's reader touches one module of ``loopnb.foreign``: a module there holding a ``FORMAT``
(a ``ForeignFormat`` naming its sniffer and readers) is found by ``formats()``, which imports the
modules of that package the first time it is called (none of them imports its framework), so
``import loopnb`` stays light. ``from_pydantic_ai``, ``from_inspect``, ``from_otel`` and
``from_openai_agents`` read objects in memory through their format. No reader ever unpickles.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import loopnb.foreign as readers
from loopnb.engine._events import Event, ToolDispatched
from loopnb.fileformats._own import OWN
from loopnb.foreign._formats import ForeignFormat, Format
from loopnb.record import RecordingError
from loopnb.record._disagree import read_marks_with

if TYPE_CHECKING:
    from loopnb.record import Recording
    from loopnb.record._disagree import Mark

_registered: list[Format] = []
"""The formats ``register_format`` added, in the order they were added."""


@functools.cache
def _shipped() -> tuple[ForeignFormat, ...]:
    """The ``FORMAT`` of every module of ``loopnb.foreign`` that has one, by module name."""
    modules = sorted(info.name for info in pkgutil.iter_modules(readers.__path__))
    found = (
        getattr(importlib.import_module(f"{readers.__name__}.{name}"), "FORMAT", None) for name in modules
    )
    return tuple(fmt for fmt in found if isinstance(fmt, ForeignFormat))


def formats() -> tuple[Format, ...]:
    """Every format ``load`` reads, in the order it tries them: loopnb's own JSON Lines and
    Parquet, the other frameworks' that loopnb ships, then those ``register_format`` added."""
    return (*OWN, *_shipped(), *_registered)


def others() -> tuple[Format, ...]:
    """The formats other than loopnb's own, in the order ``load`` tries them."""
    return (*_shipped(), *_registered)


def named(name: str) -> Format | None:
    """The format called ``name``, or ``None``."""
    return next((fmt for fmt in formats() if fmt.name == name), None)


def shipped(name: str) -> ForeignFormat:
    """The format of another framework called ``name`` that loopnb ships."""
    return next(fmt for fmt in _shipped() if fmt.name == name)


_MEMBERS = ("name", "what", "suffixes", "sniff", "read")
_SHAPE = (
    "a format has name, what, suffixes, sniff(head, path) and read(path, *, errors), "
    "and write(recording, path) if it can be written"
)


def register_format(fmt: Format) -> Callable[[], None]:
    """Add ``fmt`` to the formats ``load`` and ``load_many`` read, after every format there is.

    Files no earlier format sniffs are offered to ``fmt.sniff``, and ``load(path, format=fmt.name)``
    reads with it. Returns the function that removes it again (a test registers its format and
    calls that when it ends). Raises ``TypeError`` when ``fmt`` lacks a member of ``Format`` and
    ``ValueError`` when a format of its name is there already (``"loopnb"`` is taken too:
    ``format="loopnb"`` means loopnb's own formats).
    """
    missing = [member for member in _MEMBERS if not hasattr(fmt, member)]
    if missing or not isinstance(fmt, Format):
        raise TypeError(
            f"register_format(): {fmt!r:.80} is not a loopnb.Format: no {', '.join(missing)} ({_SHAPE})"
        )
    problem = _shape_problem(fmt)
    if problem:
        raise TypeError(f"register_format(): {fmt!r:.80}: {problem} ({_SHAPE})")
    taken = named(fmt.name)
    if taken is not None or fmt.name == "loopnb":
        what = "loopnb's own formats" if taken is None else taken.what
        raise ValueError(
            f"register_format(): a format named {fmt.name!r} is there already ({what}); "
            "give yours another name"
        )
    _registered.append(fmt)

    def unregister() -> None:
        """Remove the format ``register_format`` added (nothing when it is gone already)."""
        _registered[:] = [other for other in _registered if other is not fmt]  # this one, not an equal

    return unregister


def _shape_problem(fmt: object) -> str | None:
    """What is wrong with the members ``fmt`` has (``None`` when nothing is): a user's object
    may have them of any type."""
    name, what, suffixes = (getattr(fmt, member) for member in ("name", "what", "suffixes"))
    if not isinstance(name, str) or not name.strip():
        return f"its name must be a non-empty str, got {name!r:.40}"
    if not isinstance(what, str):
        return f"its what must be a str, got {type(what).__name__}"
    if not isinstance(suffixes, tuple) or not all(isinstance(s, str) and s.startswith(".") for s in suffixes):
        return f'its suffixes must be a tuple of suffixes such as (".csv",), got {suffixes!r:.60}'
    for member in ("sniff", "read", "write"):
        if hasattr(fmt, member) and not callable(getattr(fmt, member)):
            return f"its {member} is not callable"
    return None


def _writable() -> list[Format]:
    return [fmt for fmt in formats() if callable(getattr(fmt, "write", None))]


def writer_for(path: Path) -> Callable[[Recording, Path], object] | None:
    """The ``write`` of the first format that can be written and has ``path``'s suffix."""
    suffix = path.suffix.lower()
    fmt = next((fmt for fmt in _writable() if suffix in fmt.suffixes), None)
    write: Callable[[Recording, Path], object] | None = getattr(fmt, "write", None)
    return write


def written_suffixes() -> list[str]:
    """The suffixes of the formats that can be written, in the order of ``formats()``."""
    return list(dict.fromkeys(suffix for fmt in _writable() for suffix in fmt.suffixes))


def known() -> str:
    """Every format ``load`` reads, with what it is: the words errors list them in (a format's
    ``what`` may hold parentheses of its own, so none are put around it)."""
    return "; ".join(f"{fmt.name}: {fmt.what}" for fmt in formats())


def unrecognised(path: Path, why: str) -> RecordingError:
    """The error for a file no format recognises: what was wrong, and every format loopnb reads."""
    return RecordingError(
        f"{why}. loopnb reads {known()}. To read it as one of them, name it: "
        "load(path, format=NAME), or --format NAME on the command line",
        path=path,
    )


def _marks(name: str) -> Mapping[str, Mark] | None:
    marks: Mapping[str, Mark] | None = getattr(named(name), "marks", None)
    return marks


read_marks_with(_marks)  # the audit, below this layer, learns what each format's statuses mean


def from_pydantic_ai(messages: Any, *, injected: Injected = None, **kwargs: Any) -> Recording:
    """A recording of a pydantic-ai run's messages (``result.all_messages()``, the list
    ``capture_run_messages()`` holds after a failure, or their JSON). ``injected``: what
    ``loopnb.inject`` put into the run (the wrapped agent's ``injections``), marked by call id."""
    return marked(shipped("pydantic-ai").from_memory(messages, **kwargs), injected)


def from_inspect(log: Any, *, injected: Injected = None, **kwargs: Any) -> Recording:
    """A recording of an Inspect AI ``EvalLog`` (one run per sample); ``injected`` as for
    ``from_pydantic_ai``."""
    return marked(shipped("inspect").from_memory(log, **kwargs), injected)


def from_otel(spans: Any, *, injected: Injected = None, **kwargs: Any) -> Recording:
    """A recording of OpenTelemetry SDK spans (``ReadableSpan``s, e.g. an in-memory exporter's);
    ``injected`` as for ``from_pydantic_ai``."""
    return marked(shipped("otlp").from_memory(spans, **kwargs), injected)


def from_openai_agents(spans: Any, *, injected: Injected = None, **kwargs: Any) -> Recording:
    """A recording of OpenAI Agents SDK spans and traces (objects, or their ``export()`` dicts);
    ``injected`` as for ``from_pydantic_ai``."""
    return marked(shipped("openai-agents").from_memory(spans, **kwargs), injected)


Injected = Iterable[Any] | Mapping[str, str] | None
"""What ``loopnb.inject`` put into a run: a wrapped target's ``injections`` (each with a
``call_id`` and a ``label``), or ``{call_id: label}``."""


def marked(recording: Recording, injected: Injected) -> Recording:
    """``recording`` with each call ``injected`` names marked with its fault's label (the
    ``injected`` column of its turns and events); a call id the run does not hold is left out."""
    from loopnb.record import Recording

    if injected is None:
        return recording
    if isinstance(injected, Mapping):
        labels = {str(k): str(v) for k, v in injected.items()}
    else:
        entries: Iterable[Any] = injected
        labels = {str(i.call_id): str(i.label) for i in entries if getattr(i, "call_id", None)}
    if not labels:
        return recording
    events: list[Event] = [
        dataclasses.replace(e, injected=labels[e.result.call_id])
        if isinstance(e, ToolDispatched) and e.result.call_id in labels
        else e
        for e in recording.event_objects
    ]
    meta = {k: v for k, v in recording.meta.items() if k not in ("path",)}
    return Recording.from_events(events, meta=meta)
