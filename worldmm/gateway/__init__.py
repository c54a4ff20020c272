"""The local gateway: every HTTP route of template.yaml, the upload target and the MCP endpoint, in one app."""
