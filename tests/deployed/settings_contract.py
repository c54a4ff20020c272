"""Which settings a function may read without template.yaml giving them: those whose default is right on AWS.

Everything else a function reads (recorded in its cold-started process) must be in its template
environment. Adding a setting that names a resource, a credential, a provider or an endpoint means
adding it to the template; a spec constant or tuning knob whose default is the same on every profile
goes here, in its group.
"""

from __future__ import annotations

# Unset on AWS on purpose; each is right as its default there.
UNSET_ON_AWS: dict[str, str] = {
    "DATABASE_URL": "credentials come from DATABASE_SECRET_ARN (Secrets Manager); a URL would bypass it",
    "DATABASE_ADMIN_URL": "only `worldmm migrate` uses the owner role; functions never do",
    "DATABASE_PROXY_HOST": "given by the template only when the DatabaseProxyEndpoint parameter is set; else "
    "the functions connect to the secret's host",
    "REDIS_URL": "given by the template only when the RedisUrl parameter is set; else the in-process "
    "cache revalidates against PostgreSQL's graph generation",
    "GPU_WORKER_URL": "the worker is discovered through GPU_INSTANCE_PARAM + EC2 tags (tests point it at "
    "the emulated worker because moto's instance addresses are unroutable)",
    "OPENAI_BASE_URL": "the OpenAI SDK's own endpoint (tests point it at the fake model server)",
    "GROQ_BASE_URL": "the Groq SDK's own endpoint (tests point it at the fake model server)",
    "INGEST_REQUIRES_GPU": "None means required exactly when WORLDMM_PROFILE=aws",
    "GPU_LAUNCH_TEMPLATE": "given by the template only with GpuWorkerAmiId and GpuWorkerVpcId; unset, the "
    "controller starts and stops the tagged instance and launches none",
    "EXTRACTION_PROVIDER": "None means the LLM whenever LLM_PROVIDER is not the small local model",
    "SUMMARY_PROVIDER": "None means the LLM whenever LLM_PROVIDER is not the small local model",
    "EPISODIC_RERANK": "None means on whenever LLM_PROVIDER is not the small local model",
    "AGENT_MODE": "None means the spec 001 agent loop whenever LLM_PROVIDER is not the small local model",
    "CAPTION_MODE": "None means `seen` (the vision model captions the frames) whenever LLM_PROVIDER is not local",
    "MODEL_KEYS_SECRET": "given only to the functions that call a model (they alone may read the secret); a "
    "function that reads a key without it is still caught, as the key is then not given",
    "CURSOR_SECRET_ARN": "given only to the functions that sign or check cursors (they alone may read it)",
    "GPU_WORKER_TOKEN_SECRET_ARN": "given only to the functions that call the GPU worker (they alone may read it)",
    "DATABASE_CELLS": "given by the template only with CellCount 2 or more; else the one database of "
    "DATABASE_SECRET_ARN and no placement map (docs/cells.md)",
    "PLACEMENTS_TABLE": "given by the template only with CellCount 2 or more (the placements table); read only then",
    "ANSWER_READER": "the local reader writes answers only beside the small local LLM: off on AWS whatever it says",
    "ANSWER_BUDGET_S": "the local reader's deadline: read into the retrieval settings, used only beside the small "
    "local LLM",
    "SPACY_MODEL": "the spaCy extractor's model: read into the memory settings, used only where spaCy extracts "
    "(beside the small local LLM; AWS extracts with the LLM)",
    "SPACY_BATCH_SIZE": "the spaCy extractor's batch: read into the memory settings, used only where spaCy extracts",
    "SUMMARY_MAX_CHARS": "the extractive summary's length: read into the memory settings, used only where summaries "
    "are extractive (beside the small local LLM; AWS writes them with the LLM)",
    "SPEAKER_LABELS": "the local transcriber's named voices: read into the ingest settings, used only for a caption "
    "from what was heard (the local profile; AWS captions what was seen)",
}

