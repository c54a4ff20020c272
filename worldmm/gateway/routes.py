"""The HTTP API as data: each route template.yaml declares, its Lambda handler and its request/response models.

The gateway serves exactly these routes and the OpenAPI document is generated from them; a test checks the
table against template.yaml, so a route added to one and not the other fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from worldmm.capture.models import (
    EndSessionResult,
    PresignAudioRequest,
    PresignFramesRequest,
    PresignResult,
    StartSessionResult,
)
from worldmm.chat.models import (
    ChatRequest,
    ChatResponse,
    ChatsPage,
    ListChatsRequest,
    MessagesPage,
    MessagesQuery,
    VerboseChatResponse,
)


@dataclass(frozen=True)
class ApiRoute:
    """One `Method Path` of the HTTP API (path parameters in template.yaml's `{name}` form)."""

    function: str  # template.yaml logical id of the function serving it
    method: str
    path: str
    handler: str  # module holding `lambda_handler`
    summary: str
    response: type[BaseModel]
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    status: int = 200

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "CaptureStartFunction", "POST", "/sessions", "api.capture.start.app",
        "Start a capture session", StartSessionResult, status=201,
    ),
    ApiRoute(
        "CaptureFramesFunction", "POST", "/sessions/{id}/frames", "api.capture.frames.app",
        "Upload URLs for a window's frames", PresignResult, body=PresignFramesRequest,
    ),
    ApiRoute(
        "CaptureAudioFunction", "POST", "/sessions/{id}/audio", "api.capture.audio.app",
        "The upload URL for a window's audio chunk", PresignResult, body=PresignAudioRequest,
    ),
    ApiRoute(
        "CaptureEndFunction", "POST", "/sessions/{id}/end", "api.capture.end.app",
        "End a session and close its open windows", EndSessionResult,
    ),
    ApiRoute(
        "ChatFunction", "POST", "/memories/chat", "api.memories.chat.app",
        "Answer a question from the caller's memories", ChatResponse, body=ChatRequest,
    ),
    ApiRoute(
        "ChatVerboseFunction", "POST", "/memories/chat/verbose", "api.memories.chat_verbose.app",
        "Answer with the agent's trace and citations", VerboseChatResponse, body=ChatRequest,
    ),
    ApiRoute(
        "ChatsListFunction", "POST", "/chats/list", "api.chats.list.app",
        "The caller's chats, newest activity first", ChatsPage, body=ListChatsRequest,
    ),
    ApiRoute(
        "ChatMessagesFunction", "GET", "/chats/messages", "api.chats.messages.app",
        "A chat's messages, newest first", MessagesPage, query=MessagesQuery,
    ),
)
