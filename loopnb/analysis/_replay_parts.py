"""The parts of a replay engine that stand in for a recorded run's code.

- ``ReplayTool``: one per recorded tool name (a ``RecordedTool``: under the name as recorded, even
  one ``@tool`` refuses). It answers each call with what the recording holds for it, in the form
  the engine classifies as it did: a success returns the text, a tool error raises ``ToolError``, a
  panic raises an exception with the same payload, a timeout waits until the engine's timeout
  fires, and invalid arguments are refused by its argument check (``_replay_args``).
- ``replay_hook``: keeps the tape's position (the call being dispatched), repeats the recorded
  vetoes and fires the run's cancel token where the recorded run was cancelled.
- ``RecordedRecovery``: answers each failure with the decision the recording holds for it;
  ``Tracked`` wraps any strategy so the tape knows which attempt a retry is.
- ``recorded_done``: rejects the final replies the recorded done-check rejected, for its reason.
- ``PacedModel``: a ``ScriptedModel`` of the recorded replies (``scripted_from``) that moves the
  tape to the recorded turn and the clock to the recorded time of each step.
"""

from __future__ import annotations

import asyncio
import string
from collections.abc import Callable, Sequence
from typing import Any

from loopnb.analysis._replay_args import forged_error, shape_schema
from loopnb.analysis._tape import Tape
from loopnb.engine import HookContext, Tool, ToolError
from loopnb.engine._messages import ModelReply, ToolCall, ToolSpec, Transcript
from loopnb.engine._recovery import AskUser, Decision, Fail, Failure, RecoveryStrategy, Retry, Skip
from loopnb.engine._texts import UNKNOWN_PAYLOAD, panic_prefix
from loopnb.engine.models._scripted import ScriptedModel, Step

Answer = str | ToolError
"""A fixed answer for every call of a tool: a success text, or a ``ToolError`` to fail with."""


class ReplayedPanic(Exception):
    """Raised by a replay tool where the recorded tool panicked, with the recorded payload."""


class RecordedTool(Tool):
    """A tool under the name the recorded run gave it, whatever that name is.

    A replay's tools never reach a model's API (its model is the recorded replies), so a name only
    another framework takes (``files.read``, ``mcp:search``) is kept as recorded: the replay's texts
    name the tool as the recording does, exactly as loopnb's engine words them.
    """

    __slots__ = ()
    _any_name = True


class ReplayTool(RecordedTool):
    """A recorded tool, answering from the recording (or with a fixed ``answer`` for every call).

    Args:
        name: the tool's name.
        tape: the recording and the replay's position in it.
        timeout: the replay engine's tool timeout (a recorded timeout waits for it to fire).
        error_text: a template for the text of this tool's errors (``{error}`` and the call's
            arguments), as ``SweepConfig.error_text`` takes.
        answer: answer every call with this instead of the recording.
    """

    __slots__ = ("_answer", "_errors", "_tape", "_template", "_timeout")

    def __init__(
        self,
        name: str,
        tape: Tape,
        *,
        timeout: float | None,
        error_text: str | None = None,
        answer: Answer | None = None,
    ) -> None:
        async def replayed() -> str:
            return await self._replay()

        super().__init__(replayed, name=name, description=f"{name}, replayed from a recording")
        self._tape = tape
        self._timeout = timeout
        self._template = error_text
        self._answer = answer
        self._errors: dict[str, Any] = {}
        refusals = tape.results_of(name, "invalid_arguments")
        schema = shape_schema(refusals[0].content) if refusals else None
        if schema is not None:
            self.spec = ToolSpec(name=name, description=self.description, parameters=schema)
        for result in refusals:
            self._errors.setdefault(result.content, forged_error(self, result.content))

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The engine's argument check: refuse as recorded, else take anything (the recorded tool
        checked them; the replay answers from the record)."""
        tape = self._tape
        tape.arguments = arguments
        if self._answer is None:
            recorded = tape.recorded(self.name, arguments)
            if recorded is not None and recorded.result.producer == "invalid_arguments":
                error = self._errors.get(recorded.result.content)
                if error is not None:
                    raise error
        return {}

    async def _replay(self) -> str:
        tape, name = self._tape, self.name
        arguments = tape.arguments if tape.arguments is not None else {}
        if self._answer is not None:
            if isinstance(self._answer, ToolError):
                raise ToolError(self._rewritten(str(self._answer), arguments))
            return self._answer
        recorded = tape.recorded(name, arguments)
        if recorded is None:
            raise ToolError(
                f"what-if: the recording holds no result for {name}({_shown(arguments)}); "
                f"pass tools={{{name!r}: ...}} to answer it"
            )
        result, took = recorded.result, recorded.dispatched.latency_ms / 1000.0
        if tape.exact(recorded):
            tape.advance_to(recorded.dispatched.at)
        else:
            tape.clock.advance(max(took, 0.0))
        timeout = self._timeout
        if result.producer == "timeout" or (timeout is not None and took > timeout):
            if timeout is None:
                raise ToolError(
                    f"what-if: {name} timed out in the recording ({result.content}); with no timeout "
                    "its result is not recorded"
                )
            await asyncio.Event().wait()  # the engine's timeout fires: the one real wait of a replay
        if result.producer is None:
            return result.content
        if result.producer == "tool_panic":
            prefix = panic_prefix(name)
            if result.content.startswith(prefix):
                payload = result.content[len(prefix) :]
                raise ReplayedPanic() if payload == UNKNOWN_PAYLOAD else ReplayedPanic(payload)
        raise ToolError(self._rewritten(result.content, arguments))

    def _rewritten(self, text: str, arguments: dict[str, Any]) -> str:
        if self._template is None:
            return text
        return self._template.format_map(_Fields({**arguments, "error": text}))

    def __repr__(self) -> str:
        return f"<ReplayTool {self.name!r}>"


class _Fields(dict[str, Any]):
    """A template's values: a field the call did not send stays as it is written (``{path}``)."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def template_fields(template: str) -> set[str]:
    """The fields a template names (``{error}``, ``{path}``)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _shown(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= 120 else text[:117] + "..."


def replay_hook(tape: Tape) -> Callable[[ToolCall, HookContext], str | None]:
    """The replay's first hook: follow the call, repeat a recorded veto or cancellation."""

    def replay(call: ToolCall, ctx: HookContext) -> str | None:
        tape.begin(call)
        tape.cancel_if_here()
        return tape.vetoes.get((tape.turn, call.id))

    return replay


