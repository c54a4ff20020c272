"""McpFunction: the MCP endpoint as a Lambda behind the HTTP API's JWT authorizer (template.yaml).

API Gateway has verified the bearer token before the function runs; the principal is the authorizer's
`sub` claim in the event, as for every other route. Each invocation runs the stateless Streamable HTTP app
(JSON responses) once, in-process, on the v2 event's method, headers and body.
"""

from __future__ import annotations

import base64
from contextvars import ContextVar
from typing import Any

import anyio
import httpx
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from mcp.server.auth.provider import AccessToken

from worldmm.gateway.mcp import MCP_PATH, build_mcp_server, mcp_asgi_app
from worldmm.gateway.settings import GatewaySettings
from worldmm.observability import instrument
from worldmm.snapstart import register_runtime_hooks

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)
register_runtime_hooks()  # SnapStart: no connection in the snapshot, fresh randomness after a restore

_claims: ContextVar[dict[str, Any] | None] = ContextVar("authorizer_claims", default=None)


class AuthorizerVerifier:
    """Accepts the request's token as the principal the JWT authorizer verified (its `sub`)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = _claims.get() or {}
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            return None
        return AccessToken(token=token, client_id=sub, subject=sub, scopes=[])


async def _handle(event: dict[str, Any]) -> dict[str, Any]:
    from worldmm.services import get_services

    services = get_services()
    domain = (event.get("requestContext") or {}).get("domainName") or "localhost"
    server = build_mcp_server(  # each tool call on the caller's database cell, resolved once per call
        services.for_user,
        services.settings_of(GatewaySettings),
        public_url=f"https://{domain}",
        verifier=AuthorizerVerifier(),
    )
    app = mcp_asgi_app(server, host="0.0.0.0")
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
    method = ((event.get("requestContext") or {}).get("http") or {}).get("method", "POST")
    async with server.session_manager.run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"https://{domain}") as client:
            response = await client.request(method, MCP_PATH, headers=event.get("headers") or {}, content=body)
    return {
        "statusCode": response.status_code,
        "headers": {k: v for k, v in response.headers.items() if k.lower() != "content-length"},
        "body": response.text,
        "isBase64Encoded": False,
    }


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One MCP request (JSON-RPC over Streamable HTTP, stateless) for the authorizer's `sub`."""
    claims = ((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt", {}).get("claims")
    token = _claims.set(claims if isinstance(claims, dict) else None)
    try:
        return anyio.run(_handle, event)
    finally:
        _claims.reset(token)
