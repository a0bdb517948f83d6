"""Every text the engine words for the model: one builder per row, and nothing else builds them.

The spec's "exact words" (``is_error=True``; ``x`` is the tool's name), and the builder of each:

=======================  ======================================================  ==========================
producer                 the model reads                                         built by
=======================  ======================================================  ==========================
``not_advertised``       ``tool 'x' is not available``                           ``not_available_text``
``registry_miss``        ``Tool not found: x. Available: a, b, c...``            ``registry_miss_text``
                         (+ `` Did you mean 'a'?`` with the suggestion layer)
``tool_panic``           ``Tool "x" panicked: <message>`` (the exception's       ``panic_text``
                         string payload, else ``(unknown payload)``)
``timeout``              ``Tool 'x' timed out after Ns`` (``N`` with ``:g``)     ``timeout_text``
``breaker_open``         ``tool temporarily unavailable: circuit breaker open``  ``BREAKER_OPEN_TEXT``
``loop_refusal``         ``dispatch refused before execution: <detection>``,     ``refusal_text``,
                         the detection reading ``loop detected: ...``            ``detection_text``
``hook_veto``            ``blocked by policy: <the hook's reason>``; a hook      ``veto_text``,
                         that raised: ``hook 'h' raised X: ...``                 ``hook_raised_text``
``invalid_arguments``    ``invalid arguments for tool 'x':``, each wrong field,  ``invalid_arguments_text``
                         then ``expected arguments: {a: integer}``; arguments    ``unchecked_arguments_text``
                         that are no JSON object say so                          ``not_an_object_text``
                                                                                 ``not_json_text``
``completion_rejected``  ``answer rejected: <the done-check's reason>``          ``rejection_text``
``convergence_warning``  ``convergence detected: your last N answers ...``       ``convergence_text``
``tool_error``           the tool's own text, verbatim                           (the tool)
``recovery_gave_up``     the original failing result, verbatim                   (never reworded)
=======================  ======================================================  ==========================

The texts are a contract (``tests/engine/test_channels.py`` checks each row): the model reasons
about them, and the recording layer reads them back (a replay rebuilds a veto, a panic or invalid
arguments from what the model read), so it takes the prefixes from here rather than repeating them.
``max_turns_text`` words the ``LoopDetected`` a user's ``max_turns`` raises, which the audit tells
apart by its words when no events are at hand.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from loopnb.engine._errors import exception_text, shown, text_of

if TYPE_CHECKING:
    from pydantic import ValidationError

    from loopnb.engine._tools import Tool

BREAKER_OPEN_TEXT = "tool temporarily unavailable: circuit breaker open"
UNKNOWN_PAYLOAD = "(unknown payload)"
"""A panic's message when the exception carries no string."""
REFUSAL = "dispatch refused before execution: "
"""A loop refusal's words, before the detection."""
VETO = "blocked by policy: "
"""A hook veto's words, before the hook's own reason."""
REJECTED = "answer rejected: "
"""A rejected final answer's words, before the done-check's reason."""
HOOK_SAID_NO = "vetoed by a hook"
"""The reason of a hook that answered ``False`` (no reason of its own)."""
CHECK_SAID_NO = "the answer did not pass the completion check"
"""The reason of a done-check that answered ``False``."""
EXPECTED = "expected arguments: "
"""The last line of an invalid-arguments text, before the shape the tool expects."""
CONVERGED = "convergence detected"
MAX_TURNS_REACHED = "the run reached max_turns"


def not_available_text(name: str) -> str:
    """The brain's pre-answer to a name never advertised: nothing is dispatched."""
    return f"tool '{name}' is not available"


def suggest_name(name: str, names: Iterable[str]) -> str | None:
    """The registered name closest to ``name`` (difflib's ratio, cut-off 0.6), if any."""
    best = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return best[0] if best else None


def registry_miss_text(name: str, names: list[str], *, suggestions: bool) -> str:
    """``Tool not found: x. Available: a, b, c`` (+ ``...`` past 8, + `` Did you mean 'a'?``)."""
    listed = ", ".join(names[:8]) + ("..." if len(names) > 8 else "")
    text = f"Tool not found: {name}. Available: {listed}"
    if suggestions:
        best = suggest_name(name, names)
        if best is not None:
            text += f" Did you mean '{best}'?"
    return text


def panic_prefix(name: str) -> str:
    """A panic's words before its message."""
    return f'Tool "{name}" panicked: '


def panic_text(name: str, exc: BaseException) -> str:
    """``Tool "x" panicked: <message>``; the message is the exception's string payload."""
    try:
        args = exc.args
        payload = str.__str__(args[0]) if args and isinstance(args[0], str) else UNKNOWN_PAYLOAD
    except Exception:  # an ``args`` of its own that raises
        payload = UNKNOWN_PAYLOAD
    return panic_prefix(name) + payload


def timeout_text(name: str, seconds: float) -> str:
    """The timeout middleware's answer; seconds formatted with ``:g`` (``0.3s``, ``5s``)."""
    return f"Tool '{name}' timed out after {seconds:g}s"


def refusal_text(detection: str) -> str:
    """The loop detector's refusal before execution, with its detection."""
    return REFUSAL + detection


