"""The text embedder port and its providers."""
