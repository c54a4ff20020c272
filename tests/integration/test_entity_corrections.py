"""PATCH /entities/{id}: a user renames an entity or merges one the recogniser split ("Marko" is "Marco").

Memories come from the real ingest pipeline (scripted models) on the real database; the route runs through
its Lambda handler. After a merge, a question naming "Marco" reaches what was recorded of "Marko" in the
graph (rebuilt, not the cached one), the memory view names "Marco", answers cite it, and an audit row says
who corrected what. Another user's entity reads as a missing one (403).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from handlers.http.entities.correct.app import lambda_handler as correct_handler
from tests.support.ingest import CREATED_AT, make_ingest_services, put_window, script_window_models
from worldmm.config import AgentMode, Settings
from worldmm.db.engine import Database
from worldmm.db.models import Entity, EntityCorrection, MemoryType, Segment
from worldmm.gateway.events import LocalLambdaContext, build_event
from worldmm.graph.build import GraphKey
from worldmm.graph.cache.port import load_graph
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval import compose
from worldmm.retrieval.agent import answer_question
from worldmm.retrieval.compose import Weights
from worldmm.retrieval.episodic_retriever import graph_ranking, query_seed_entities
from worldmm.retrieval.timeref import parse_time_reference
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-alice", "user-bob"
SESSION = "sess-alice"
ASKED = datetime.fromisoformat(CREATED_AT).astimezone(UTC) + timedelta(hours=2)
WINDOWS = (
    ("Marko hands me the blue folder.", ["Marko", "folder"], [["Marko", "hands", "blue folder"]]),
    ("Marco waves from the car.", ["Marco", "car"], [["Marco", "waves from", "car"]]),
    ("Kate holds a red mug in the kitchen.", ["Kate", "mug"], [["Kate", "holds", "red mug"]]),
)


@pytest.fixture(autouse=True)
def _answers_never_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights that rank by shared words and refuse nothing: the corrected name's memory is under test here,
    not the fitted refusal (the hashing embedder gives the fitted weights no closeness in meaning)."""
    plain = Weights((3.0, 1.0, 0.0, 1.0, -1.0, 0.5, 0.0, 0.0, 0.5, 0.0), bias=0.0, refuse_below=-99.0)
    monkeypatch.setattr(compose, "fitted_weights", lambda: plain)


def correct(user: str, entity_id: str, body: Any) -> tuple[int, Any]:
    event = build_event(
        "PATCH", f"/entities/{entity_id}", {"content-type": "application/json"}, json.dumps(body).encode(),
        {"sub": user}, path_parameters={"id": entity_id},
    )
    response = correct_handler(event, LocalLambdaContext(function_name="EntityCorrectFunction"))
    return response["statusCode"], json.loads(response["body"])


@pytest.fixture
def served(
    request: pytest.FixtureRequest, settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path
) -> Iterator[Services]:
    """Alice's three windows: "Marko" in the first, "Marco" in the second (the recogniser kept them apart).
    Graphs are cached in process (checked against the database's generations), or in Redis when asked."""
    update: dict[str, Any] = {"agent_mode": AgentMode.PLAN, "seed_hub_fraction": 1.0}
    if getattr(request, "param", "local") == "redis":
        request.getfixturevalue("redis_client")  # flushed
        update["redis_url"] = request.getfixturevalue("redis_url")
    services = make_ingest_services(settings.model_copy(update=update), db, scripted_llm, tmp_path / "objects")
    services.store.put(
        f"sessions/{SESSION}/metadata.json", json.dumps({"createdAt": CREATED_AT, "userId": ALICE}).encode()
    )
    for index, (caption, entities, triples) in enumerate(WINDOWS):
        script_window_models(scripted_llm, caption=caption, entities=entities, triples=triples)
        put_window(services.store, SESSION, index, frames=2)
        event = IngestWindowEvent(sessionId=SESSION, userId=ALICE, windowIndex=index, frameCount=2)
        assert ingest_window(services, event).status == "ok"
    set_services(services)
    yield services
    set_services(None)


def _entity(services: Services, user: str, surface: str) -> Entity:
    with services.db.unit_of_work(user) as session:
        return session.scalars(select(Entity).where(Entity.user_id == user, Entity.surface_form == surface)).one()


def _window(services: Services, caption: str) -> str:
    with services.db.unit_of_work(ALICE) as session:
        return str(session.scalars(select(Segment.id).where(Segment.caption == caption)).one())


def _graph_reach(services: Services, question: str) -> set[str]:
    seeds = query_seed_entities(services, ALICE, question)
    reference = parse_time_reference(question, ASKED)
    return {str(s) for s in graph_ranking(services, ALICE, seeds, reference, [30], 10)}


