"""The GPU worker's HTTP service: VLM2Vec encoding, OpenAI-compatible generation, health.

Models load once, in a background thread started with the app, so `/health` answers "loading" at
once and "ready" (or "failed") when loading ends; model endpoints answer 503 until then.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from fastapi import Depends, FastAPI, Header, HTTPException, Request, status
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from gpu_worker.auth import NonceLedger, SignResponses, health_proof, require_signature
from gpu_worker.batching import MicroBatcher
from gpu_worker.settings import WorkerSettings

if TYPE_CHECKING:
    from PIL.Image import Image
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from gpu_worker.model import Generator, VLM2VecEmbedder

logger = logging.getLogger("gpu_worker.app")

MIN_FRAME_SIDE = 2


# --- wire models -----------------------------------------------------------------------------------


class EncodeVideoRequest(BaseModel):
    """A clip: its frames in time order, each a base64 JPEG/PNG (a data: URL prefix is accepted)."""

    frames: list[str] = Field(min_length=1)


class EncodeTextRequest(BaseModel):
    """A retrieval query."""

    text: str = Field(min_length=1)


class EmbeddingResponse(BaseModel):
    embedding: list[float]
    dim: int
    model: str


class ImageURL(BaseModel):
    url: str


class ChatContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text", "image_url"]
    text: str | None = None
    image_url: ImageURL | None = None


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer"]
    content: str | list[ChatContentPart] | None = None


class ChatCompletionRequest(BaseModel):
    """The subset of OpenAI's chat completion request the worker honours; other fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[ChatMessageIn] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool = False


CHALLENGE_HEADER = "X-Worker-Challenge"
SERVED_SCOPE_KEY = "worldmm.served"
MAX_CHALLENGE_CHARS = 128


class HealthResponse(BaseModel):
    """Readiness, idleness (what the GPU controller stops an idle worker by) and, when challenged, a proof
    that this worker holds the shared key: HMAC-SHA256 over the caller's fresh challenge (`health_proof`), hex."""

    status: Literal["loading", "ready", "failed"]
    models: dict[str, str | None]
    error: str | None = None
    started_at: float
    last_request_at: float | None = None
    idle_s: float
    in_flight: int = 0
    requests_served: int = 0
    proof: str | None = None


def token_proof(token: str, challenge: str) -> str:
    """The proof of the worker key for the caller's fresh challenge (hex): the controller's check of whom it
    asks; a relayed proof answers another challenge, and no proof is ever a request signature."""
    return health_proof(token, challenge)


# --- state -----------------------------------------------------------------------------------------


@dataclass
class LoadedModels:
    """What a loader returns: the embedder and, when configured, a generator."""

    embedder: VLM2VecEmbedder
    generator: Generator | None = None


def load_models(settings: WorkerSettings) -> LoadedModels:
    """Load the VLM2Vec embedder and the optional generation model from local directories."""
    from gpu_worker.model import Generator, VLM2VecEmbedder

    embedder = VLM2VecEmbedder.load(settings)
    generator = Generator.load(settings, shared=embedder) if settings.generation_model_dir else None
    return LoadedModels(embedder, generator)


@dataclass
class WorkerState:
    settings: WorkerSettings
    status: Literal["loading", "ready", "failed"] = "loading"
    error: str | None = None
    models: LoadedModels | None = None
    device_lock: threading.Lock = field(default_factory=threading.Lock)
    video_batcher: MicroBatcher[list[Image], list[float]] | None = None
    text_batcher: MicroBatcher[str, list[float]] | None = None
    clock: Callable[[], float] = time.time
    started_at: float = 0.0
    last_request_at: float | None = None
    in_flight: int = 0
    requests_served: int = 0
    activity_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.started_at = self.clock()

    def begin_request(self) -> None:
        with self.activity_lock:
            self.in_flight += 1
            self.last_request_at = self.clock()

    def end_request(self) -> None:
        with self.activity_lock:
            self.in_flight -= 1
            self.requests_served += 1
            self.last_request_at = self.clock()

    def idle_s(self) -> float:
        """Seconds since the last model request began or ended (since start-up when none came); 0 while busy."""
        with self.activity_lock:
            if self.in_flight:
                return 0.0
            since = self.last_request_at if self.last_request_at is not None else self.started_at
        return max(0.0, self.clock() - since)

    def ready_models(self) -> LoadedModels:
        if self.status == "ready" and self.models is not None:
            return self.models
        detail = "models are loading" if self.status == "loading" else f"model load failed: {self.error}"
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail=detail, headers={"Retry-After": "10"})


# --- request size limit ----------------------------------------------------------------------------


