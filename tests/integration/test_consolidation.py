"""Semantic consolidation on real PostgreSQL: candidates, decisions applied, audit, shadow mode, locking."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select

from tests.support.harness import change_settings
from tests.support.memory import SteeredEmbedder, add_window
from worldmm.config import ConsolidationMode, Settings
from worldmm.db.engine import Database
from worldmm.db.models import ConsolidationEvent, Entity, MemoryHistory, MemoryType, Triple
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.entities import resolve_entities
from worldmm.memory.openie import ExtractedTriple
from worldmm.memory.semantic.consolidation import consolidate_triples, find_candidates
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-cons"
DIM = 8


def _unit(i: int, j: int | None = None, weight: float = 0.0) -> list[float]:
    """A unit vector on axis i, optionally tilted toward axis j (cosine to axis i = 1/sqrt(1+weight²))."""
    vec = [0.0] * DIM
    vec[i] = 1.0
    if j is not None:
        vec[j] = weight
    norm = sum(v * v for v in vec) ** 0.5
    return [v / norm for v in vec]


@pytest.fixture
def embedder() -> SteeredEmbedder:
    return SteeredEmbedder(DIM)


@pytest.fixture
def svc(
    settings: Settings, db: Database, scripted_llm: ScriptedLLM, embedder: SteeredEmbedder
) -> Iterator[Services]:
    scripted_llm.script("entity_confirm", {"decisions": []})
    yield Services(settings, db=db, llm=scripted_llm, embedder=embedder)


def _segment(svc: Services, n: int = 0) -> uuid.UUID:
    return add_window(svc, USER, "sess-cons", n, f"summary {n}")


def _seed(
    svc: Services, embedder: SteeredEmbedder, triple: ExtractedTriple, vector: list[float]
) -> uuid.UUID:
    """Store an existing valid semantic triple with a chosen embedding, directly."""
    embedder.vectors[triple.text] = vector
    ids = resolve_entities(svc, USER, [triple.subject, triple.object])
    segment = _segment(svc, 100 + len(embedder.vectors))
    with svc.db.unit_of_work(USER) as session:
        row = Triple(
            segment_id=segment,
            user_id=USER,
            memory_type=MemoryType.SEMANTIC,
            subject_entity_id=ids[triple.subject],
            predicate=triple.predicate,
            object_entity_id=ids[triple.object],
            embedding=vector,
        )
        session.add(row)
        session.flush()
        return row.id


def _valid(svc: Services) -> list[tuple[str, str]]:
    with svc.db.unit_of_work(USER) as session:
        rows = session.execute(
            select(Triple.predicate, Triple.object_literal, Entity.surface_form)
            .outerjoin(Entity, Entity.id == Triple.object_entity_id)
            .where(Triple.memory_type == MemoryType.SEMANTIC, Triple.invalidated_at.is_(None))
        ).all()
    return sorted((p, lit or ent) for p, lit, ent in rows)


def _history(svc: Services) -> list[MemoryHistory]:
    with svc.db.unit_of_work(USER) as session:
        return list(session.scalars(select(MemoryHistory).order_by(MemoryHistory.created_at)))


def test_semantic_consolidation_candidates_selected_by_cosine_threshold(
    svc: Services, embedder: SteeredEmbedder
) -> None:
    # GIVEN valid semantic triples at cosine 1.0, ~0.89 and ~0.45 from a probe, and an invalidated one at 1.0
    near = _seed(svc, embedder, ExtractedTriple("I", "drinks", "coffee"), _unit(0))
    close = _seed(svc, embedder, ExtractedTriple("I", "likes", "espresso"), _unit(0, 1, 0.5))
    _seed(svc, embedder, ExtractedTriple("I", "reads", "novels"), _unit(0, 1, 2.0))
    gone = _seed(svc, embedder, ExtractedTriple("I", "drank", "tea"), _unit(0))
    with svc.db.unit_of_work(USER) as session:
        session.get_one(Triple, gone).invalidated_at = session.get_one(Triple, gone).created_at
    # WHEN candidates are fetched at threshold 0.75
    with svc.db.unit_of_work(USER) as session:
        found = find_candidates(session, USER, _unit(0), threshold=0.75, k=5)
        top1 = find_candidates(session, USER, _unit(0), threshold=0.75, k=1)
    # THEN only the two valid ones above the threshold come back, nearest first, and k caps them
    assert [c.id for c in found] == [near, close]
    assert found[0].similarity == pytest.approx(1.0) and found[1].similarity == pytest.approx(0.894, abs=1e-3)
    assert (found[0].subject, found[0].predicate, found[0].object) == ("I", "drinks", "coffee")
    assert [c.id for c in top1] == [near]


def test_semantic_consolidation_other_users_triples_are_never_candidates(
    svc: Services, embedder: SteeredEmbedder
) -> None:
    _seed(svc, embedder, ExtractedTriple("I", "drinks", "coffee"), _unit(0))
    with svc.db.unit_of_work("someone-else") as session:
        assert find_candidates(session, "someone-else", _unit(0), threshold=0.0, k=5) == []


def test_semantic_consolidation_merge_invalidates_old_and_inserts_merged(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    # GIVEN an existing fact and a similar new one, and the model answering MERGE
    old = _seed(svc, embedder, ExtractedTriple("I", "drinks", "coffee"), _unit(0))
    new = ExtractedTriple("I", "often drinks", "black coffee")
    embedder.vectors[new.text] = _unit(0, 1, 0.3)
    scripted_llm.script(
        "consolidation",
        {
            "event": "MERGE",
            "target_ids": [str(old)],
            "triple": ["I", "drinks", "black coffee daily"],
            "reason": "same",
        },
    )
    segment = _segment(svc, 1)
    # WHEN it is consolidated
    report = consolidate_triples(svc, USER, segment, [new])
    # THEN the old triple is invalidated by this segment (not deleted) and the merged triple is the valid one
    with svc.db.unit_of_work(USER) as session:
        old_row = session.get_one(Triple, old)
        assert old_row.invalidated_at is not None and old_row.invalidated_by_segment_id == segment
    assert _valid(svc) == [("drinks", "black coffee daily")]
    # AND the decision is audited with its inputs, model and reason
    last = _history(svc)[-1]
    assert (last.event, last.applied, last.mode, last.reason) == (
        ConsolidationEvent.MERGE,
        True,
        "apply",
        "same",
    )
    assert (
        last.model and last.inputs["targets"] == [str(old)] and last.inputs["candidates"][0]["id"] == str(old)
    )
    assert report.events == {"MERGE": 1}


def test_semantic_consolidation_update_replaces_target(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    old = _seed(svc, embedder, ExtractedTriple("I", "works at", "Acme"), _unit(2))
    new = ExtractedTriple("I", "works at", "Globex")
    embedder.vectors[new.text] = _unit(2, 3, 0.2)
    scripted_llm.script(
        "consolidation", {"event": "UPDATE", "target_ids": [str(old)], "reason": "changed jobs"}
    )
    consolidate_triples(svc, USER, _segment(svc, 1), [new])
    assert _valid(svc) == [("works at", "Globex")]


def test_semantic_consolidation_remove_invalidates_target_and_stores_nothing(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    old = _seed(svc, embedder, ExtractedTriple("I", "drinks", "coffee every morning"), _unit(0))
    new = ExtractedTriple("I", "stopped drinking", "coffee")
    embedder.vectors[new.text] = _unit(0, 1, 0.2)
    scripted_llm.script(
        "consolidation", {"event": "REMOVE", "target_ids": [str(old)], "reason": "quit coffee"}
    )
    consolidate_triples(svc, USER, _segment(svc, 1), [new])
    assert _valid(svc) == []
    with svc.db.unit_of_work(USER) as session:
        assert session.get_one(Triple, old).invalidated_at is not None  # soft delete: the row is kept


def test_semantic_consolidation_none_changes_nothing_but_is_audited(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    _seed(svc, embedder, ExtractedTriple("I", "drinks", "coffee"), _unit(0))
    new = ExtractedTriple("I", "drinks", "Coffee")
    embedder.vectors[new.text] = _unit(0)
    scripted_llm.script("consolidation", {"event": "NONE", "target_ids": [], "reason": "known"})
    consolidate_triples(svc, USER, _segment(svc, 1), [new])
    assert _valid(svc) == [("drinks", "coffee")]
    assert [(h.event, h.applied) for h in _history(svc)] == [(ConsolidationEvent.NONE, True)]


def test_semantic_consolidation_shadow_mode_audits_but_writes_no_triples(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    # GIVEN an existing fact, then shadow mode and a model answering UPDATE
    old = _seed(svc, embedder, ExtractedTriple("I", "works at", "Acme"), _unit(2))
    change_settings(svc, consolidation_mode=ConsolidationMode.SHADOW)
    new = ExtractedTriple("I", "works at", "Globex")
    embedder.vectors[new.text] = _unit(2)
    scripted_llm.script(
        "consolidation", {"event": "UPDATE", "target_ids": [str(old)], "reason": "changed jobs"}
    )
    # WHEN consolidating
    report = consolidate_triples(svc, USER, _segment(svc, 1), [new])
    # THEN the decision is audited as not applied, the old fact stays valid, and nothing new is stored
    assert not report.applied
    last = _history(svc)[-1]
    assert (last.event, last.applied, last.mode) == (ConsolidationEvent.UPDATE, False, "shadow")
    assert _valid(svc) == [("works at", "Acme")]
    with svc.db.unit_of_work(USER) as session:
        assert session.scalars(select(Entity).where(Entity.surface_form == "Globex")).all() == []


def test_semantic_consolidation_concurrent_summaries_never_act_on_a_stale_snapshot(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    # GIVEN an existing fact and two summaries, each bringing a similar new fact
    old = _seed(svc, embedder, ExtractedTriple("I", "drinks", "coffee"), _unit(0))
    first = ExtractedTriple("I", "drinks", "coffee daily")
    second = ExtractedTriple("I", "drinks", "coffee every day")
    embedder.vectors[first.text] = _unit(0, 1, 0.1)
    embedder.vectors[second.text] = _unit(0, 1, 0.15)
    # AND a model that holds both first decisions until both have read the same snapshot, and answers
    # UPDATE of every candidate it is shown, until it sees the other summary's fact: then NONE
    both_read = threading.Barrier(2, timeout=10)
    seen_candidates: list[str] = []

    def answer(request: LLMRequest) -> dict[str, object]:
        prompt = request.prompt_text
        ids = [line.split("id=")[1].split()[0] for line in prompt.splitlines() if "id=" in line]
        seen_candidates.append(prompt)
        if str(old) in ids:
            both_read.wait()
            return {"event": "UPDATE", "target_ids": ids, "reason": "newer wording"}
        return {"event": "NONE", "target_ids": [], "reason": "already stored by the other summary"}

    scripted_llm.script("consolidation", answer)
    seg_a, seg_b = _segment(svc, 1), _segment(svc, 2)
    # WHEN both consolidate at the same time
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(
            pool.map(
                lambda args: consolidate_triples(svc, USER, args[0], [args[1]]),
                [(seg_a, first), (seg_b, second)],
            )
        )
    # THEN the old fact was invalidated once, by one summary, and exactly one of the new facts is valid
    with svc.db.unit_of_work(USER) as session:
        old_row = session.get_one(Triple, old)
    assert old_row.invalidated_at is not None and old_row.invalidated_by_segment_id in (seg_a, seg_b)
    valid = _valid(svc)
    assert len(valid) == 1 and valid[0][1] in ("coffee daily", "coffee every day")
    # AND the loser re-decided on the fresh snapshot (a third model call showing the winner's fact)
    assert len(seen_candidates) == 3
    assert sorted(sum(r.events.values()) for r in reports) == [1, 1]
    events = sorted(h.event.value for h in _history(svc))
    assert events == ["NONE", "UPDATE"]
    retried = next(h for h in _history(svc) if h.event == ConsolidationEvent.NONE)
    assert retried.inputs["attempt"] == 2


class _RecordingCache:
    """A GraphCache double that records scoped invalidations (the real caches are tested in test_graph_cache)."""

    def __init__(self) -> None:
        self.invalidated: list[tuple[str, str]] = []

    def get_or_build(self, key, build):  # pragma: no cover - not reached by consolidation
        return build()

    def invalidate(self, user_id: str, memory_type: MemoryType | str, scales: object = None) -> None:
        self.invalidated.append((user_id, str(MemoryType(memory_type).value)))


def test_semantic_consolidation_invalidates_only_this_users_semantic_graph(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    # GIVEN a graph cache and a new fact with no candidates (ADD)
    cache = _RecordingCache()
    svc.__dict__["graph_cache"] = cache
    new = ExtractedTriple("I", "plays", "tennis")
    embedder.vectors[new.text] = _unit(5)
    # WHEN it is consolidated in apply mode
    consolidate_triples(svc, USER, _segment(svc, 1), [new])
    # THEN exactly this user's semantic graph is invalidated
    assert cache.invalidated == [(USER, "semantic")]


def test_semantic_consolidation_in_shadow_mode_leaves_the_graph_cache_alone(
    svc: Services, embedder: SteeredEmbedder, scripted_llm: ScriptedLLM
) -> None:
    cache = _RecordingCache()
    svc.__dict__["graph_cache"] = cache
    change_settings(svc, consolidation_mode=ConsolidationMode.SHADOW)
    new = ExtractedTriple("I", "plays", "chess")
    embedder.vectors[new.text] = _unit(6)
    consolidate_triples(svc, USER, _segment(svc, 1), [new])
    assert cache.invalidated == []