def detection_text(key: str, count: int, text: str) -> str:
    """The loop detector's finding: the call (``key``) made ``count`` times in a row, this one
    included, the others failing as ``text`` (the count the view and the audit show too)."""
    failure = text if len(text) <= 200 else text[:197] + "..."
    return (
        f"loop detected: {key} is being repeated ({count} identical calls in a row) "
        f"after failing the same way: {failure}; change the call or try another approach"
    )


def veto_text(reason: str) -> str:
    """A hook's veto, with the hook's own reason."""
    return VETO + reason


def hook_raised_text(hook: object, exc: BaseException) -> str:
    """The reason of a hook that raised: a broken hook fails closed, and says so."""
    return f"hook {_hook_name(hook)} raised {type(exc).__name__}: {exception_text(exc)}"


def _hook_name(hook: object) -> str:
    """The hook's ``__name__`` (quoted), or its repr when it has none."""
    try:
        name = getattr(hook, "__name__", None)
    except Exception:
        name = None
    return repr(name) if isinstance(name, str) else shown(hook)


def rejection_text(reason: str) -> str:
    """A final answer the done-check rejected, with its reason."""
    return REJECTED + reason


def check_raised_text(exc: BaseException) -> str:
    """The reason of a done-check that raised: a broken check rejects, and says why."""
    return f"the completion check raised {type(exc).__name__}: {exception_text(exc)}"


def convergence_text(n: int, similarity: float, threshold: float) -> str:
    """The convergence detector's finding over the last ``n`` answers."""
    return (
        f"{CONVERGED}: your last {n} answers are nearly identical "
        f"(similarity {similarity:.2f} >= {threshold:.2f}); repeating the same answer "
        "will not be accepted, try a different approach"
    )


def max_turns_text(max_turns: int) -> str:
    """The ``LoopDetected`` message of a run that reached the user's ``max_turns``."""
    return f"{MAX_TURNS_REACHED}={max_turns} without a final reply"


def invalid_arguments_header(name: str) -> str:
    """The first line of every invalid-arguments text."""
    return f"invalid arguments for tool '{name}':"


def not_an_object_text(name: str, got: object, sent: object) -> str:
    """Arguments that are not a JSON object: ``got`` is what they are (parsed), ``sent`` what came."""
    return (
        f"{invalid_arguments_header(name)} expected a JSON object of named "
        f"arguments, got {type(got).__name__} {shown(sent)}"
    )


def not_json_text(name: str, error: Exception, sent: str) -> str:
    """Arguments sent as a string that is not JSON."""
    return (
        f"{invalid_arguments_header(name)} they are not valid JSON ({error}); "
        f"got {shown(sent)}; expected a JSON object"
    )


def invalid_arguments_text(tool: Tool, error: ValidationError) -> str:
    """Name each wrong field, what was expected and what came, then the expected shape."""
    lines = [invalid_arguments_header(tool.name)]
    for item in error.errors(include_url=False):
        field = ".".join(text_of(p) for p in item["loc"]) or "(arguments)"
        if item["type"] == "missing":
            got = "nothing"
        else:
            got = f"{shown(item.get('input'))} ({type(item.get('input')).__name__})"
        lines.append(f"- {field}: {item['msg']}; got {got}")
    lines.append(EXPECTED + shape(tool.spec.parameters))
    return "\n".join(lines)


def unchecked_arguments_text(tool: Tool, error: BaseException) -> str:
    """The arguments could not even be checked: validating them raised (an argument whose
    ``__hash__`` or ``__eq__`` raises, met by an enum's lookup, say). Names what it raised, then the
    expected shape."""
    return (
        f"{invalid_arguments_header(tool.name)} checking them raised "
        f"{type(error).__name__}: {exception_text(error)}\n"
        f"{EXPECTED}{shape(tool.spec.parameters)}"
    )


def shape(schema: dict[str, Any]) -> str:
    """``{name: kind, ...}``: the arguments a tool expects, as the model is told after a mistake."""
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    defs = schema.get("$defs", {})
    parts = []
    for key, prop in props.items():
        parts.append(f"{key}: {_kind(prop, defs)}" + ("" if key in required else " (optional)"))
    return "{" + ", ".join(parts) + "}"


def _kind(prop: Any, defs: dict[str, Any], depth: int = 0) -> str:
    """One argument's kind: its JSON type, an enum's choices (``'a' | 'b'``), ``array of ...``, a union; a
    ``$ref`` (an Enum or a nested model) is followed to its definition."""
    if not isinstance(prop, dict) or depth > 4:
        return "any"
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, dict):
            return _kind({**target, **{k: v for k, v in prop.items() if k != "$ref"}}, defs, depth + 1)
    if isinstance(prop.get("enum"), list):
        choices = [repr(v) for v in prop["enum"]]
        return " | ".join(choices[:8]) + (" | ..." if len(choices) > 8 else "")
    if "const" in prop:
        return repr(prop["const"])
    options = prop.get("anyOf")
    if isinstance(options, list) and options:
        return " | ".join(_kind(option, defs, depth + 1) for option in options)
    kind = prop.get("type")
    if kind == "array" and "items" in prop:
        return f"array of {_kind(prop['items'], defs, depth + 1)}"
    if kind == "object" and isinstance(prop.get("title"), str):
        return f"object ({prop['title']})"
    return str(kind) if kind else "any"
