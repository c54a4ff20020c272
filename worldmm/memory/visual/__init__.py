"""visual package."""
