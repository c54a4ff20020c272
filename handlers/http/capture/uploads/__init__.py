"""Capture API handlers (API Gateway HTTP API, JWT authorizer)."""
