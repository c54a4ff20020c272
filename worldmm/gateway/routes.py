"""The HTTP API as data: each route template.yaml declares, its Lambda handler and its request/response models.

The gateway serves exactly these routes and the OpenAPI document is generated from them; a test checks the
table against template.yaml, so a route added to one and not the other fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from worldmm.capture.models import (
    SESSION_ID_PATTERN,
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
from worldmm.ingest.events import SESSION_ID_PATTERN as INGEST_SESSION_ID_PATTERN
from worldmm.timeline.models import (
    MEMORY_ID_PATTERN,
    EntityCorrected,
    EntityCorrectionRequest,
    ForgetSpanQuery,
    ForgetSpanResult,
    MemoriesPage,
    MemoriesQuery,
    MemoryDetail,
    SessionStatus,
)


@dataclass(frozen=True)
class ApiLink:
    """An OpenAPI link: a value of this route's answer (or request) that another route takes."""

    name: str
    target: str  # the function (operation) it leads to
    parameters: tuple[tuple[str, str], ...]  # (target parameter, runtime expression)
    description: str


@dataclass(frozen=True)
class ApiRoute:
    """One `Method Path` of the HTTP API (path parameters in template.yaml's `{name}` form).

    `errors` are the 4xx/5xx statuses its handler answers besides those every route can (401 from the
    authorizer, 500 from `handlers.http.common.resolve`); `body_required` is whether an absent body is a 400.
    """

    function: str  # template.yaml logical id of the function serving it
    method: str
    path: str
    handler: str  # module holding `lambda_handler`
    summary: str
    response: type[BaseModel]
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    status: int = 200
    errors: tuple[int, ...] = ()
    body_required: bool = True
    path_patterns: tuple[tuple[str, str], ...] = ()  # (path parameter, the pattern of the ids it names)
    links: tuple[ApiLink, ...] = ()

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def operation_id(self) -> str:
        return self.function.removesuffix("Function")


def _session_link(name: str, target: str, expression: str, what: str) -> ApiLink:
    return ApiLink(name, target, (("id", expression),), what)


