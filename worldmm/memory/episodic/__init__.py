"""episodic package."""
