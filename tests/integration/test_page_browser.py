"""The local page of `worldmm serve` in a real headless browser (Debian's Chromium, Playwright for Python).

Alice signs in with a development token, sees her day at the four scales, searches it, asks a question,
follows the answer's citation to the memory it cites, corrects an entity's name there and forgets a span. A
caption holding markup stays text. Memories come from the real ingest pipeline (scripted models) on the real
database; the browser talks to 127.0.0.1 only.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import chromium
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.ingest import (
    CREATED_AT,
    ingest_scripted_window,
    make_ingest_services,
)
from worldmm.config import AgentMode, Settings
from worldmm.db.engine import Database
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.gateway.auth import issue_token
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-alice", "user-bob"
DAY = CREATED_AT[:10]
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">Kettle'


def _row(user: str, session: str, index: int, seconds: int, caption: str) -> Segment:
    start = datetime.fromisoformat(CREATED_AT).astimezone(UTC) + timedelta(seconds=index * seconds)
    return Segment(
        user_id=user,
        session_id=session,
        window_index=index,
        duration_seconds=seconds,
        start_time=start,
        end_time=start + timedelta(seconds=seconds),
        caption=caption,
        caption_source="heard",
        processing_status=ProcessingStatus.COMPLETE,
    )


@pytest.fixture
def memories(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    """Alice: one ingested window (Kate and a red mug), a window whose caption is markup, and a summary at each
    longer scale; Bob: one ingested window of his own."""
    services = make_ingest_services(
        settings.model_copy(update={"agent_mode": AgentMode.PLAN}), db, scripted_llm, tmp_path / "objects"
    )
    for user, session, caption, entities, triples in (
        (ALICE, "sess-alice", "Kate holds a red mug in the kitchen.", ["Kate", "mug"], [["Kate", "holds", "red mug"]]),
        (BOB, "sess-bob", "Tom rides a blue bicycle in the garage.", ["Tom", "bicycle"], [["Tom", "rides", "bicycle"]]),
    ):
        ingest_scripted_window(
            services, scripted_llm, user, session, caption=caption, entities=entities, triples=triples
        )
    with db.unit_of_work(ALICE) as session:
        session.add_all(
            [
                _row(ALICE, "sess-alice", 1, 30, HOSTILE),
                _row(ALICE, "sess-alice", 0, 180, "Kate and a red mug, then the kettle."),
                _row(ALICE, "sess-alice", 0, 600, "Morning in the kitchen."),
                _row(ALICE, "sess-alice", 0, 3600, "A morning at home."),
            ]
        )
    yield services
    set_services(None)


@pytest.fixture
def gateway(memories: Services) -> Iterator[RunningGateway]:
    with running_gateway(memories) as running:
        yield running


def _lane(scale: int) -> str:
    return f'.lane[data-scale="{scale}"] li.memory'


def test_page_and_its_files_come_from_the_package_with_a_strict_policy(gateway: RunningGateway) -> None:
    page = httpx.get(gateway.url + "/", timeout=10)
    script = httpx.get(gateway.url + "/page/app.js", timeout=10)
    missing = httpx.get(gateway.url + "/page/nothing.js", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert 'src="/page/app.js"' in page.text and "http" not in page.text.lower().replace("http-equiv", "")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert missing.status_code == 404 and missing.json() == {"message": "Not Found"}


def test_sign_in_timeline_search_ask_follow_a_citation_correct_and_forget(
    gateway: RunningGateway, memories: Services
) -> None:
    token = issue_token(ALICE, memories.settings)
    outside: list[str] = []
    with chromium() as browser:
        context = browser.new_context(timezone_id="UTC", viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.on("request", lambda r: None if r.url.startswith(gateway.url) else outside.append(r.url))
        errors: list[Any] = []
        page.on("pageerror", lambda error: errors.append(error))
        # GIVEN the page, signed out
        page.goto(f"{gateway.url}/?day={DAY}")
        assert page.locator("#sign-in").is_visible() and not page.locator("#app").is_visible()
        # WHEN Alice pastes her token
        page.fill("#token", token)
        page.click("#sign-in-form button[type=submit]")
        # THEN her day is shown at the four scales, oldest first, and none of Bob's
        page.wait_for_selector(_lane(3600))
        page.wait_for_selector("body[data-timeline=done]", state="attached")
        windows = page.locator(_lane(30) + " .caption").all_text_contents()
        assert windows == ["Kate holds a red mug in the kitchen.", HOSTILE]
        summaries = {180: "Kate and a red mug", 600: "Morning in the kitchen", 3600: "A morning at home"}
        for scale, caption in summaries.items():
            assert caption in page.locator(_lane(scale)).inner_text()
        assert "bicycle" not in page.locator("#timeline").inner_text()
        assert page.evaluate("sessionStorage.getItem('worldmm.token')") == token
        # AND the caption holding markup is text: nothing of it ran or became an element
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#timeline img, #timeline script").count() == 0

        # WHEN she searches the day for "mug"
        page.fill("#search", "red mug")
        # THEN only memories with those words stay shown
        visible = page.locator(_lane(30) + ":visible .caption").all_text_contents()
        assert visible == ["Kate holds a red mug in the kitchen."]
        assert page.locator("#search-count").inner_text() == "2 of 5 match"
        page.fill("#search", "")
        # AND the day after holds nothing, the day before it everything again
        page.click("#day-after")
        page.wait_for_selector("#timeline-status:has-text('Nothing remembered')")
        page.click("#day-before")
        page.wait_for_selector(_lane(30))
        assert page.locator("#day").input_value() == DAY

        # WHEN she asks a question
        page.fill("#question", "What did Kate hold?")
        page.click("#chat-form button[type=submit]")
        citation = page.locator("#chat-log .citations a").first
        citation.wait_for()
        assert "mug" in page.locator("#chat-log .answer p").first.inner_text().lower()
        # AND follows the answer's citation
        citation.click()
        page.wait_for_selector("#memory-body .caption")
        # THEN the memory it cites is shown with its entities and facts
        body = page.locator("#memory-body").inner_text()
        assert "Kate holds a red mug in the kitchen." in body
        assert "Kate" in page.locator("#memory-body .entities").inner_text()
        assert "Kate — holds — red mug" in page.locator("#memory-body .triples").inner_text()
        assert page.url.split("#memory/")[1] == _window_id(memories, "Kate holds a red mug in the kitchen.")
        # WHEN she corrects the name the recogniser gave Kate
        kate = page.locator("#memory-body .entity", has_text="Kate")
        kate.locator("button.inline").click()
        kate.locator(".rename input").fill("Katie")
        kate.locator(".rename button[type=submit]").click()
        # THEN the memory is shown again with the corrected name, in its entities and its facts
        page.wait_for_selector("#memory-note:has-text('Renamed to Katie')")
        assert "Katie — holds — red mug" in page.locator("#memory-body .triples").inner_text()
        # WHEN she forgets the half minute of the window whose caption is markup
        page.fill("#forget-from", f"{DAY}T10:00:30")
        page.fill("#forget-to", f"{DAY}T10:01:00")
        page.check("#forget-confirm")
        page.click("#forget-form button[type=submit]")
        page.wait_for_selector("#forget-result:has-text('Forgotten 10:00:30–10:01:00')")
        page.wait_for_selector("body[data-timeline=done]", state="attached")
        # THEN the day no longer holds it, the window before it stays, and the page says what was erased
        assert page.locator(_lane(30) + " .caption").all_text_contents() == ["Kate holds a red mug in the kitchen."]
        assert "postgres.windows: 1" in page.locator("#forget-result").inner_text()
        # AND the browser asked nothing of any other address, and no script failed
        assert outside == [] and errors == []
        context.close()


def test_a_refused_token_returns_to_sign_in(gateway: RunningGateway, memories: Services) -> None:
    forged = issue_token(ALICE, memories.settings)[:-4] + "AAAA"
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{gateway.url}/?day={DAY}")
        page.fill("#token", forged)
        page.click("#sign-in-form button[type=submit]")
        page.wait_for_selector("#sign-in-error:has-text('refused')")
        assert page.locator("#sign-in").is_visible()
        assert page.evaluate("sessionStorage.getItem('worldmm.token')") is None


def _window_id(services: Services, caption: str) -> str:
    from sqlalchemy import select

    with services.db.unit_of_work(ALICE) as session:
        found = select(Segment.id).where(Segment.caption == caption, Segment.duration_seconds == 30)
        return str(session.scalars(found).one())
