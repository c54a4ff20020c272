"""gpu package."""
