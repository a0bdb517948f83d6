"""Readers of other frameworks' runs: one module per framework, each ending with its ``FORMAT``.

pydantic-ai message histories, Inspect AI logs, OpenAI Agents SDK traces, OpenTelemetry spans and
LangGraph checkpoints, each read into loopnb's turns (ok / soft / hard by the channel table's
producers, with ``source_status`` keeping what the source said). ``loopnb.fileformats`` above lists
these formats, sniffs files and loads them; nothing here is imported by name from outside.
"""

__all__ = []  # the formats are reached through loopnb.fileformats
