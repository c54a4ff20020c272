"""Entity resolution (spec 001): exact match → embedding ≥ 0.6 → LLM confirm → alias row; batched."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select

from worldmm.db.models import Entity, LLMUsage
from worldmm.llm.usage import UsageLog
from worldmm.memory.entities import resolve_entities
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-a"


def unit(*weights: float) -> list[float]:
    vec = list(weights) + [0.0] * (8 - len(weights))
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


VECTORS = {
    "kate": unit(1.0),
    "katie": unit(0.9, 0.3),  # cosine ≈ 0.95 with Kate
    "katrina": unit(0.7, 0.7),  # ≈ 0.71
    "bob": unit(0, 0, 1.0),  # 0 with Kate
    "kitchen": unit(0, 0, 0, 1.0),
}


class TableEmbedder:
    """Fixed vectors per (lower-case) text; records every call."""

    dim = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [VECTORS[t.lower()] for t in texts]


@pytest.fixture
def svc(settings, db, scripted_llm):
    return Services(settings, db=db, llm=scripted_llm, embedder=TableEmbedder())


def entity_rows(db, user=USER) -> dict[str, Entity]:
    with db.unit_of_work(user) as session:
        return {e.surface_form: e for e in session.execute(select(Entity)).scalars()}


def confirm(*same_indices: int):
    return lambda request: {"decisions": [{"index": i, "same": True} for i in same_indices]}


def test_entity_resolution_new_forms_become_canonical_entities(svc, db):
    ids = resolve_entities(svc, USER, ["Kate", "Bob"])
    rows = entity_rows(db)
    assert set(rows) == {"Kate", "Bob"}
    assert all(r.canonical_entity_id is None and r.embedding is not None for r in rows.values())
    assert ids == {"Kate": rows["Kate"].id, "Bob": rows["Bob"].id}


def test_entity_resolution_exact_match_is_case_insensitive_and_skips_models(svc, db, scripted_llm):
    first = resolve_entities(svc, USER, ["Kate"])
    svc.embedder.calls.clear()
    again = resolve_entities(svc, USER, ["kate", " KATE "])
    assert again == {"kate": first["Kate"], " KATE ": first["Kate"]}
    assert svc.embedder.calls == [] and scripted_llm.calls == []


def test_entity_resolution_confirmed_match_creates_alias_row(svc, db, scripted_llm):
    # GIVEN a canonical "Kate"
    kate = resolve_entities(svc, USER, ["Kate"])["Kate"]
    scripted_llm.script("entity_confirm", confirm(1))
    # WHEN "Katie" (cosine ≈ 0.95) is confirmed as the same person
    ids = resolve_entities(svc, USER, ["Katie"], context="Katie waves at me")
    # THEN an alias row points at Kate and the triple FK target is Kate herself
    assert ids == {"Katie": kate}
    alias = entity_rows(db)["Katie"]
    assert alias.canonical_entity_id == kate and alias.canonical_name == "Kate"
    request = scripted_llm.calls_for("entity_confirm")[0]
    assert '"Katie"' in request.prompt_text and '"Kate"' in request.prompt_text
    assert "Katie waves at me" in request.prompt_text
    # and the alias now resolves by exact match, without a model call
    assert resolve_entities(svc, USER, ["katie"]) == {"katie": kate}
    assert len(scripted_llm.calls_for("entity_confirm")) == 1


def test_entity_resolution_rejected_match_creates_new_canonical(svc, db, scripted_llm):
    kate = resolve_entities(svc, USER, ["Kate"])["Kate"]
    scripted_llm.script("entity_confirm", {"decisions": [{"index": 1, "same": False}]})
    ids = resolve_entities(svc, USER, ["Katrina"])
    assert ids["Katrina"] != kate and entity_rows(db)["Katrina"].canonical_entity_id is None


def test_entity_resolution_below_threshold_asks_no_model(svc, db, scripted_llm):
    resolve_entities(svc, USER, ["Kate"])
    resolve_entities(svc, USER, ["Bob", "kitchen"])
    assert scripted_llm.calls == []
    assert all(r.canonical_entity_id is None for r in entity_rows(db).values())


def test_entity_resolution_is_batched_one_embedding_and_one_confirm_call_per_window(svc, db, scripted_llm):
    resolve_entities(svc, USER, ["Kate"])
    svc.embedder.calls.clear()
    scripted_llm.script("entity_confirm", confirm(2))  # pair 1: Katie?, pair 2: Katrina → same
    usage = UsageLog()
    ids = resolve_entities(svc, USER, ["Katie", "Katrina", "Bob"], usage=usage)
    assert svc.embedder.calls == [["Katie", "Katrina", "Bob"]]
    assert len(scripted_llm.calls_for("entity_confirm")) == 1
    rows = entity_rows(db)
    assert rows["Katrina"].canonical_entity_id == ids["Katrina"] == rows["Kate"].id
    assert rows["Katie"].canonical_entity_id is None
    assert [p for p, _ in usage.entries] == ["entity_confirm"]


def test_entity_resolution_unparsable_confirmation_keeps_entities_apart(svc, db, scripted_llm):
    kate = resolve_entities(svc, USER, ["Kate"])["Kate"]
    scripted_llm.script("entity_confirm", "I think so?")
    ids = resolve_entities(svc, USER, ["Katie"])
    assert ids["Katie"] != kate


def test_entity_resolution_concurrent_resolvers_converge_on_one_row(svc, db, scripted_llm):
    scripted_llm.script("entity_confirm", {"decisions": []})
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(lambda _: resolve_entities(svc, USER, ["Kate", "Bob"]), range(10)))
    assert len(entity_rows(db)) == 2
    assert all(r == results[0] for r in results)


def test_entity_resolution_is_scoped_per_user(svc, db):
    a = resolve_entities(svc, USER, ["Kate"])["Kate"]
    b = resolve_entities(svc, "user-b", ["Kate"])["Kate"]
    assert a != b
    assert set(entity_rows(db, "user-b")) == {"Kate"}
    with db.unit_of_work(USER) as session:
        assert session.execute(select(LLMUsage)).first() is None