_FROM_STARTED = "$response.body#/sessionId"
_FROM_PATH = "$request.path.id"
_SESSION = (("id", SESSION_ID_PATTERN),)
_READ_CHAT = ApiLink(
    "ReadMessages", "ChatMessagesFunction", (("chat_id", "$response.body#/chat_id"),),
    "The messages of the chat this answer was saved to",
)


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "CaptureStartFunction", "POST", "/sessions", "handlers.http.capture.start.app",
        "Start a capture session", StartSessionResult, status=201, errors=(429,),
        links=(
            _session_link("UploadFrames", "CaptureFramesFunction", _FROM_STARTED, "Upload URLs for its frames"),
            _session_link("UploadAudio", "CaptureAudioFunction", _FROM_STARTED, "Upload URLs for its audio"),
            _session_link("EndSession", "CaptureEndFunction", _FROM_STARTED, "End it"),
            _session_link("IngestStatus", "SessionStatusFunction", _FROM_STARTED, "Where its ingest stands"),
        ),
    ),
    ApiRoute(
        "CaptureFramesFunction", "POST", "/sessions/{id}/frames", "handlers.http.capture.uploads.app",
        "Upload URLs for a window's frames", PresignResult, body=PresignFramesRequest,
        errors=(400, 403, 404, 409, 429), path_patterns=_SESSION,
        links=(
            _session_link("UploadAudio", "CaptureAudioFunction", _FROM_PATH, "The same session's audio"),
            _session_link("EndSession", "CaptureEndFunction", _FROM_PATH, "End the session"),
        ),
    ),
    ApiRoute(
        "CaptureAudioFunction", "POST", "/sessions/{id}/audio", "handlers.http.capture.uploads.app",
        "The upload URL for a window's audio chunk", PresignResult, body=PresignAudioRequest,
        errors=(400, 403, 404, 409, 429), path_patterns=_SESSION,
        links=(_session_link("EndSession", "CaptureEndFunction", _FROM_PATH, "End the session"),),
    ),
    ApiRoute(
        "CaptureEndFunction", "POST", "/sessions/{id}/end", "handlers.http.capture.end.app",
        "End a session and close its open windows", EndSessionResult,
        errors=(403, 404), path_patterns=_SESSION,
    ),
    ApiRoute(
        "ChatFunction", "POST", "/memories/chat", "handlers.http.memories.chat.app",
        "Answer a question from the caller's memories", ChatResponse, body=ChatRequest,
        errors=(400, 403, 429, 503), links=(_READ_CHAT,),
    ),
    ApiRoute(
        "ChatVerboseFunction", "POST", "/memories/chat/verbose", "handlers.http.memories.chat.app",
        "Answer with the agent's trace and citations", VerboseChatResponse, body=ChatRequest,
        errors=(400, 403, 429, 503), links=(_READ_CHAT,),
    ),
    ApiRoute(
        "ChatsListFunction", "POST", "/chats/list", "handlers.http.chats.list.app",
        "The caller's chats, newest activity first", ChatsPage, body=ListChatsRequest,
        errors=(400,), body_required=False,
        links=(
            ApiLink(
                "ReadMessages", "ChatMessagesFunction", (("chat_id", "$response.body#/conversations/0/id"),),
                "The messages of the newest chat on this page",
            ),
        ),
    ),
    ApiRoute(
        "ChatMessagesFunction", "GET", "/chats/messages", "handlers.http.chats.messages.app",
        "A chat's messages, newest first", MessagesPage, query=MessagesQuery,
        errors=(400, 403),
        links=(
            ApiLink(
                "NextPage", "ChatMessagesFunction",
                (("chat_id", "$request.query.chat_id"), ("cursor", "$response.body#/next_cursor")),
                "The next (older) page of the same chat",
            ),
        ),
    ),
    ApiRoute(
        "MemoriesListFunction", "GET", "/memories", "handlers.http.memories.list.app",
        "The caller's memories overlapping a time span, oldest first", MemoriesPage, query=MemoriesQuery,
        errors=(400,),
        links=(
            ApiLink(
                "ReadMemory", "MemoryGetFunction", (("id", "$response.body#/memories/0/id"),),
                "The first memory of this page, with its facts and media",
            ),
            ApiLink(
                "NextPage", "MemoriesListFunction",
(("cursor", "$response.body#/next_cursor"),),
                "The next (later) page of the same listing",
            ),
        ),
    ),
    ApiRoute(
        "MemoryGetFunction", "GET", "/memories/{id}", "handlers.http.memories.get.app",
        "One of the caller's memories with its entities, facts and media URLs", MemoryDetail,
        errors=(403, 404), path_patterns=(("id", MEMORY_ID_PATTERN),),
    ),
    ApiRoute(
        "EntityCorrectFunction", "PATCH", "/entities/{id}", "handlers.http.entities.correct.app",
        "Rename one of the caller's entities, or merge it into the one that already has that name",
        EntityCorrected, body=EntityCorrectionRequest, errors=(400, 403, 404),
        path_patterns=(("id", MEMORY_ID_PATTERN),),
    ),
    ApiRoute(
        "SessionStatusFunction", "GET", "/sessions/{id}", "handlers.http.sessions.status.app",
        "A session's ingest status: its windows and how many are pending, complete, failed or waiting for GPU",
        SessionStatus, errors=(403, 404), path_patterns=(("id", INGEST_SESSION_ID_PATTERN),),
    ),
    ApiRoute(
        "MemoriesForgetFunction", "DELETE", "/memories", "handlers.http.memories.forget.app",
        "Erase everything the caller recorded in [from, to) from every store; later windows of it stay out",
        ForgetSpanResult, query=ForgetSpanQuery, errors=(400,),
    ),
    ApiRoute(
        "SessionForgetFunction", "DELETE", "/sessions/{id}", "handlers.http.sessions.forget.app",
        "Erase one of the caller's capture sessions from every store; later windows of it stay out",
        ForgetSpanResult, errors=(403, 404), path_patterns=(("id", INGEST_SESSION_ID_PATTERN),),
    ),
)
