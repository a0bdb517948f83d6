"""The agent loop: soft errors the model reads, hard errors that end the run.

Imports only the standard library and pydantic; nothing from the notebook layer.
"""

import loopnb._face as _face
from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._cancel import CancelToken
from loopnb.engine._clock import Clock, FakeClock, SystemClock
from loopnb.engine._context import ContextBudget
from loopnb.engine._dispatch import HookContext
from loopnb.engine._drivers import RunSteps
from loopnb.engine._engine import Engine
from loopnb.engine._errors import (
    Cancelled,
    ContextExceeded,
    FallbackExhausted,
    LoopDetected,
    LoopError,
    LoopnbWarning,
    ModelAuthError,
    ModelContextOverflow,
    ModelUnavailable,
    ToolError,
    ToolRecoveryExhausted,
    UserInputRequired,
)
from loopnb.engine._events import EVENT_ADAPTER
from loopnb.engine._messages import Message, ModelReply, ToolCall, ToolResult, ToolSpec, Usage
from loopnb.engine._recovery import (
    MAX_RECOVERY_ATTEMPTS,
    MAX_RETRY_DELAY,
    AnalyseAndCorrect,
    AskUser,
    Fail,
    Failure,
    RecoveryStrategy,
    Retry,
    RetryWithBackoff,
    Skip,
)
from loopnb.engine._result import RunResult
from loopnb.engine._safety import ConvergenceDetector, LoopDetector
from loopnb.engine._tools import Tool, ToolRegistry, tool
from loopnb.engine._turns import Turn, turns_of
from loopnb.engine._watch import SafetySignal, SafetySystem, SafetyWatch
from loopnb.engine.models import (
    AnthropicModel,
    FallbackChain,
    FallibleModel,
    FunctionModel,
    Model,
    OpenAIChatModel,
    ScriptedModel,
)

__all__ = [
    "EVENT_ADAPTER",
    "MAX_RECOVERY_ATTEMPTS",
    "MAX_RETRY_DELAY",
    "AnalyseAndCorrect",
    "AnthropicModel",
    "AskUser",
    "CancelToken",
    "Cancelled",
    "CircuitBreaker",
    "Clock",
    "ContextBudget",
    "ContextExceeded",
    "ConvergenceDetector",
    "Engine",
    "Fail",
    "Failure",
    "FakeClock",
    "FallbackChain",
    "FallbackExhausted",
    "FallibleModel",
    "FunctionModel",
    "HookContext",
    "LoopDetected",
    "LoopDetector",
    "LoopError",
    "LoopnbWarning",
    "Message",
    "Model",
    "ModelAuthError",
    "ModelContextOverflow",
    "ModelReply",
    "ModelUnavailable",
    "OpenAIChatModel",
    "RecoveryStrategy",
    "Retry",
    "RetryWithBackoff",
    "RunResult",
    "RunSteps",
    "SafetySignal",
    "SafetySystem",
    "SafetyWatch",
    "ScriptedModel",
    "Skip",
    "SystemClock",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRecoveryExhausted",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "Usage",
    "UserInputRequired",
    "tool",
    "turns_of",
]

_face.publish(globals())
