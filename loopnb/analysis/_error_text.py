"""A tool whose soft errors read a template: what ``SweepConfig(error_text=...)`` and
``what_if(error_text=...)`` vary (``{error}`` and the call's arguments filled in)."""

from __future__ import annotations

import functools
import string
from dataclasses import replace
from typing import Any

from loopnb.engine import Tool, ToolError, ToolResult


def with_error_text(tool: Tool, template: str, where: str = "") -> Tool:
    """``tool`` whose soft errors read ``template`` (``{error}`` and the call's arguments filled in)."""
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    allowed = {"error", *tool.args_model.model_fields}
    if fields - allowed:
        raise ValueError(
            f"SweepConfig {where}: error_text for {tool.name!r} uses {', '.join(sorted(fields - allowed))}; "
            f"a template may use {', '.join(sorted(allowed))}"
        )
    fn = tool.fn

    def text(error: str, arguments: dict[str, Any]) -> str:
        return template.format(**{**arguments, "error": error})

    def rewrite(result: Any, arguments: dict[str, Any]) -> Any:
        if isinstance(result, ToolResult) and result.is_error:
            return replace(result, content=text(result.content, arguments))
        return result

    if tool.is_async:

        @functools.wraps(fn)
        async def wrapped_async(**arguments: Any) -> Any:
            try:
                return rewrite(await fn(**arguments), arguments)
            except ToolError as exc:
                raise ToolError(text(str(exc), arguments)) from None

        return Tool(wrapped_async, name=tool.name, description=tool.description)

    @functools.wraps(fn)
    def wrapped(**arguments: Any) -> Any:
        try:
            return rewrite(fn(**arguments), arguments)
        except ToolError as exc:
            raise ToolError(text(str(exc), arguments)) from None

    return Tool(wrapped, name=tool.name, description=tool.description)
