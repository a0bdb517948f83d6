"""Regenerate the OpenAI Agents SDK goldens under ``tests/golden/foreign/openai-agents/``.

Runs the six scripted samples of ``tests/foreign/openai_agents_samples.py`` on the SDK's real
models (no request leaves the process) and keeps what their tracing processors saw:

- ``chat.jsonl``: the Chat Completions model, written by ``JsonlProcessor`` (one export a line);
- ``responses.json``: the Responses model, as one JSON list of ``export()`` dicts.

Span ids and times differ from one run to the next; the tests check what they mean::

    PYTHONPATH=. python tests/golden/foreign/make_openai_agents.py
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from loopnb.integrations.openai_agents import JsonlProcessor
from tests.foreign.openai_agents_samples import Collect, run_samples

HERE = Path(__file__).parent / "openai-agents"


def main() -> None:
    logging.disable(logging.ERROR)  # the SDK logs each tool failure the samples provoke
    HERE.mkdir(exist_ok=True)
    chat = HERE / "chat.jsonl"
    chat.unlink(missing_ok=True)
    processor = JsonlProcessor(chat)
    run_samples("chat", [processor])
    processor.shutdown()
    collected = Collect()
    run_samples("responses", [collected])
    exports = [item.export() for item in collected.items]
    (HERE / "responses.json").write_text(json.dumps(exports, indent=1) + "\n", encoding="utf-8")
    for path in sorted(HERE.iterdir()):
        print(f"{path.relative_to(HERE.parent)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
