"""Every Lambda entry point: `http/` (API Gateway routes, one `app.py` each, and MCP) and `events/`
(SQS, S3, schedules, invokes)."""