class BodySizeLimit:
    """ASGI middleware: 413 for a body over `max_bytes`, by Content-Length or while streaming."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._reject(send)
                return
        received = 0
        too_large = False
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    too_large = True
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not response_started:
                await self._reject(send)
        except Exception:
            if too_large and not response_started:
                await self._reject(send)
            else:
                raise

    async def _reject(self, send: Send) -> None:
        response = JSONResponse(
            {"detail": f"request body over {self.max_bytes} bytes"},
            status_code=status.HTTP_413_CONTENT_TOO_LARGE,
        )
        await response({"type": "http"}, _empty_receive, send)


class _BodyTooLarge(Exception):
    pass


class ActivityTracker:
    """ASGI middleware: a request the `served` dependency counted as work ends as its last body byte is
    handed to the server (or it fails), so the idleness /health reports starts from the end of the last
    request — and a client holding the whole response never sees the worker still busy with it."""

    def __init__(self, app: ASGIApp, state: WorkerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        finished = False

        def finish() -> None:
            nonlocal finished
            if not finished and scope.get(SERVED_SCOPE_KEY):
                finished = True
                self.state.end_request()

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finish()
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        finally:
            finish()


async def _empty_receive() -> Message:
    return {"type": "http.disconnect"}


# --- decoding --------------------------------------------------------------------------------------


def decode_image(data: str, what: str, max_pixels: int) -> Image:
    """A base64 (or data: URL) image → RGB PIL image, or 400 naming `what`."""
    from PIL import Image as PILImage

    payload = data.split(",", 1)[1] if data.startswith("data:") else data
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail=f"{what} is not valid base64") from None
    try:
        with PILImage.open(io.BytesIO(raw)) as probe:
            width, height = probe.size
            if width * height > max_pixels:
                raise HTTPException(
                    status.HTTP_400_BAD_REQUEST, detail=f"{what} is larger than {max_pixels} px"
                )
            probe.verify()
        image = PILImage.open(io.BytesIO(raw))
        image.load()
    except HTTPException:
        raise
    except Exception:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail=f"{what} is not a decodable image") from None
    if min(image.size) < MIN_FRAME_SIDE or max(image.size) / min(image.size) > 200:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, detail=f"{what} has an unsupported size {image.size}"
        )
    return image.convert("RGB")


def _decode_frames(frames: list[str], max_pixels: int) -> list[Image]:
    return [decode_image(frame, f"frame {i}", max_pixels) for i, frame in enumerate(frames)]


# --- app -------------------------------------------------------------------------------------------


def create_app(
    settings: WorkerSettings | None = None,
    *,
    loader: Callable[[WorkerSettings], LoadedModels] = load_models,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The worker app; `loader` is what runs in the background at start-up (tests may wrap it), `clock` is
    the wall clock its idleness is measured by."""
    settings = settings or WorkerSettings()
    state = WorkerState(settings=settings, clock=clock)
    app = FastAPI(title="WorldMM GPU worker", lifespan=_lifespan(state, loader))
    app.state.settings = settings
    app.state.worker = state
    app.state.nonces = NonceLedger()
    app.add_middleware(SignResponses, settings=settings)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(ActivityTracker, state=state)

    def served(request: Request) -> None:
        """Dependency of the model endpoints (after the token check): this request is work; the middleware
        marks the worker busy until its response has been sent."""
        request.scope[SERVED_SCOPE_KEY] = True
        state.begin_request()

    _add_health(app, state)
    model_call = [Depends(require_signature), Depends(served)]
    _add_embedding_routes(app, state, model_call)
    _add_chat_route(app, state, model_call)
    return app


