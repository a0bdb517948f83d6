"""Tools: ``@tool`` turns a typed function into a ``Tool``; ``ToolRegistry`` holds them by name."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, TypeVar, overload

from pydantic import BaseModel, ConfigDict, create_model

from loopnb.engine._messages import ToolSpec
from loopnb.engine._texts import not_an_object_text, not_json_text

_F = TypeVar("_F", bound=Callable[..., Any])


class Tool:
    """A function the model can call, with the pydantic model that validates its arguments.

    Calling the ``Tool`` object calls the function directly (handy in notebooks and tests).
    """

    __slots__ = ("_simple", "args_model", "description", "fn", "is_async", "name", "spec")

    marks_faults: ClassVar[bool] = False
    """Whether the tool may inject a fault (``loopnb.inject`` wrapped it): the engine then calls
    ``marked(mark)`` for each attempt and records the fault's label the mark holds afterwards."""

    _any_name: ClassVar[bool] = False
    """Whether any name is taken, not only one a model's API takes: true only of tools that never
    reach a model's API, such as a replay's tools, which keep the names a recorded run gave them."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None):
        if not callable(fn):
            raise TypeError(f"tool: expected a function, got {type(fn).__name__}")
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if not self._any_name and not usable_name(self.name):
            raise ValueError(f"tool name {self.name!r} is not usable: expected letters, digits, '_' or '-'")
        self.is_async = inspect.iscoroutinefunction(fn)
        self.description = description if description is not None else _summary(fn)
        self.args_model = _args_model(fn, self.name)
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.spec = ToolSpec(name=self.name, description=self.description, parameters=schema)
        self._simple = _simple_signature(self.args_model)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises pydantic's ``ValidationError`` when they do not fit.

        Arguments that already have exactly the declared scalar types skip pydantic (the result
        is the same); anything else goes through the full validation.
        """
        simple = self._simple
        if simple is not None:
            pairs, types, required = simple
            if len(arguments) == len(pairs):  # every field given: check each declared one
                for key, kind in pairs:
                    if type(arguments.get(key)) is not kind:
                        break
                else:
                    return arguments
            elif len(arguments) < len(pairs):  # some left to their defaults
                for key, value in arguments.items():
                    if type(value) is not types.get(key):
                        break
                else:
                    if required.issubset(arguments):
                        return arguments
        return self.args_model.model_validate(arguments).__dict__

    def marked(self, mark: FaultMark) -> Callable[..., Any]:
        """The function to call for one attempt, telling ``mark`` what it injected (only tools
        whose ``marks_faults`` is true are asked; a plain tool's is its ``fn``)."""
        return self.fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        kind = "async " if self.is_async else ""
        return f"<{kind}Tool {self.name!r}>"


class FaultMark:
    """What one attempt of a fault-injecting tool says it did: the label of the fault it injected
    (``None``: the tool ran as it is), and the seconds the call takes (``wait``: a hang's or a slow
    call's), which the engine waits on the run's clock after the call, under its timeout, instead of
    the tool sleeping. Passed in, not kept anywhere shared, so calls running at once (on threads,
    in tasks) each have their own."""

    __slots__ = ("label", "wait")

    def __init__(self) -> None:
        self.label: str | None = None
        self.wait = 0.0


def usable_name(name: str) -> bool:
    """Whether a model's API takes ``name`` for a tool: letters, digits, ``_`` and ``-`` only."""
    return name.isidentifier() or (bool(name) and all(c.isalnum() or c in "_-" for c in name))


_SCALARS = (str, int, float, bool)


def _simple_signature(
    model: type[BaseModel],
) -> tuple[tuple[tuple[str, type], ...], dict[str, type], frozenset[str]] | None:
    """(name, type) pairs, types by name and required names when every field is a plain scalar."""
    types: dict[str, type] = {}
    for name, field in model.model_fields.items():
        if field.annotation not in _SCALARS or field.metadata:
            return None
        types[name] = field.annotation  # type: ignore[assignment]
    required = frozenset(n for n, f in model.model_fields.items() if f.is_required())
    return tuple(types.items()), types, required


def _summary(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


def _args_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an annotation that does not resolve is the author's bug: say where
        raise TypeError(f"tool {name!r}: could not resolve its type hints ({exc})") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"tool {name!r}: parameter {param.name!r} is *args/**kwargs; a tool's arguments "
                "must be named parameters with type hints so the model can be shown a schema"
            )
        if param.name not in hints:
            raise TypeError(
                f"tool {name!r}: parameter {param.name!r} has no type hint; loopnb needs one to "
                "build the JSON schema the model is shown and to validate what it sends"
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


@overload
def tool(fn: _F, /) -> Tool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[_F], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a ``Tool``.

    Its type hints become the JSON schema advertised to the model and validate what the model
    sends; its docstring's first paragraph is the description. Use bare (``@tool``) or with
    options (``@tool(name="read", description="...")``).
    """
    if fn is not None:
        return Tool(fn, name=name, description=description)

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name, description=description)

    return wrap


class ToolRegistry:
    """Tools by name, in registration order. Two tools with one name is an error."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.lookup = self._tools.get  # ``get`` without a Python call: the dispatcher's hot path
        for item in tools:
            self.register(item)

    def register(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (a plain typed function is wrapped with ``@tool``)."""
        t = item if isinstance(item, Tool) else Tool(item)
        if t.name in self._tools:
            raise ValueError(
                f"two tools are named {t.name!r}: {self._tools[t.name].fn!r} and {t.fn!r}; "
                "tool names must be unique (pass name=... to @tool to rename one)"
            )
        self._tools[t.name] = t
        return t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names})"


def parse_arguments(tool_name: str, arguments: object) -> dict[str, Any] | str:
    """Arguments as a dict, or the soft error text saying why they are not a JSON object.

    ``arguments`` is what the model sent: a dict or a JSON string, or anything at all from a model
    that built its reply without validation.
    """
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):  # a model built its reply without validation
        return not_an_object_text(tool_name, arguments, arguments)
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (json.JSONDecodeError, RecursionError) as exc:
        return not_json_text(tool_name, exc, arguments)
    if not isinstance(value, dict):
        return not_an_object_text(tool_name, value, arguments)
    return value
