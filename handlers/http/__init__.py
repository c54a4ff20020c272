"""HTTP entry points behind API Gateway (and the local gateway): one `app.py` per route, plus MCP."""
