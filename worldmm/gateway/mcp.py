"""The MCP endpoint (Model Context Protocol, Streamable HTTP): the caller's memories as tools.

Tools: `search_memories` (one memory type, a query, an optional time range → memories with their time and
segment id), `ask` (→ the answer with its citations) and `forget_me` (erase everything of the caller, asked
for in so many words: `confirm` must be FORGET_CONFIRMATION). Every call is the bearer token's `sub` and
only that user's memories: the user id comes from the verified token, never from a tool argument.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl, BaseModel, Field

from worldmm.config import Settings
from worldmm.errors import Unauthenticated
from worldmm.gateway.auth import decode_token
from worldmm.retrieval.models import Citation, MemoryKind

if TYPE_CHECKING:
    from worldmm.services import Services

MCP_PATH = "/mcp"


class JwtVerifier:
    """MCP token verifier: the same JWT check as the HTTP routes; the token's `sub` is the principal."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = decode_token(token, self._settings)
        except Unauthenticated:
            return None
        return AccessToken(
            token=token, client_id=claims["sub"], subject=claims["sub"], scopes=[], expires_at=int(claims["exp"])
        )


class Memory(BaseModel):
    """One memory found: what it says, when, and the segment it comes from."""

    id: str
    memory_type: MemoryKind
    text: str
    score: float
    start_time: datetime | None = None
    end_time: datetime | None = None
    segment_id: str | None = None


class SearchResult(BaseModel):
    memories: list[Memory] = Field(default_factory=list)
    note: str | None = None


class AskResult(BaseModel):
    answer: str
    citations: list[Citation] = Field(default_factory=list)


FORGET_CONFIRMATION = "forget everything"
"""What `forget_me`'s `confirm` must say: an agent cannot erase a memory by a stray call."""


class ForgetResult(BaseModel):
    accepted: bool
    message: str


def caller() -> str:
    """The verified token's subject for this call."""
    token = get_access_token()
    if token is None or not token.subject:
        raise Unauthenticated("missing identity")
    return token.subject


def search_memories(
    services: Services,
    user_id: str,
    memory_type: MemoryKind,
    query: str,
    since: datetime | None = None,
    until: datetime | None = None,
) -> SearchResult:
    """`user_id`'s memories of one type for `query`, as known at `until`, that end at or after `since`."""
    from worldmm.retrieval.agent import default_retrievers

    retriever = default_retrievers()[memory_type]
    result = retriever(services, user_id, query, now=until or datetime.now(UTC))
    items = [
        m for m in result.items if since is None or m.end_time is None or m.end_time >= _aware(since)
    ]
    memories = [
        Memory(
            id=m.id,
            memory_type=m.memory_type,
            text=m.text,
            score=m.score,
            start_time=m.start_time,
            end_time=m.end_time,
            segment_id=Citation.of(m).segment_id,
        )
        for m in items
    ]
    return SearchResult(memories=memories, note=result.reason)


def ask(services: Services, user_id: str, question: str) -> AskResult:
    """The answer to `question` from `user_id`'s memories, with the memories it cites."""
    from worldmm.retrieval.agent import answer_question

    answer = answer_question(services, user_id, question)
    return AskResult(answer=answer.answer, citations=answer.trace.citations)


def forget_me(services: Services, user_id: str, confirm: str) -> ForgetResult:
    """Erase everything of `user_id` (the ForgetUserFunction, invoked as operators do) once confirmed."""
    if confirm.strip().lower() != FORGET_CONFIRMATION:
        return ForgetResult(accepted=False, message=f'nothing erased: confirm must be "{FORGET_CONFIRMATION}"')
    services.invoker.invoke_async(services.settings.forget_function_name, {"userId": user_id, "requestedBy": "mcp"})
    return ForgetResult(accepted=True, message="erasing every memory of yours; an audit record without content remains")


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def build_mcp_server(
    services: Callable[[], Services], settings: Settings, *, public_url: str, verifier: TokenVerifier | None = None
) -> MCPServer:
    """The MCP server over the memories `services()` reaches, authenticated by the bearer JWT."""
    server: MCPServer = MCPServer(
        "worldmm-memory",
        instructions="Search and ask the caller's personal memories (captured by camera glasses).",
        token_verifier=verifier or JwtVerifier(settings),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(public_url),
            resource_server_url=AnyHttpUrl(public_url.rstrip("/") + MCP_PATH),
            validate_token_resource=False,
        ),
    )

    @server.tool(
        name="search_memories",
        description="Search one memory (episodic, semantic or visual) for a query; optional ISO 8601 time range.",
    )
    async def _search(
        memory_type: MemoryKind, query: str, since: datetime | None = None, until: datetime | None = None
    ) -> SearchResult:
        user_id = caller()
        return await anyio.to_thread.run_sync(
            lambda: search_memories(services(), user_id, memory_type, query, since, until)
        )

    @server.tool(name="ask", description="Answer a question from the memories, with the memories it cites.")
    async def _ask(question: str) -> AskResult:
        user_id = caller()
        return await anyio.to_thread.run_sync(lambda: ask(services(), user_id, question))

    @server.tool(
        name="forget_me",
        description=f'Erase ALL of the caller\'s memories, chats and uploads, irreversibly. Only when the user asks '
        f'for it explicitly; confirm must be "{FORGET_CONFIRMATION}".',
    )
    async def _forget(confirm: str) -> ForgetResult:
        user_id = caller()
        return await anyio.to_thread.run_sync(lambda: forget_me(services(), user_id, confirm))

    return server


def transport_security(public_url: str) -> TransportSecuritySettings:
    """DNS-rebinding protection for a gateway reached at `public_url`: the Host and Origin headers must name
    it (or this machine's loopback), whatever address it listens on; the SDK turns the check off by itself
    for any host but loopback."""
    reached = urlsplit(public_url)
    origin = f"{reached.scheme}://{reached.netloc}"
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[reached.netloc, "127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=[origin, "http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def mcp_asgi_app(server: MCPServer, *, host: str, public_url: str | None = None) -> Any:
    """The Streamable HTTP app (stateless, JSON responses) serving `server` at /mcp; with `public_url`, only
    requests addressed to it (or to loopback) are served (`transport_security`)."""
    return server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        host=host,
        transport_security=transport_security(public_url) if public_url else None,
    )
