"""Models: the protocol, the test doubles, the embedded default and the real adapters.

``from_env()`` reads ``LOOPNB_MODEL`` (e.g. ``openai:gpt-4o-mini``, ``anthropic:claude-...``,
``ollama:llama3.1``) and ``LOOPNB_BASE_URL``; with neither set it returns the embedded
``FallibleModel``. A key in your shell alone never switches to a paid model.
``to_openai_messages`` and ``to_anthropic_request`` show what an adapter sends on the wire.
"""

import loopnb._face as _face
from loopnb.engine.models._anthropic import AnthropicModel, to_anthropic_request
from loopnb.engine.models._fallback import FallbackChain
from loopnb.engine.models._fallible import FallibleModel
from loopnb.engine.models._openai import OpenAIChatModel, to_openai_messages
from loopnb.engine.models._protocol import Model
from loopnb.engine.models._remote import ModelConfigError
from loopnb.engine.models._scripted import FunctionModel, ScriptedModel
from loopnb.engine.models._select import from_env, model_from_spec

__all__ = [
    "AnthropicModel",
    "FallbackChain",
    "FallibleModel",
    "FunctionModel",
    "Model",
    "ModelConfigError",
    "OpenAIChatModel",
    "ScriptedModel",
    "from_env",
    "model_from_spec",
    "to_anthropic_request",
    "to_openai_messages",
]

_face.publish(globals())
