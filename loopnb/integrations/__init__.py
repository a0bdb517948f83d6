"""Hooks that let other frameworks' agents save their runs where loopnb can read them.

Each integration is a subpackage named after its framework, and imports that framework only
when one of its names is first used, so this package stays light:

- ``loopnb.integrations.openai_agents.JsonlProcessor``: an OpenAI Agents SDK tracing processor
  that appends every finished span and trace to a JSON Lines file ``loopnb.load`` reads.
"""

__all__ = []  # each integration is a subpackage: loopnb.integrations.<framework>
