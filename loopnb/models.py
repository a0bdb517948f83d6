"""Choosing a model: the embedded default, or a real one when you configure it.

``from_env()`` reads ``LOOPNB_MODEL`` (e.g. ``openai:gpt-4o-mini``, ``anthropic:claude-...``,
``ollama:llama3.1``) and ``LOOPNB_BASE_URL``; with neither set it returns the embedded
``FallibleModel``. A key in your shell alone never switches to a paid model.
"""

from loopnb.engine.models._anthropic import AnthropicModel
from loopnb.engine.models._fallible import FallibleModel
from loopnb.engine.models._openai import OpenAIChatModel
from loopnb.engine.models._remote import ModelConfigError
from loopnb.engine.models._select import from_env, model_from_spec

__all__ = [
    "AnthropicModel",
    "FallibleModel",
    "ModelConfigError",
    "OpenAIChatModel",
    "from_env",
    "model_from_spec",
]
