"""The modest plan ``FallibleModel`` derives from a task when it is given none.

Each path-like or quoted token of the task is fed to a tool with one required string parameter:
a path to one that reads files, a phrase to one that does not.
"""

from __future__ import annotations

from collections.abc import Sequence

from loopnb.engine._messages import ToolCall, ToolSpec
from loopnb.engine.models import _mistakes as slips
from loopnb.engine.models._tokens import PATH_TOKEN, quoted

_MAX_PLAN = 3


def derive_plan(task: str, tools: Sequence[ToolSpec]) -> list[ToolCall]:
    """Up to three calls, one per token of the task that some advertised tool can take."""
    single = [t for t in tools if _one_string_parameter(t)]
    phrases = quoted(task)
    paths = [t for t in PATH_TOKEN.findall(task) if not any(t in q for q in phrases)]
    tokens = [(p, True) for p in paths]
    tokens += [(q, PATH_TOKEN.fullmatch(q) is not None) for q in phrases]
    plan: list[ToolCall] = []
    for token, is_path in tokens:
        tool = _pick_tool(single, is_path)
        if tool is not None and len(plan) < _MAX_PLAN:
            param = slips.required_fields(tool)[0]
            candidate = ToolCall(tool.name, {param: token})
            if candidate not in plan:
                plan.append(candidate)
    return plan


def _one_string_parameter(spec: ToolSpec) -> bool:
    required = slips.required_fields(spec)
    props = slips.schema_properties(spec)
    return len(required) == 1 and slips.json_type(props.get(required[0], {})) == "string"


def _pick_tool(tools: list[ToolSpec], is_path: bool) -> ToolSpec | None:
    def looks_like_files(spec: ToolSpec) -> bool:
        words = f"{spec.name} {slips.required_fields(spec)[0]}".lower()
        return any(w in words for w in ("path", "file", "read", "open"))

    # A path may go to any one-string tool; a phrase never goes to a file reader.
    preferred = [t for t in tools if looks_like_files(t) == is_path]
    candidates = preferred or (tools if is_path else [])
    return candidates[0] if candidates else None
