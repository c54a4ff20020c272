"""The local page shows its owner's app events as they happen (issue 65), in a real headless browser:
Alice's window remembered appears in her event list within seconds; Bob's never does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import chromium
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.ingest import CREATED_AT, ingest_scripted_window, make_ingest_services
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.gateway.auth import issue_token
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-alice", "user-bob"


@pytest.fixture
def services(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    yield make_ingest_services(settings, db, scripted_llm, tmp_path / "objects")
    set_services(None)


@pytest.fixture
def gateway(services: Services) -> Iterator[RunningGateway]:
    with running_gateway(services) as running:
        yield running


def test_the_page_lists_its_owners_events_as_they_happen(
    gateway: RunningGateway, services: Services, scripted_llm: ScriptedLLM
) -> None:
    with chromium() as browser:
        page = browser.new_context(timezone_id="UTC").new_page()
        errors: list[object] = []
        page.on("pageerror", lambda error: errors.append(error))
        # GIVEN Alice signed in on the page
        page.goto(f"{gateway.url}/?day={CREATED_AT[:10]}")
        page.fill("#token", issue_token(ALICE, services.settings))
        page.click("#sign-in-form button[type=submit]")
        page.wait_for_selector("body[data-timeline=done]", state="attached")
        page.wait_for_timeout(300)  # the event stream is open
        # WHEN a window of Bob's and then one of Alice's are remembered
        for user, session in ((BOB, "sess-bob-000001"), (ALICE, "sess-alice-000002")):
            ingest_scripted_window(
                services, scripted_llm, user, session, caption="Kate holds a mug.", entities=["Kate"], triples=[]
            )
        # THEN Alice's event is listed within seconds, and Bob's is not
        page.wait_for_selector("#event-log li.WindowProcessed", timeout=5000)
        assert page.locator("#event-log li").all_text_contents() == ["Window 0 of …000002 remembered"]
        assert errors == []
