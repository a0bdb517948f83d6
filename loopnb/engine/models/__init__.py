"""Models: the protocol, the test doubles, the embedded default and real adapters."""
