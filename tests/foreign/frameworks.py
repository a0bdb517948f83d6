"""What the tests of another framework's live runs need: the framework installed, or a skip that
says so, except in its CI lane.

Each framework is tested in a lane of its own (``.ci/frameworks.txt``) that installs only what it
needs; the main lane has none of them and reads their committed goldens instead. A lane sets
``LOOPNB_REQUIRE_FRAMEWORK`` to its framework's name (several: separated by commas or spaces), and
there a missing package fails the tests instead of skipping them: a broken install must not pass.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

REQUIRE = "LOOPNB_REQUIRE_FRAMEWORK"


def required(framework: str) -> bool:
    """Whether ``LOOPNB_REQUIRE_FRAMEWORK`` names ``framework``."""
    names = os.environ.get(REQUIRE, "").replace(",", " ").split()
    return framework in names


def need(framework: str, *modules: str) -> None:
    """Import ``modules`` (what ``framework``'s live tests use), or skip the test module saying
    which is missing; fail instead when ``LOOPNB_REQUIRE_FRAMEWORK`` names ``framework``."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            reason = f"{framework} is not installed ({module}: {exc}); its lane in .ci/frameworks.txt runs it"
            if required(framework):
                pytest.fail(f"{REQUIRE} names {framework} but {reason}", pytrace=False)
            pytest.skip(reason, allow_module_level=True)


def last_result(body: dict[str, Any]) -> str:
    """The tool result the last message of a chat-completions request gave the model."""
    message = body["messages"][-1]
    assert message["role"] == "tool", message
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content)


def newer_than(lane: str, module: str, feature: str) -> Any:
    """``module``, which the oldest release a lane installs lacks: skipped, saying so, only in that
    lane (``LOOPNB_REQUIRE_FRAMEWORK`` names it); anywhere else its absence is a failure."""
    if required(lane):
        return pytest.importorskip(module, reason=f"{feature} is newer than the {lane} lane's release")
    return importlib.import_module(module)
