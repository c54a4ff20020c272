"""The graph cache port and its adapters (Redis, in-process)."""