# Spec constants and tuning knobs: one value for every profile (spec 000/001/004 numbers).
SPEC_CONSTANTS: tuple[str, ...] = (
    # capture and windows (spec 000)
    "WINDOW_SECONDS",
    "SAMPLE_FRAMES",
    "CAPTION_FRAMES",
    "CAPTURE_EXPECTED_FRAMES",
    "CAPTURE_OPEN_SHARDS",
    "CAPTURE_MAX_WINDOW_INDEX",
    "CAPTURE_URL_EXPIRY_S",
    "CAPTURE_CLOSE_AFTER_S",
    "CAPTURE_MAX_FRAME_BYTES",
    "CAPTURE_MAX_AUDIO_BYTES",
    "CAPTURE_MAX_SESSIONS_PER_DAY",
    "CAPTURE_MAX_WINDOWS_PER_DAY",
    "CAPTURE_MAX_WINDOW_RERUNS",
    "CAPTURE_MAX_BYTES_PER_DAY",  # issue 64: unset means a day of windows at the URL maxima
    "CAPTURE_PRESIGN_AFTER_END_S",
    "REAPER_PENDING_AFTER_S",
    "REAPER_MAX_WINDOWS",
    "INGEST_CLAIM_LEASE_S",
    "INGEST_MAX_ATTEMPTS",
    "INGEST_MAX_INPUT_CHARS",
    "MAX_ENTITIES_PER_WINDOW",
    "MAX_TRIPLES_PER_WINDOW",
    "MAX_FIELD_CHARS",
    "CONSOLIDATION_THRESHOLD",  # a new fact against known ones, a new name against known entities (spec 001)
    "CONSOLIDATION_TOP_K",
    "ENTITY_MATCH_THRESHOLD",
    # outside calls: timeouts, retries, concurrency, batch sizes
    "DATABASE_SECRET_MAX_AGE_S",
    "CELL_DEPARTURE_KEEP_S",  # issue 63: over Lambda's 900 s longest run on every profile
    "GPU_CONNECT_TIMEOUT_S",
    "GPU_READ_TIMEOUT_S",
    "GPU_ENCODE_TIMEOUT_S",
    "GPU_RETRIES",
    "GROQ_MODEL",
    "GROQ_TIMEOUT_S",
    "GROQ_MAX_RETRIES",
    "LLM_TIMEOUT_S",
    "LLM_MAX_RETRIES",
    "LLM_CONCURRENCY",
    "EXTRACTION_MAX_TOKENS",
    "AGENT_MAX_TOKENS",
    "ANSWER_MAX_TOKENS",
    "EMBEDDING_BATCH_SIZE",
    "DLQ_VISIBILITY_EXTENSION_S",
    # how many windows `worldmm ingest-session` and text ingest run at once: read into the ingest settings
    "BATCH_MAX_REQUESTS",
    "INGEST_CONCURRENCY",
    "TEXT_INGEST_CHUNK",
    "TEXT_INGEST_SUMMARY_CONCURRENCY",
    "GRAPH_CACHE_LOCAL_ENTRIES",
    "GRAPH_CACHE_TTL_S",
    "REDIS_TIMEOUT_S",
    # the GPU controller's tuning (issue 24; GPU_IDLE_STOP_S and GPU_CONTROLLER_WAIT_S are in the template)
    "GPU_CHAT_IDLE_STOP_S",
    "GPU_READY_TIMEOUT_S",
    "GPU_POLL_INTERVAL_S",
    "GPU_LEASE_S",
    "GPU_FAILURE_BACKOFF_S",
    "GPU_WAKE_DEBOUNCE_S",
    "GPU_WORKER_PORT",  # the worker's port: template.yaml's security group and WORKER_PORT say 8000 too
    # retrieval and the agent (spec 001, 002)
    "PPR_DAMPING",
    "PPR_TOLERANCE",
    "PPR_MAX_ITERATIONS",
    "EPISODIC_FINAL_K",
    "RERANK_CANDIDATES",
    "RRF_K",
    "FUSION_WEIGHT_LEXICAL",
    "FUSION_WEIGHT_DENSE",
    "FUSION_WEIGHT_GRAPH",
    "TIME_TIEBREAK",
    "HYBRID_POOL",
    "HNSW_EF_SEARCH",
    "SEED_HUB_FRACTION",
    "DUPLICATE_SIMILARITY",
    "MAX_AGENT_ROUNDS",
    "MEMORY_TEXT_MAX_CHARS",
    "HYBRID_TOP_K",
    "SEMANTIC_SEED_K",
    "SEMANTIC_TOP_K",
    "VISUAL_TOP_K",
    "PLAN_EPISODIC_K",  # the fixed plan's, also a loop's fall-back searches
    "MCP_ANSWER_MAX_CHARS",
    # per-user allowance of model calls (issue 64), the same on every profile
    "CHAT_ALLOWANCE_MODEL_CALLS",
    "CHAT_ALLOWANCE_MODEL_CALLS_PER_HOUR",
    # chat API (spec 004)
    "CHAT_PAGE_DEFAULT",
    "CHAT_PAGE_MAX",
    "CHAT_TITLE_CHARS",
    "CHAT_PREVIEW_CHARS",
    # memories API (issue 25): page sizes and the media URLs' lifetime, the same on every profile
    "MEMORY_PAGE_DEFAULT",
    "MEMORY_PAGE_MAX",
    "MEMORY_MEDIA_URL_EXPIRY_S",
)

DEFAULT_IS_RIGHT_ON_AWS: frozenset[str] = frozenset(UNSET_ON_AWS) | frozenset(SPEC_CONSTANTS)


def _given(environment: set[str]) -> set[str]:
    """What an environment gives: its names, and each key whose secret it names (one secret per purpose)."""
    from worldmm.config import SECRET_SOURCES

    return environment | {name.upper() for name, source in SECRET_SOURCES.items() if source in environment}


def settings_missing_from_template(reads: dict[str, set[str]], given: dict[str, set[str]]) -> dict[str, list[str]]:
    """Per function, the settings it read that its template environment lacks and no default covers."""
    missing = {
        function: sorted(read - _given(given[function]) - DEFAULT_IS_RIGHT_ON_AWS) for function, read in reads.items()
    }
    return {function: names for function, names in missing.items() if names}
