"""Typed values of retrieval and the reasoning agent: memories, results, trace, answer."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from worldmm.llm.structured import NonPlaceholderStr
from worldmm.retrieval.vocabulary import Vocabulary


class MemoryKind(StrEnum):
    """The three memories the agent can search (spec 001)."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    VISUAL = "visual"


class RetrievedMemory(BaseModel):
    """One retrieved memory: a segment's caption, a semantic fact, or a visual match (with frames)."""

    id: str
    memory_type: MemoryKind
    text: str
    score: float
    source: str = Field(description="which path ranked it: ppr, rerank, hybrid, cosine")
    start_time: datetime | None = None
    end_time: datetime | None = None
    duration_seconds: int | None = None
    segment_id: str | None = None
    frame_keys: list[str] = Field(default_factory=list)


class RetrievalResult(BaseModel):
    """What one search returned; `reason` says why it is empty or degraded."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # `said`, checked as an instance, never copied

    memory_type: MemoryKind
    query: str
    items: list[RetrievedMemory] = Field(default_factory=list)
    reason: str | None = None
    searched: str | None = Field(
        default=None, description="the time range searched, in plain words; None when the search had no range"
    )
    error: str | None = Field(
        default=None, description="why the search failed: it could not look, which is never 'no memories'"
    )
    prompt_tokens: int = 0
    completion_tokens: int = 0
    said: Vocabulary | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="every stem the user's memories say, where the search read the lexical index: the fixed plan "
        "checks a question's names against it without reading the index again",
    )


class AgentAction(BaseModel):
    """The agent's JSON action each round (spec 001 "Reasoning Agent Action Format")."""

    # Read leniently (any case; ANSWER without the other fields); the schema asks for every field (null
    # where unused) and names the actions, so a constrained decoder writes a SEARCH's type and query.
    model_config = ConfigDict(json_schema_extra={"required": ["action", "memory_type", "query"]})

    action: str = Field(json_schema_extra={"enum": ["SEARCH", "ANSWER"]})
    memory_type: MemoryKind | None = None
    query: NonPlaceholderStr | None = None

    @field_validator("memory_type", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> AgentAction:
        self.action = self.action.strip().upper()
        if self.action not in ("SEARCH", "ANSWER"):
            raise ValueError("action must be SEARCH or ANSWER")
        if self.action == "SEARCH":
            if self.memory_type is None:
                raise ValueError("SEARCH needs memory_type")
            if not self.query or not self.query.strip():
                raise ValueError("SEARCH needs a query")
            self.query = self.query.strip()
        return self


class TraceRound(BaseModel):
    """One round of the agent loop, as the verbose endpoint shows it."""

    round: int
    action: str = Field(description="SEARCH, ANSWER, INVALID (unparseable action) or FORCED")
    memory_type: MemoryKind | None = None
    query: str | None = None
    retrieved_ids: list[str] = Field(default_factory=list)
    elapsed_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    parse_failures: int = Field(default=0, description="agent replies that did not validate (1: repaired)")
    note: str | None = None
    error: str | None = Field(default=None, description="set when this SEARCH failed (not 'nothing found')")


class Citation(BaseModel):
    """One memory an answer rests on: which segment, when, at what scale, of which memory."""

    id: str
    memory_type: MemoryKind
    segment_id: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    duration_seconds: int | None = Field(default=None, description="the scale: 30, 180, 600 or 3600 seconds")
    caption_source: str | None = Field(
        default=None,
        description="seen (a model saw the frames), tidied (a model rewrote what was heard) or heard (the "
        "transcript itself); a summary lists its windows' sources (heard+seen)",
    )

    @classmethod
    def of(cls, memory: RetrievedMemory) -> Citation:
        segment_id = memory.segment_id or (memory.id if memory.memory_type == MemoryKind.EPISODIC else None)
        return cls(
            id=memory.id,
            memory_type=memory.memory_type,
            segment_id=segment_id,
            start_time=memory.start_time,
            end_time=memory.end_time,
            duration_seconds=memory.duration_seconds,
        )


class Trace(BaseModel):
    """Every round of one answer, the final answer step, its citations, and totals."""

    mode: str = Field(default="loop", description="loop (spec 001 agent) or plan (fixed search, composed answer)")
    read_at: datetime | None = Field(
        default=None,
        description="when set, the moment time words were read at instead of the asked-at time: the end of "
        "the newest memory, which is over a week old",
    )
    rounds: list[TraceRound] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    forced_answer: bool = False
    answer_prompt_tokens: int = 0
    answer_completion_tokens: int = 0
    answer_parse_failures: int = Field(default=0, description="answer replies that did not validate")
    answer_note: str | None = None
    total_ms: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_prompt_tokens(self) -> int:
        return self.answer_prompt_tokens + sum(r.prompt_tokens for r in self.rounds)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_completion_tokens(self) -> int:
        return self.answer_completion_tokens + sum(r.completion_tokens for r in self.rounds)


class AgentAnswer(BaseModel):
    """The agent's answer, the memories it used, and how it got there."""

    answer: str
    memories: list[RetrievedMemory] = Field(default_factory=list)
    trace: Trace
