"""What a dependency says today, asked of it at run time, for the tests that must quote it.

loopnb passes some of its dependencies' words on (pydantic's message for each wrong argument,
inside loopnb's own "invalid arguments" text). A test that wrote those words out would break the
day the dependency rewords them; these helpers ask the installed version instead.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model


def pydantic_message(annotation: Any, value: object) -> str:
    """pydantic's message for ``value`` checked as ``annotation`` (its first error's ``msg``)."""
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"])
    raise AssertionError(f"pydantic accepts {value!r} as {annotation!r}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    needed: int


def missing_message() -> str:
    """pydantic's message for a required field that did not come (``Field required`` today)."""
    return _message_of("missing", {})


def extra_message() -> str:
    """pydantic's message for a field nobody asked for (``Extra inputs are not permitted`` today)."""
    return _message_of("extra_forbidden", {"needed": 1, "other": 2})


def validation_error_text(model_name: str, **fields: tuple[Any, object]) -> str:
    """``str()`` of the ``ValidationError`` pydantic raises for a model ``model_name`` whose fields
    are ``name=(annotation, value)``, each given that value."""
    model = create_model(model_name, **{name: (annotation, ...) for name, (annotation, _) in fields.items()})
    try:
        model.model_validate({name: value for name, (_, value) in fields.items()})
    except ValidationError as exc:
        return str(exc)
    raise AssertionError(f"pydantic accepts {fields!r}")


def _message_of(kind: str, data: dict[str, Any]) -> str:
    try:
        _Strict.model_validate(data)
    except ValidationError as exc:
        return next(str(item["msg"]) for item in exc.errors() if item["type"] == kind)
    raise AssertionError(f"pydantic accepts {data!r}")