class RecordedRecovery:
    """The recorded run's recovery: each failure answered with the decision the recording holds.

    A decision answers only the failure it was made for (the same attempt of the same call,
    failing with the same text); any other failure is answered ``Fail``, with a note saying so.
    """

    def __init__(self, tape: Tape, shown_as: str | None) -> None:
        self._tape = tape
        self._shown_as = shown_as

    def decide(self, failure: Failure, attempt: int, max_attempts: int) -> Decision:
        tape = self._tape
        call_id = failure.original_call.id
        decided = tape.decision(call_id, attempt)
        failed = tape.dispatched(call_id, attempt)
        if decided is None or failed is None or failed.result.content != failure.result.content:
            return Fail(note="what-if: the recording holds no recovery decision for this failure")
        match decided.decision:
            case "retry":
                return Retry(decided.corrected_input, delay=decided.delay, note=decided.note)
            case "skip":
                return Skip(decided.note)
            case "ask_user":
                return AskUser(decided.note)
            case "fail":
                return Fail(decided.note)

    def __repr__(self) -> str:
        return self._shown_as or "RecordedRecovery()"


class Tracked:
    """A recovery strategy whose retries move the tape to the attempt they make (and fire the
    cancel token where the recorded run was cancelled before a retry)."""

    def __init__(self, strategy: RecoveryStrategy, tape: Tape) -> None:
        self.strategy = strategy
        self._tape = tape

    def decide(self, failure: Failure, attempt: int, max_attempts: int) -> Decision:
        decision = self.strategy.decide(failure, attempt, max_attempts)
        if isinstance(decision, Retry):
            self._tape.retrying(attempt + 1)
            self._tape.cancel_if_here()
        return decision

    def __repr__(self) -> str:
        return repr(self.strategy)


def recorded_done(tape: Tape) -> Callable[[str], str | None]:
    """The recorded done-check: reject the final reply of a turn it rejected, for its reason."""

    def done(text: str) -> str | None:
        return tape.rejections.get(tape.turn)

    return done


class PacedModel:
    """A ``ScriptedModel`` of recorded steps that moves the tape to each step's turn, and the
    replay's clock to when the step was recorded, as it plays it."""

    def __init__(self, script: ScriptedModel, steps: Sequence[tuple[int, float, Step]], tape: Tape) -> None:
        self.name = script.name
        self.script = script
        self._when = [(turn, at) for turn, at, _ in steps]
        self._tape = tape

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        tape = self._tape
        played = len(self._when) - self.script.remaining
        if 0 <= played < len(self._when):
            turn, at = self._when[played]
            tape.turn = turn
            tape.advance_to(at)
        reply = await self.script.complete(messages, tools)
        if reply.tool_calls:
            tape.cancel_if_here(reply.tool_calls[0].id)  # cancelled as the reply came, in the recording
        return reply

    def __repr__(self) -> str:
        return f"PacedModel({self.script!r})"
