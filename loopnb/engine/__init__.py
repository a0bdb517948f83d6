"""The agent loop: soft errors the model reads, hard errors that end the run.

Imports only the standard library and pydantic; nothing from the notebook layer.
"""

from loopnb.engine.breakers import CircuitBreaker
from loopnb.engine.cancel import CancelToken
from loopnb.engine.clock import Clock, FakeClock, SystemClock
from loopnb.engine.context import ContextBudget
from loopnb.engine.dispatch import HookContext
from loopnb.engine.errors import (
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
from loopnb.engine.events import EVENT_ADAPTER
from loopnb.engine.loop import Engine, RunSteps
from loopnb.engine.messages import Message, ModelReply, ToolCall, ToolResult, ToolSpec, Usage
from loopnb.engine.models.anthropic import AnthropicModel
from loopnb.engine.models.base import Model
from loopnb.engine.models.fallback import FallbackChain
from loopnb.engine.models.fallible import FallibleModel
from loopnb.engine.models.openai import OpenAIChatModel
from loopnb.engine.models.scripted import FunctionModel, ScriptedModel
from loopnb.engine.recovery import (
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
from loopnb.engine.result import RunResult
from loopnb.engine.safety import ConvergenceDetector, LoopDetector
from loopnb.engine.tools import Tool, ToolRegistry, tool
from loopnb.engine.turns import Turn, turns_of

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
