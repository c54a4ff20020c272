"""The MCP server behind API Gateway."""
