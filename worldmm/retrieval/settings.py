"""The settings the read side reads: search sizes and fusion weights, PPR, the reranker, the agent and the
fixed plan. Built once by the composition root (`Services.retrieval_settings`); retrieval reads nothing else."""

from __future__ import annotations

from worldmm.config import AgentMode, ComponentSettings


class RetrievalSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    # hybrid search (worldmm.retrieval.hybrid)
    embedding_dim: int
    hybrid_pool: int
    hybrid_top_k: int
    hnsw_ef_search: int
    rrf_k: int
    fusion_weight_dense: float
    fusion_weight_graph: float
    fusion_weight_lexical: float
    duplicate_similarity: float
    time_tiebreak: float
    # graph search (PPR) for episodic and semantic memory
    ppr_damping: float
    ppr_tolerance: float
    ppr_max_iterations: int
    seed_hub_fraction: float
    # episodic: the reranker and how many memories it keeps
    episodic_final_k: int
    episodic_rerank_enabled: bool
    rerank_candidates: int
    extraction_model: str
    extraction_max_tokens: int
    # semantic and visual memory
    semantic_seed_k: int
    semantic_top_k: int
    sample_frames: int
    visual_top_k: int
    # answering: the agent loop and the fixed plan
    agent_mode_effective: AgentMode
    agent_model: str
    agent_max_tokens: int
    answer_max_tokens: int
    max_agent_rounds: int
    memory_text_max_chars: int
    plan_episodic_k: int
    answer_budget_s: float
    reader_enabled: bool