def _lifespan(
    state: WorkerState, loader: Callable[[WorkerSettings], LoadedModels]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start-up: the micro-batchers, and the models loading in a background thread (health says how far)."""
    settings = state.settings

    def run_videos(clips: list[list[Image]]) -> list[list[float]]:
        models = state.ready_models()
        with state.device_lock:
            return [row.tolist() for row in models.embedder.encode_videos(clips)]

    def run_texts(texts: list[str]) -> list[list[float]]:
        models = state.ready_models()
        with state.device_lock:
            return [row.tolist() for row in models.embedder.encode_texts(texts)]

    def load_in_background() -> None:
        try:
            state.models = loader(settings)
            state.status = "ready"
            logger.info("models ready: %s", _model_names(state))
        except Exception as exc:
            state.error = f"{type(exc).__name__}: {exc}"
            state.status = "failed"
            logger.exception("model load failed")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        wait_s = settings.batch_wait_ms / 1000
        state.video_batcher = MicroBatcher(run_videos, settings.batch_size, wait_s)
        state.text_batcher = MicroBatcher(run_texts, settings.batch_size, wait_s)
        loading = threading.Thread(target=load_in_background, name="model-loader", daemon=True)
        loading.start()
        try:
            yield
        finally:
            await state.video_batcher.stop()
            await state.text_batcher.stop()

    return lifespan


def _add_health(app: FastAPI, state: WorkerState) -> None:
    settings = state.settings

    @app.get("/health", response_model=HealthResponse)
    def health(
        challenge: str | None = Header(default=None, alias=CHALLENGE_HEADER, max_length=MAX_CHALLENGE_CHARS),
    ) -> HealthResponse:
        token = settings.token.get_secret_value() if settings.token is not None else None
        return HealthResponse(
            status=state.status,
            models=_model_names(state),
            error=state.error,
            started_at=state.started_at,
            last_request_at=state.last_request_at,
            idle_s=round(state.idle_s(), 3),
            in_flight=state.in_flight,
            requests_served=state.requests_served,
            proof=token_proof(token, challenge) if token and challenge else None,
        )


def _add_embedding_routes(app: FastAPI, state: WorkerState, model_call: list[Any]) -> None:
    settings = state.settings

    @app.post("/encode-video", response_model=EmbeddingResponse, dependencies=model_call)
    async def encode_video(body: EncodeVideoRequest) -> EmbeddingResponse:
        if len(body.frames) > settings.max_frames:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                detail=f"{len(body.frames)} frames; at most {settings.max_frames} per clip",
            )
        models = state.ready_models()
        frames = await asyncio.to_thread(_decode_frames, body.frames, settings.max_image_pixels)
        embedding = await _submit(state.video_batcher, frames)
        return EmbeddingResponse(embedding=embedding, dim=len(embedding), model=models.embedder.model_id)

    @app.post("/encode-text", response_model=EmbeddingResponse, dependencies=model_call)
    async def encode_text(body: EncodeTextRequest) -> EmbeddingResponse:
        if len(body.text) > settings.max_text_chars:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                detail=f"text of {len(body.text)} characters; at most {settings.max_text_chars}",
            )
        models = state.ready_models()
        embedding = await _submit(state.text_batcher, body.text)
        return EmbeddingResponse(embedding=embedding, dim=len(embedding), model=models.embedder.model_id)


def _add_chat_route(app: FastAPI, state: WorkerState, model_call: list[Any]) -> None:
    settings = state.settings

    @app.post("/v1/chat/completions", dependencies=model_call)
    async def chat_completions(body: ChatCompletionRequest) -> dict[str, Any]:
        models = state.ready_models()
        generator = models.generator
        if generator is None:
            raise HTTPException(
                status.HTTP_503_SERVICE_UNAVAILABLE, detail="no generation model on this worker"
            )
        if body.stream:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, detail="streaming is not supported")
        messages, images = await asyncio.to_thread(
            _template_messages, body.messages, generator.accepts_images, settings.max_image_pixels
        )
        requested = body.max_completion_tokens or body.max_tokens or settings.max_new_tokens
        max_new = min(requested, settings.max_new_tokens)

        def run() -> Any:
            with state.device_lock:
                return generator.generate(messages, images, max_new, body.temperature)

        return _chat_completion(generator.model_id, await asyncio.to_thread(run))


def _chat_completion(model_id: str, result: Any) -> dict[str, Any]:
    """A generation as the OpenAI chat completions API returns it."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_id,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.text},
                "finish_reason": result.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens,
        },
    }


async def _submit(batcher: MicroBatcher[Any, list[float]] | None, item: Any) -> list[float]:
    if batcher is None:  # only before lifespan start-up
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail="worker is starting")
    result: Awaitable[list[float]] = batcher.submit(item)
    return await result


def _model_names(state: WorkerState) -> dict[str, str | None]:
    settings = state.settings
    generation = None
    if settings.generation_model_dir is not None:
        generation = settings.generation_model_id or settings.generation_model_dir.name
    return {"embedding": settings.model_id, "generation": generation}


def _template_messages(
    messages: list[ChatMessageIn], accepts_images: bool, max_pixels: int
) -> tuple[list[dict[str, Any]], list[Image]]:
    """OpenAI messages → chat-template messages (+ decoded images in order); 400 on what cannot run."""
    out: list[dict[str, Any]] = []
    images: list[Image] = []
    for message in messages:
        role = "system" if message.role == "developer" else message.role
        parts = (
            [ChatContentPart(type="text", text=message.content)]
            if isinstance(message.content, str)
            else (message.content or [])
        )
        converted: list[dict[str, Any]] = []
        for part in parts:
            if part.type == "text":
                converted.append({"type": "text", "text": part.text or ""})
                continue
            if not accepts_images:
                raise HTTPException(status.HTTP_400_BAD_REQUEST, detail="this model does not accept images")
            url = part.image_url.url if part.image_url else ""
            if not url.startswith("data:"):
                raise HTTPException(status.HTTP_400_BAD_REQUEST, detail="images must be base64 data: URLs")
            images.append(decode_image(url, f"image {len(images)}", max_pixels))
            converted.append({"type": "image"})
        if accepts_images:
            out.append({"role": role, "content": converted})
        else:
            out.append({"role": role, "content": "".join(p["text"] for p in converted)})
    return out, images