@pytest.mark.parametrize("served", ["local", "redis"], indirect=True)
def test_a_merge_makes_retrieval_and_answers_use_the_corrected_name(served: Services) -> None:
    marko_window, marco_window = _window(served, WINDOWS[0][0]), _window(served, WINDOWS[1][0])
    graph_key = GraphKey(ALICE, MemoryType.EPISODIC, 30)
    # GIVEN "Marco" reaches only the window that said Marco, and the graph is cached here and in another
    # process (its own Services: its own in-process cache, the same database and Redis)
    other = Services(served.settings, db=served.db, llm=served.llm, embedder=served.embedder, store=served.store)
    assert _graph_reach(served, "What did Marco do?") == {marco_window}
    assert _graph_reach(other, "What did Marco do?") == {marco_window}
    nodes_before = load_graph(served, graph_key).node_count
    marko = _entity(served, ALICE, "Marko")
    # WHEN Alice says Marko is Marco
    status, corrected = correct(ALICE, str(marko.id), {"name": "Marco"})
    # THEN the two are one entity, named Marco, known by both forms
    assert status == 200, corrected
    marco = _entity(served, ALICE, "Marco")
    assert corrected == {
        "entity_id": str(marko.id), "canonical_id": str(marco.id), "name": "Marco", "action": "merge",
        "aliases": ["Marko", "Marco"],
    }
    # AND a question naming Marco now reaches what was recorded of Marko, through a rebuilt graph
    assert _graph_reach(served, "What did Marco do?") == {marko_window, marco_window}
    assert load_graph(served, graph_key).node_count == nodes_before - 1
    assert _graph_reach(other, "What did Marco do?") == {marko_window, marco_window}
    # AND the memory view names Marco in Marko's window
    detail = served.memories.get_memory(ALICE, marko_window)
    assert [e.name for e in detail.entities if e.id == str(marko.id)] == ["Marco"]
    assert [(t.subject, t.predicate, t.object) for t in detail.triples] == [("Marco", "hands", "blue folder")]
    # AND an answer about Marco cites Marko's window
    answer = answer_question(served, ALICE, "What did Marco hand me?", now=ASKED)
    assert marko_window in {c.segment_id for c in answer.trace.citations}, answer.answer
    # AND the correction is audited
    with served.db.unit_of_work(ALICE) as session:
        [audit] = session.scalars(select(EntityCorrection)).all()
    assert (audit.user_id, audit.action, audit.old_name, audit.new_name) == (ALICE, "merge", "Marko", "Marco")
    assert (audit.entity_id, audit.target_entity_id) == (marko.id, marco.id)


def test_a_rename_gives_the_entity_the_name_questions_use(served: Services) -> None:
    kate = _entity(served, ALICE, "Kate")
    kate_window = _window(served, WINDOWS[2][0])
    assert _graph_reach(served, "What did Katie hold?") == set()
    # WHEN Alice renames Kate (no entity of hers is called Katie)
    status, corrected = correct(ALICE, str(kate.id), {"name": "  Katie "})
    # THEN it is renamed, keeps its id, and "Katie" now finds her window
    assert status == 200, corrected
    assert (corrected["action"], corrected["canonical_id"], corrected["name"]) == ("rename", str(kate.id), "Katie")
    assert corrected["aliases"] == ["Kate", "Katie"]
    assert _graph_reach(served, "What did Katie hold?") == {kate_window}
    assert "Katie" in {e.name for e in served.memories.get_memory(ALICE, kate_window).entities}
    # AND a later window saying "Katie" is resolved to her (no new entity)
    assert isinstance(served.llm, ScriptedLLM)
    script_window_models(served.llm, caption="Katie reads.", entities=["Katie"], triples=[["Katie", "reads", "book"]])
    put_window(served.store, SESSION, 3, frames=2)
    later = IngestWindowEvent(sessionId=SESSION, userId=ALICE, windowIndex=3, frameCount=2)
    assert ingest_window(served, later).status == "ok"
    with served.db.unit_of_work(ALICE) as session:
        named = session.execute(select(Entity.surface_form, Entity.canonical_entity_id)).all()
    assert [row for row in named if row.surface_form.lower() == "katie"] == [("Katie", kate.id)]


def test_another_users_entity_or_a_bad_request_changes_nothing(served: Services) -> None:
    marko = _entity(served, ALICE, "Marko")
    assert correct(BOB, str(marko.id), {"name": "Bobby"}) == (403, {"message": "Forbidden"})
    assert correct(ALICE, "not-an-id", {"name": "Marco"}) == (403, {"message": "Forbidden"})
    for body in ({"name": ""}, {"name": "   "}, {"name": "a\x00b"}, {"name": "x" * 201}, {}):
        status, answer = correct(ALICE, str(marko.id), body)
        assert status == 400, (body, answer)
    assert _entity(served, ALICE, "Marko").canonical_name == "Marko"
    with served.db.unit_of_work(ALICE) as session:
        assert session.scalars(select(EntityCorrection)).all() == []


def test_forgetting_every_memory_of_a_corrected_entity_leaves_neither_it_nor_its_correction(
    served: Services,
) -> None:
    from worldmm.timeline.forget_span import SpanTarget, forget_span

    kate = _entity(served, ALICE, "Kate")
    assert correct(ALICE, str(kate.id), {"name": "Katie"})[0] == 200
    # WHEN the only window that named her is forgotten (window 2: 60-90 s after the session started)
    started = datetime.fromisoformat(CREATED_AT)
    forget_span(served, ALICE, SpanTarget(started + timedelta(seconds=60), started + timedelta(seconds=90)))
    # THEN no entity row of hers is left (the corrected name kept none alive), nor the correction naming her
    with served.db.unit_of_work(ALICE) as session:
        names = set(session.scalars(select(Entity.surface_form)).all())
        corrections = session.scalars(select(EntityCorrection)).all()
    assert not names & {"Kate", "Katie", "red mug"}, names
    assert corrections == []
    # AND the entities other windows name are kept
    assert {"Marko", "Marco"} <= names
