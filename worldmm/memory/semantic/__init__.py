"""semantic package."""
