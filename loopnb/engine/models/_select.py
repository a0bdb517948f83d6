"""Choosing the brain: a real model when one is configured, the embedded default otherwise.

A model spec names a provider and a model: ``"openai:gpt-4o-mini"``,
``"anthropic:claude-haiku-4-5"``, ``"ollama:qwen2.5"``, or ``"fallible"`` for the embedded
default. The environment chooses when the caller does not:

- ``LOOPNB_MODEL``: the spec; unset means the embedded ``FallibleModel``. An API key alone
  never switches to a real model, so a key in your shell never spends tokens by surprise;
- ``LOOPNB_BASE_URL``: the server for that spec (else ``OPENAI_BASE_URL`` /
  ``ANTHROPIC_BASE_URL``, else the provider's own);
- ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``: the keys, read by the adapters.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from loopnb.engine.models._protocol import Model
from loopnb.engine.models._remote import ModelConfigError

ENV_MODEL = "LOOPNB_MODEL"
ENV_BASE_URL = "LOOPNB_BASE_URL"

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
"""The model a bare provider spec (``"openai"``) means."""

LOCAL_SERVERS = {
    "ollama": "http://127.0.0.1:11434/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "vllm": "http://127.0.0.1:8000/v1",
}
"""OpenAI-compatible servers a spec can name, at their usual local address."""

_EMBEDDED = ("fallible", "default", "embedded")


def model_from_spec(
    spec: str, *, base_url: str | None = None, api_key: str | None = None, **options: Any
) -> Model:
    """Build the model a spec names; ``options`` go to a real adapter (``timeout=``, ...).

    Raises ``ModelConfigError`` for a spec it cannot read or a missing key, and ``ImportError``
    naming the extra to install when the provider's client is missing.
    """
    provider, _, name = spec.strip().partition(":")
    provider, name = provider.strip().lower(), name.strip()
    if provider in _EMBEDDED and not name:
        return embedded_default()
    if provider == "openai":
        from loopnb.engine.models._openai import OpenAIChatModel

        return OpenAIChatModel(
            name or DEFAULT_MODELS["openai"], base_url=base_url, api_key=api_key, **options
        )
    if provider == "anthropic":
        from loopnb.engine.models._anthropic import AnthropicModel

        return AnthropicModel(
            name or DEFAULT_MODELS["anthropic"], base_url=base_url, api_key=api_key, **options
        )
    if provider in LOCAL_SERVERS:
        if not name:
            raise ModelConfigError(f"say which model {provider} serves: {provider}:<model name>")
        from loopnb.engine.models._openai import OpenAIChatModel

        return OpenAIChatModel(
            name,
            base_url=base_url or LOCAL_SERVERS[provider],
            api_key=api_key,
            name=f"{provider}:{name}",
            **options,
        )
    known = ", ".join(["openai:<model>", "anthropic:<model>"] + [f"{p}:<model>" for p in LOCAL_SERVERS])
    raise ModelConfigError(f"unknown model spec {spec!r}; expected fallible, {known}")


def from_env(spec: str | None = None, *, base_url: str | None = None, **options: Any) -> Model:
    """The model to run: ``spec`` / ``base_url`` when given (the CLI's ``--model`` and
    ``--base-url``), else ``$LOOPNB_MODEL`` / ``$LOOPNB_BASE_URL``, else the embedded default.

    ``options`` go to a real adapter only; the embedded default takes none.
    """
    spec = spec or os.environ.get(ENV_MODEL) or None
    base_url = base_url or os.environ.get(ENV_BASE_URL) or None
    if spec is None:
        if base_url is not None:
            raise ModelConfigError(
                f"a base URL ({base_url}) is set but no model: "
                f"set {ENV_MODEL}=openai:<model> (or pass --model)"
            )
        return embedded_default()
    return model_from_spec(spec, base_url=base_url, **options)


def embedded_default() -> Model:
    """The embedded ``FallibleModel``: no key, no network, seeded and deterministic."""
    try:
        # Imported by name: the embedded model is optional for this module and its tests.
        fallible = importlib.import_module("loopnb.engine.models._fallible")
    except ImportError as exc:
        raise ModelConfigError(
            f"no real model configured (set {ENV_MODEL}, e.g. openai:gpt-4o-mini) and the "
            f"embedded FallibleModel is not available: {exc}"
        ) from exc
    model: Model = fallible.FallibleModel()
    return model
