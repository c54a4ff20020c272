"""Ingest: a window (or a recorded session, or pre-captioned text) written as memory, and its upkeep."""
