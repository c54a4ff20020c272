"""On real PostgreSQL, ingest and retrigger act only for the session's owner,
events that can never succeed are rejected without a write, and a model answer cut off or unusable never
becomes memory: the window is `failed` (not "nothing to extract") and retrigger selects it."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from sqlalchemy import create_engine, func, select, text

from tests.support.ingest import (
    SESSION,
    USER,
    lambda_context,
    make_ingest_services,
    put_window,
    script_window_models,
    transcriber_of,
    window_segment,
)
from worldmm.config import Profile
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.errors import ModelOutputError
from worldmm.ingest.events import IngestWindowEvent, RetriggerEvent
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM, Truncated
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

MALLORY = "user-b"
CUT = '{"caption": "The images (if any) are frames from one. 30-second window of wha'


def all_segments(admin_url: str) -> int:
    """Segments of every user (the owner role sees past row-level security)."""
    engine = create_engine(admin_url)
    with engine.connect() as conn:
        count = int(conn.execute(text("SELECT count(*) FROM worldmm_segments")).scalar_one())
    engine.dispose()
    return count


@pytest.fixture
def svc(settings, db, scripted_llm, tmp_path) -> Services:
    script_window_models(scripted_llm)
    services = make_ingest_services(settings, db, scripted_llm, tmp_path / "objects")
    put_window(services.store, frames=8)  # USER's session SESSION, window 0
    return services


def invoked(services: Services) -> list[dict[str, Any]]:
    return [payload for _, payload in services.invoker.invocations]  # type: ignore[attr-defined]


# --- ownership ------------------------------------------------------------------------------


def test_ingest_event_naming_another_user_ingests_nothing(svc: Services, pg) -> None:
    # GIVEN user A's capture session with a window uploaded
    # WHEN an ingest event names user B for A's session
    result = ingest_window(svc, IngestWindowEvent(sessionId=SESSION, userId=MALLORY, windowIndex=0, frameCount=8))
    # THEN it is rejected: no segment for anyone, A's audio never transcribed, no model asked
    assert result.model_dump() == {"status": "skipped", "reason": "session_not_owned"}
    assert all_segments(pg.admin_url) == 0
    assert transcriber_of(svc).calls == [] and cast(ScriptedLLM, svc.llm).calls == []
    # AND the owner's own event still ingests the window
    own = ingest_window(svc, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=8))
    assert own.status == "ok" and window_segment(svc.db) is not None
    assert window_segment(svc.db, user_id=MALLORY) is None


@pytest.mark.parametrize("session_id", ["01JBNOSUCHSESSION", "never-started"])
def test_ingest_unknown_session_is_rejected_not_an_empty_complete_segment(
    svc: Services, pg, session_id: str
) -> None:
    result = ingest_window(svc, IngestWindowEvent(sessionId=session_id, userId=USER, windowIndex=0, frameCount=0))
    assert result.model_dump() == {"status": "skipped", "reason": "unknown_session"}
    assert all_segments(pg.admin_url) == 0


@pytest.mark.parametrize("session_id", ["../x", "a/b", "../objects"])
def test_ingest_lambda_rejects_path_like_session_ids(svc: Services, pg, session_id: str) -> None:
    from handlers.events.ingest_window import lambda_handler

    set_services(svc)
    try:
        out = lambda_handler(
            {"sessionId": session_id, "userId": USER, "windowIndex": 0, "frameCount": 0}, lambda_context()
        )
    finally:
        set_services(None)
    assert out == {"status": "skipped", "reason": "invalid_event"}
    assert all_segments(pg.admin_url) == 0


def test_retrigger_for_another_users_session_invokes_nothing(svc: Services) -> None:
    from handlers.events.retrigger_ingest import lambda_handler

    set_services(svc)
    try:
        theirs = lambda_handler({"sessionId": SESSION, "userId": MALLORY, "force": True}, lambda_context())
        nowhere = lambda_handler({"sessionId": "01JBNORECORD", "userId": USER, "force": True}, lambda_context())
    finally:
        set_services(None)
    assert theirs["statusCode"] == 403 and nowhere["statusCode"] == 403
    assert "not found or not the user's" in json.loads(theirs["body"])["error"]
    assert invoked(svc) == []


def test_retrigger_of_a_huge_catalog_is_capped(svc: Services) -> None:
    from worldmm.ingest.events import MAX_RETRIGGER_WINDOWS
    from worldmm.ingest.retrigger import retrigger

    # GIVEN a catalog entry claiming 2^31 windows
    svc.store.put(
        f"sessions/{SESSION}/metadata.json",
        json.dumps({"userId": USER, "createdAt": "2026-05-01T10:00:00Z", "windowCount": 2**31}).encode(),
    )
    svc.invoker.handlers.clear()  # type: ignore[attr-defined]
    out = retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER, force=True))
    # THEN at most MAX_RETRIGGER_WINDOWS invokes, the rest reported as skipped
    assert len(out.triggered) == MAX_RETRIGGER_WINDOWS == len(invoked(svc))


def test_dlq_event_for_another_users_session_is_consumed(svc: Services, pg) -> None:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from worldmm.ingest.dlq import handle_dlq_record

    body = json.dumps({"requestPayload": {"sessionId": SESSION, "userId": MALLORY, "windowIndex": 0, "frameCount": 8}})
    record = SQSRecord(
        {"messageId": "m", "receiptHandle": "r", "body": body, "attributes": {"ApproximateReceiveCount": "2"}}
    )
    assert handle_dlq_record(svc, record) == {"status": "skipped", "reason": "session_not_owned"}
    assert all_segments(pg.admin_url) == 0


def test_ingest_checks_the_sessions_table_owner_in_the_aws_profile(
    settings, db, scripted_llm, tmp_path, aws
) -> None:
    import boto3

    from worldmm.capture.dynamo import capture_table_definitions

    # GIVEN the aws profile: the sessions table says who owns SESSION
    aws_settings = settings.model_copy(update={"worldmm_profile": Profile.AWS, "ingest_requires_gpu": False})
    client = boto3.client("dynamodb", region_name="us-east-1")
    sessions, _ = capture_table_definitions(aws_settings.sessions_table, aws_settings.capture_windows_table)
    client.create_table(**sessions)
    client.put_item(
        TableName=aws_settings.sessions_table,
        Item={"sessionId": {"S": SESSION}, "userId": {"S": USER}, "createdAt": {"S": "2026-05-01T10:00:00Z"}},
    )
    script_window_models(scripted_llm)
    services = make_ingest_services(aws_settings, db, scripted_llm, tmp_path / "objects")
    put_window(services.store, frames=4)
    # WHEN user B's event arrives THEN nothing; WHEN the owner's does THEN the window is ingested
    event = {"sessionId": SESSION, "windowIndex": 0, "frameCount": 4}
    assert ingest_window(services, IngestWindowEvent(**event, userId=MALLORY)).status == "skipped"
    assert window_segment(db, user_id=MALLORY) is None
    assert ingest_window(services, IngestWindowEvent(**event, userId=USER)).status == "ok"


# --- truncated or unusable model output ----------------------------------------------------


def _failed_or_complete(services: Services, index: int) -> tuple[ProcessingStatus, str | None, str | None]:
    seg = window_segment(services.db, index=index)
    assert seg is not None
    return seg.processing_status, seg.caption, seg.error


def test_caption_cut_off_by_the_token_limit_never_becomes_the_caption(settings, db, tmp_path) -> None:
    # GIVEN a silent window (frames, no audio) and a caption model cut off at the token limit, twice
    llm = script_window_models(ScriptedLLM())
    llm.script("caption", Truncated(CUT))
    services = make_ingest_services(settings, db, llm, tmp_path / "objects", transcript="")
    put_window(services.store, frames=8, audio=None)
    # WHEN ingested THEN the step fails (to the DLQ) and the window is `failed`, never complete with a fragment
    with pytest.raises(Exception, match="cut off"):
        ingest_window(services, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=8))
    status, caption, error = _failed_or_complete(services, 0)
    assert status == ProcessingStatus.FAILED and caption is None
    assert error is not None and error.startswith("TruncatedOutputError")
    # AND the retry asked for twice the room
    assert [c.max_tokens for c in llm.calls_for("caption")] == [
        settings.extraction_max_tokens,
        2 * settings.extraction_max_tokens,
    ]


def test_caption_cut_off_with_speech_degrades_to_what_was_heard_flagged(settings, db, tmp_path) -> None:
    llm = script_window_models(ScriptedLLM())
    llm.script("caption", Truncated(CUT))
    services = make_ingest_services(settings, db, llm, tmp_path / "objects", transcript="Kate: want some tea?")
    put_window(services.store, frames=8)
    ingest_window(services, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=8))
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.COMPLETE
    assert seg.caption is not None and "30-second window of wha" not in seg.caption and "tea" in seg.caption
    assert seg.caption_source == "heard"


@pytest.mark.parametrize("answer", ["I found some people.", Truncated('{"entities": ["Kate", "kit')])
def test_unusable_extraction_fails_the_window_unlike_nothing_to_extract(
    settings, db, tmp_path, answer: Any
) -> None:
    from worldmm.ingest.retrigger import retrigger

    # GIVEN two windows: the NER answer of window 0 is unusable, window 1 truly names nothing
    llm = script_window_models(ScriptedLLM())
    llm.script("ner", answer)
    llm.script("episodic_triples", {"triples": []})
    services = make_ingest_services(settings, db, llm, tmp_path / "objects")
    for index in (0, 1):
        put_window(services.store, index=index, frames=4)
    with pytest.raises(ModelOutputError):  # the extraction error itself goes to the DLQ
        ingest_window(services, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=4))
    llm.script("ner", {"entities": []})
    ingest_window(services, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=1, frameCount=4))
    # THEN window 0 is failed with the reason, window 1 complete with nothing extracted and no error
    failed, nothing = _failed_or_complete(services, 0), _failed_or_complete(services, 1)
    assert failed[0] == ProcessingStatus.FAILED and failed[2] is not None
    assert nothing[0] == ProcessingStatus.COMPLETE and nothing[2] is None
    # AND a retrigger selects the failed window only
    services.invoker.handlers.clear()  # type: ignore[attr-defined]
    out = retrigger(services, RetriggerEvent(sessionId=SESSION, userId=USER))
    assert out.triggered == [0] and out.skipped == [1]
    with db.unit_of_work(USER) as session:
        complete = session.scalar(
            select(func.count()).where(Segment.processing_status == ProcessingStatus.COMPLETE, Segment.enriched)
        )
    assert complete == 1
