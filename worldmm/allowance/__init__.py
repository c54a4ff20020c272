"""Per-user allowances of paid (model-calling) work: a token bucket per user (issue 64)."""
