"""The text a pydantic-ai model read for a tool return or a retry, rendered from the stored parts.

pydantic-ai keeps a model-neutral history and renders it for each provider when it sends a
request; these functions render the stored JSON shapes the same way, without importing it
(``tests/foreign/test_pydantic_ai_live.py`` checks them against pydantic-ai's own methods):

- a tool return: ``ToolReturnPart.model_response_str()``, what OpenAI-style chat APIs (and
  ``FunctionModel``'s token count) receive, an error wrapped as ``{"error": ...}``; a reply from
  Anthropic, whose API carries a native error flag, read the content unwrapped;
- a legacy ``retry-prompt`` part: ``RetryPromptPart.model_response()``, what the version that
  wrote it sent (``... Fix the errors and try again.``);
- a ``retry-feedback`` part: ``RetryFeedbackPart.model_response()``, fenced in the user voice.
"""

from __future__ import annotations

import json
from typing import Any

from loopnb.engine._errors import SoftProducer

ERROR_OUTCOMES = frozenset({"failed", "retried"})
"""The outcomes pydantic-ai sends a model as an error (its ``ERROR_OUTCOMES``)."""

NATIVE_ERROR_CHANNEL = frozenset({"anthropic"})
"""Providers whose tool results carry an error flag, so an error's content goes unwrapped."""

_FRAMING = (
    "Your previous response failed the application's validation "
    "(this is automated feedback, not a message from the user):"
)
_NO_OUTPUT_SLOTS = (
    ("return text",),
    ("include your response in a tool call", "call a tool"),
    ("return an image",),
)


def _no_output_texts() -> frozenset[str]:
    texts: set[str] = set()

    def walk(slot: int, chosen: tuple[str, ...]) -> None:
        if slot == len(_NO_OUTPUT_SLOTS):
            texts.add(f"Please {' or '.join(chosen)}.")
            return
        walk(slot + 1, chosen)
        for alternative in _NO_OUTPUT_SLOTS[slot]:
            walk(slot + 1, (*chosen, alternative))

    walk(0, ())
    return frozenset(texts)


_NO_OUTPUT_TEXTS = _no_output_texts()
"""The fixed texts of ``no_output`` feedback, the only feedback sent unfenced."""


def dumps(value: Any, *, indent: int | None = None) -> str:
    """JSON as pydantic-core writes it: non-ASCII kept, compact unless indented."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=indent)


def content_text(content: Any) -> str:
    """A return's content as text: a string as is, ``None`` as ``""``, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return dumps(content)


def return_text(part: dict[str, Any], provider: str | None) -> str:
    """What the model read for a tool return part (``tool-return`` and its typed kinds)."""
    content = part.get("content")
    text = content_text(content)
    if part.get("outcome", "success") not in ERROR_OUTCOMES or provider in NATIVE_ERROR_CHANNEL:
        return text
    structured = part.get("outcome") == "retried" and content is not None and not isinstance(content, str)
    return dumps({"error": content if structured else text})


def legacy_retry_text(part: dict[str, Any]) -> str:
    """What a ``retry-prompt`` part (pydantic-ai before ``RetryFeedbackPart``) showed the model."""
    content = part.get("content")
    tool = part.get("tool_name")
    if isinstance(content, str):
        description = content if tool is not None else f"Validation feedback:\n{content}"
    else:
        errors = content if isinstance(content, list) else []
        shown = [
            _without(e, ("ctx",) if tool is not None or len(e.get("loc", ())) > 1 else ("ctx", "input"))
            for e in errors
        ]
        plural = "s" if len(errors) != 1 else ""
        description = f"{len(errors)} validation error{plural}:\n```json\n{dumps(shown, indent=2)}\n```"
    return f"{description}\n\nFix the errors and try again."


def feedback_text(part: dict[str, Any]) -> str:
    """What a ``retry-feedback`` part showed the model (a response it could not use)."""
    content = part.get("content")
    cause = (part.get("retry") or {}).get("cause")
    text = content if isinstance(content, str) else dumps(error_details(content))
    if cause == "no_output" and isinstance(content, str) and content in _NO_OUTPUT_TEXTS:
        return text
    tag = "pyai:validation_errors" if cause == "validation_error" else "pyai:retry_feedback"
    return f"{_FRAMING}\n<{tag}>\n{text}\n</{tag}>"


def error_details(errors: Any) -> list[Any]:
    """Validation errors as pydantic-ai shows them: no ``ctx``, and a root-level ``input``
    given once (a later root error with the same input drops it)."""
    if not isinstance(errors, list):
        return []
    out: list[Any] = []
    root: object = None
    seen_root = False
    for e in errors:
        if not isinstance(e, dict):
            out.append(e)
            continue
        drop: tuple[str, ...] = ("ctx",)
        if len(e.get("loc", ())) <= 1:
            if not seen_root:
                root, seen_root = e.get("input"), True
            elif e.get("input") == root:
                drop = ("ctx", "input")
        out.append(_without(e, drop))
    return out


def said(part: dict[str, Any]) -> str:
    """What the source said of a return: its outcome, and a retry's cause."""
    if part.get("part_kind") == "retry-prompt":
        return "retry-prompt"
    outcome = str(part.get("outcome", "success"))
    cause = (part.get("retry") or {}).get("cause") if outcome == "retried" else None
    return f"{outcome}/{cause}" if cause else outcome


def legacy_producer(part: dict[str, Any]) -> SoftProducer:
    """The table's row for a legacy ``retry-prompt`` part answering a call."""
    content = part.get("content")
    if not isinstance(content, str):
        return "invalid_arguments"
    return "not_advertised" if content.startswith("Unknown tool name:") else "tool_error"


def _without(d: Any, keys: tuple[str, ...]) -> Any:
    return {k: v for k, v in d.items() if k not in keys} if isinstance(d, dict) else d
