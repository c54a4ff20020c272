"""chat package."""
