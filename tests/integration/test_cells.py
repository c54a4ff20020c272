"""Two database cells (two embedded PostgreSQL servers): a user on each, neither seeing the other's; a move
that copies, verifies, switches and erases; a move under load; forget-me on a moved user; a move killed at
every step, finished by running it again (issue 63)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cells import cell_services, empty_cell, record_window, rows_of, two_cell_settings
from tests.support.harness import embedded_postgres, make_settings
from worldmm.cells.port import Placement
from worldmm.chat.service import handle_chat
from worldmm.config import Settings
from worldmm.db.local import LocalDatabase
from worldmm.errors import MemoryUnavailableError, UserMovingError
from worldmm.forget_user import forget_user
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pg2() -> Iterator[LocalDatabase]:
    """The second cell: its own embedded server, migrated to head."""
    with embedded_postgres(make_settings()) as local:
        yield local


@pytest.fixture
def cells(pg: LocalDatabase, pg2: LocalDatabase, tmp_path: Path) -> Settings:
    for cell in (pg, pg2):
        empty_cell(cell.admin_url)
    return two_cell_settings(pg, pg2, tmp_path)


@pytest.fixture
def services(cells: Settings, tmp_path: Path) -> Services:
    return cell_services(cells, tmp_path)


def _place(services: Services, user: str, cell: str) -> None:
    assert services.cells is not None
    assert services.cells.placements.place(user, cell) == Placement(user, cell)


def test_a_new_user_goes_to_the_cell_with_the_most_room(pg: LocalDatabase, pg2: LocalDatabase, tmp_path: Path) -> None:
    # GIVEN cell b with more capacity than a
    for cell in (pg, pg2):
        empty_cell(cell.admin_url)
    settings = two_cell_settings(pg, pg2, tmp_path)
    roomy = [settings.database_cells[0], settings.database_cells[1].model_copy(update={"capacity_gb": 5000.0})]
    services = cell_services(settings.model_copy(update={"database_cells": roomy}), tmp_path)
    # WHEN a new user records a window
    assert record_window(services, "new-user", "S-new-0001", 0) == "ok"
    # THEN they were placed on b, and their memory is there and only there
    assert services.cells is not None and services.cells.cell_of("new-user") == "b"
    assert rows_of(pg2.admin_url, "new-user").get("worldmm_segments", 0) >= 1
    assert rows_of(pg.admin_url, "new-user") == {}


def test_a_user_from_before_the_cells_stays_on_the_first_cell(
    pg: LocalDatabase, pg2: LocalDatabase, tmp_path: Path
) -> None:
    # GIVEN a deployment of one database (no cells, no placement map) where a user recorded a window
    for cell in (pg, pg2):
        empty_cell(cell.admin_url)
    single = cell_services(make_settings(database_url=pg.app_url, database_admin_url=pg.admin_url), tmp_path)
    assert single.cells is None and record_window(single, "veteran", "S-vete-0001", 0) == "ok"
    # WHEN it grows a second cell with far more room (CellCount 2)
    settings = two_cell_settings(pg, pg2, tmp_path)
    roomy = [settings.database_cells[0], settings.database_cells[1].model_copy(update={"capacity_gb": 5000.0})]
    services = cell_services(settings.model_copy(update={"database_cells": roomy}), tmp_path)
    # THEN the user is placed on the first cell, where their memory is, and keeps recording there
    assert record_window(services, "veteran", "S-vete-0001", 1) == "ok"
    assert services.cells is not None and services.cells.cell_of("veteran") == "a"
    assert rows_of(pg.admin_url, "veteran")["worldmm_segments"] >= 2 and rows_of(pg2.admin_url, "veteran") == {}
    # AND a user never seen goes to the roomiest cell
    assert services.cells.cell_of("newcomer") == "b"


def test_a_user_on_each_cell_sees_only_their_own_memory(
    services: Services, pg: LocalDatabase, pg2: LocalDatabase
) -> None:
    # GIVEN one user on each cell, each with a window and a chat
    _place(services, "on-a", "a")
    _place(services, "on-b", "b")
    for user, session in (("on-a", "S-aaaa-0001"), ("on-b", "S-bbbb-0001")):
        assert record_window(services, user, session, 0) == "ok"
        handle_chat(services.for_user(user), user, "Who was I with?")
    # THEN each cell holds its user's rows and none of the other's
    assert rows_of(pg.admin_url, "on-b") == {} and rows_of(pg2.admin_url, "on-a") == {}
    assert rows_of(pg.admin_url, "on-a")["worldmm_chat_messages"] == 2
    assert rows_of(pg2.admin_url, "on-b")["worldmm_chat_messages"] == 2
    # AND each user's services reach only their cell
    assert services.for_user("on-a").db.url == pg.app_url
    assert services.for_user("on-b").db.url == pg2.app_url
    timeline = services.for_user("on-b").memories.list_memories
    assert timeline is not None


def test_the_cell_is_resolved_when_the_invocation_first_reaches_the_database(services: Services) -> None:
    # GIVEN the ports of a user never seen (aws: the chat list reaches only DynamoDB through them)
    assert services.cells is not None
    routed = services.for_user("lazy")
    # THEN nothing is placed until the database is reached; then once, and the same cell after
    assert services.cells.placements.get("lazy") is None
    first = routed.db
    assert services.cells.placements.get("lazy") is not None
    assert routed.db is first and routed.for_user("lazy") is routed


def test_without_a_resolved_user_no_cell_is_guessed(services: Services) -> None:
    from worldmm.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        _ = services.db


def test_a_move_copies_verifies_switches_and_erases(services: Services, pg: LocalDatabase, pg2: LocalDatabase) -> None:
    # GIVEN a user on a with two windows, a chat, and a bystander on a
    _place(services, "mover", "a")
    _place(services, "stayer", "a")
    for index in (0, 1):
        assert record_window(services, "mover", "S-move-0001", index) == "ok"
    assert record_window(services, "stayer", "S-stay-0001", 0) == "ok"
    handle_chat(services.for_user("mover"), "mover", "Who was I with?")
    before = rows_of(pg.admin_url, "mover")
    stayer = rows_of(pg.admin_url, "stayer")
    # WHEN the operator moves them to b
    report = services.cell_mover().move("mover", "b")
    # THEN every row is on b and none on a; the map says b; the bystander is untouched
    after = rows_of(pg2.admin_url, "mover")
    assert {t: n for t, n in after.items() if "generations" not in t} == {
        t: n for t, n in before.items() if "generations" not in t
    }
    assert rows_of(pg.admin_url, "mover") == {}
    assert rows_of(pg.admin_url, "stayer") == stayer
    assert services.cells is not None and services.cells.placements.get("mover") == Placement("mover", "b")
    assert report.bytes_copied > 0 and report.rows["worldmm_segments"] == before["worldmm_segments"]
    # AND they keep recording and asking, on b; a move again to b does nothing
    assert record_window(services, "mover", "S-move-0001", 2) == "ok"
    assert handle_chat(services.for_user("mover"), "mover", "And where?").answer
    assert rows_of(pg.admin_url, "mover") == {}
    assert services.cell_mover().move("mover", "b").resumed_at == "done"


def test_a_unit_of_work_on_the_old_cell_after_the_move_is_refused(services: Services) -> None:
    # GIVEN a process that resolved the user's cell before the move
    _place(services, "stale", "a")
    assert record_window(services, "stale", "S-stal-0001", 0) == "ok"
    resolved_before = services.for_user("stale")
    with resolved_before.db.unit_of_work("stale"):  # its first unit of work resolves the cell: a
        pass
    services.cell_mover().move("stale", "b")
    # WHEN it reads or writes with what it resolved; THEN a 503 to retry, nothing read or written on a
    with pytest.raises(UserMovingError), resolved_before.db.unit_of_work("stale"):
        pass
    assert services.for_user("stale").db.url != resolved_before.db.url


def test_forget_me_on_a_moved_user_leaves_nothing_in_either_cell(
    services: Services, pg: LocalDatabase, pg2: LocalDatabase
) -> None:
    # GIVEN a user moved from a to b, who then recorded more on b
    _place(services, "forgotten", "a")
    assert record_window(services, "forgotten", "S-forg-0001", 0) == "ok"
    handle_chat(services.for_user("forgotten"), "forgotten", "Who was I with?")
    services.cell_mover().move("forgotten", "b")
    assert record_window(services, "forgotten", "S-forg-0001", 1) == "ok"
    # WHEN forget-me runs as the forget function does
    report = forget_user(services.for_user("forgotten"), "forgotten", requested_by="test")
    # THEN no row of theirs is in either cell, and the audit says it completed
    assert report.complete
    assert rows_of(pg.admin_url, "forgotten") == {}
    assert rows_of(pg2.admin_url, "forgotten") == {}


def test_a_move_under_load_loses_and_doubles_nothing(services: Services, pg: LocalDatabase, pg2: LocalDatabase) -> None:
    # GIVEN the mover's user and three others recording windows and asking, in threads, retrying a 503
    users = ["busy", "other-1", "other-2", "other-3"]
    for i, user in enumerate(users):
        _place(services, user, "a" if i % 2 == 0 else "b")
        assert record_window(services, user, f"S-load-{i:04d}", 0) == "ok"
    acked: dict[str, list[int]] = {u: [0] for u in users}
    asked: dict[str, int] = {u: 0 for u in users}
    refused: dict[str, int] = {u: 0 for u in users}
    stop = threading.Event()
    errors: list[BaseException] = []

    def wearer(i: int, user: str) -> None:
        index = 1
        try:
            while not stop.is_set() or index <= 3:
                try:
                    if record_window(services, user, f"S-load-{i:04d}", index) == "ok":
                        acked[user].append(index)
                        index += 1
                    handle_chat(services.for_user(user), user, "Who was I with?")
                    asked[user] += 1
                except MemoryUnavailableError:  # UserMovingError, or chat's 503 over it: nothing saved
                    refused[user] += 1
                    time.sleep(0.05)
                if index > 12:
                    break
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=wearer, args=(i, u)) for i, u in enumerate(users)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    # WHEN the busy user is moved while everyone records and asks
    services.cell_mover().move("busy", "b")
    stop.set()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    # THEN every acknowledged window is stored exactly once, on the user's cell only; every answer saved
    for user in users:
        home = pg2 if services.cells is not None and services.cells.cell_of(user) == "b" else pg
        away = pg if home is pg2 else pg2
        from sqlalchemy import create_engine, text

        engine = create_engine(home.admin_url)
        with engine.connect() as conn:
            windows = conn.execute(
                text(
                    "SELECT window_index, count(*) FROM worldmm_segments WHERE user_id = :u AND duration_seconds = 30 "
                    "GROUP BY 1"
                ),
                {"u": user},
            ).all()
            messages = conn.execute(
                text("SELECT count(*) FROM worldmm_chat_messages WHERE user_id = :u AND role = 'assistant'"),
                {"u": user},
            ).scalar()
        engine.dispose()
        stored = {w: n for w, n in windows}
        assert all(n == 1 for n in stored.values()), (user, stored)
        assert set(acked[user]) <= set(stored), (user, acked[user], stored)
        assert messages == asked[user], (user, messages, asked[user])
        assert rows_of(away.admin_url, user) == {}


# --- the MCP function and the DLQ consumer on the caller's cell ------------------------------------------------


def _mcp_call(sub: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call through McpFunction's handler, behind the JWT authorizer's `sub`."""
    from typing import cast

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from handlers.http.mcp.app import lambda_handler
    from worldmm.gateway.events import LocalLambdaContext, build_event

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": "Bearer token-the-authorizer-verified",
    }
    event = build_event("POST", "/mcp", headers, json.dumps(body).encode(), {"sub": sub})
    return lambda_handler(event, cast(LambdaContext, LocalLambdaContext("McpFunction")))


def test_the_mcp_function_serves_each_caller_from_their_own_cell(services: Services) -> None:
    # GIVEN a user on each cell, each with a window of their own session
    _place(services, "mcp-a", "a")
    _place(services, "mcp-b", "b")
    assert record_window(services, "mcp-a", "S-mcpa-0001", 0) == "ok"
    assert record_window(services, "mcp-b", "S-mcpb-0001", 0) == "ok"
    set_services(services)
    try:
        # WHEN each asks McpFunction for their timeline
        answers = {user: _mcp_call(user, "timeline", {"scale": 30}) for user in ("mcp-a", "mcp-b")}
    finally:
        set_services(None)
    # THEN each call reached the caller's cell (no ConfigurationError) and lists that caller's window only
    for user, session in (("mcp-a", "S-mcpa-0001"), ("mcp-b", "S-mcpb-0001")):
        assert answers[user]["statusCode"] == 200, answers[user]["body"]
        result = json.loads(answers[user]["body"])["result"]
        assert not result.get("isError"), result
        assert [m["session_id"] for m in result["structuredContent"]["memories"]] == [session]


def _dlq_event(body: dict[str, Any]) -> dict[str, Any]:
    record = {
        "messageId": "m-1",
        "receiptHandle": "r-1",
        "body": json.dumps(body),
        "attributes": {
            "ApproximateReceiveCount": "2",
            "SentTimestamp": "0",
            "SenderId": "x",
            "ApproximateFirstReceiveTimestamp": "0",
        },
        "messageAttributes": {},
        "md5OfBody": "x",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:ingest-dlq",
        "awsRegion": "us-east-1",
    }
    return {"Records": [record]}


def test_the_dlq_consumer_retries_a_window_on_its_users_cell(
    services: Services, pg: LocalDatabase, pg2: LocalDatabase
) -> None:
    from handlers.events.ingest_window import sqs_handler
    from tests.support.ingest import lambda_context, put_session, put_window

    # GIVEN a user on b whose window's ingest failed and went to the DLQ (as Lambda's OnFailure record)
    _place(services, "dlq-b", "b")
    put_session(services.store, "S-dlqb-0001", user_id="dlq-b")
    put_window(services.store, "S-dlqb-0001", 0, frames=2)
    window = {"sessionId": "S-dlqb-0001", "userId": "dlq-b", "windowIndex": 0, "frameCount": 2}
    failure = {"requestContext": {"condition": "RetriesExhausted"}, "requestPayload": window}
    set_services(services)
    try:
        # WHEN the consumer takes the message, and then one that is not an event at all
        out = sqs_handler(_dlq_event(failure), lambda_context())
        junk = sqs_handler({"Records": [{**_dlq_event(failure)["Records"][0], "body": "not json"}]}, lambda_context())
    finally:
        set_services(None)
    # THEN the window is stored on b, none of it on a; the junk is consumed without reaching any cell
    assert out == {"batchItemFailures": []} and junk == {"batchItemFailures": []}
    assert rows_of(pg2.admin_url, "dlq-b").get("worldmm_segments", 0) >= 1
    assert rows_of(pg.admin_url, "dlq-b") == {}


# --- forget-me leaves no user id in the cells' records -----------------------------------------------------


def _departures(admin_url: str, user_id: str) -> list[str]:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:
            return list(
                conn.execute(
                    text("SELECT state FROM worldmm_cell_departures WHERE departed_user = :u"), {"u": user_id}
                ).scalars()
            )
    finally:
        engine.dispose()


def _placement_rows(admin_url: str, user_id: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM worldmm_cell_placements WHERE placed_user = :u"), {"u": user_id}
                ).scalar_one()
            )
    finally:
        engine.dispose()


def _age_departures(admin_url: str, seconds: int) -> None:
    """As if the switch happened `seconds` ago."""
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE worldmm_cell_departures SET updated_at = now() - make_interval(secs => :s)"), {"s": seconds}
        )
    engine.dispose()


def _moved_and_recording(services: Services, user: str, session: str) -> None:
    _place(services, user, "a")
    assert record_window(services, user, session, 0) == "ok"
    services.cell_mover().move(user, "b")
    assert record_window(services, user, session, 1) == "ok"


def test_forget_me_prunes_the_old_cells_record_and_the_placement(
    services: Services, pg: LocalDatabase, pg2: LocalDatabase
) -> None:
    # GIVEN a user moved from a to b an hour ago, recording on b since
    _moved_and_recording(services, "gone", "S-gone-0001")
    _age_departures(pg.admin_url, 3600)
    assert _departures(pg.admin_url, "gone") == ["moved"] and _placement_rows(pg.admin_url, "gone") == 1
    # WHEN forget-me runs as the forget function does
    report = forget_user(services.for_user("gone"), "gone", requested_by="test")
    # THEN neither cell holds a row, a departure record or a placement naming them
    assert report.complete
    assert report.deleted["cells.departures"] == 1 and report.deleted["cells.placement"] == 1
    for cell in (pg, pg2):
        assert rows_of(cell.admin_url, "gone") == {}
        assert _departures(cell.admin_url, "gone") == []
        assert _placement_rows(cell.admin_url, "gone") == 0


def test_a_fresh_departure_record_outlives_forget_me_until_no_function_can_need_it(
    services: Services, pg: LocalDatabase, pg2: LocalDatabase
) -> None:
    # GIVEN a process that resolved the user's old cell before a move, and forget-me right after the move
    _place(services, "quick", "a")
    assert record_window(services, "quick", "S-quic-0001", 0) == "ok"
    resolved_before = services.for_user("quick")
    assert resolved_before.db.url == pg.app_url
    services.cell_mover().move("quick", "b")
    report = forget_user(services.for_user("quick"), "quick", requested_by="test")
    # THEN the placement is gone but a's record stays: the stale process is still refused on a
    assert report.complete and report.deleted["cells.departures"] == 0
    assert _placement_rows(pg.admin_url, "quick") == 0 and _departures(pg.admin_url, "quick") == ["moved"]
    with pytest.raises(UserMovingError), resolved_before.db.unit_of_work("quick"):
        pass
    # AND the reaper's sweep leaves it while a function could still hold the old cell (under 900 s, whatever the
    # setting), then prunes it: nothing names the user in either cell
    assert services.placement.prune_departures() == 0
    _age_departures(pg.admin_url, 899)
    assert services.placement.prune_departures() == 0
    _age_departures(pg.admin_url, services.settings.cell_departure_keep_s + 1)
    assert services.placement.prune_departures() == 1
    for cell in (pg, pg2):
        assert rows_of(cell.admin_url, "quick") == {} and _departures(cell.admin_url, "quick") == []


def test_a_departure_record_stays_while_its_cell_holds_the_users_rows(services: Services, pg: LocalDatabase) -> None:
    from sqlalchemy import create_engine, text

    # GIVEN a user's rows still on a beside an old `moved` record (a move killed between switch and erase)
    _place(services, "halfway", "a")
    assert record_window(services, "halfway", "S-half-0001", 0) == "ok"
    engine = create_engine(pg.admin_url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO worldmm_cell_departures (departed_user, state, to_cell, updated_at) "
                "VALUES ('halfway', 'moved', 'b', now() - interval '1 day')"
            )
        )
    engine.dispose()
    # WHEN the sweep runs; THEN the record stays: re-running the move finds its source from it
    assert services.placement.prune_departures() == 0
    assert _departures(pg.admin_url, "halfway") == ["moved"]


def test_forget_me_refuses_to_finish_while_a_move_is_unfinished(services: Services, pg: LocalDatabase) -> None:
    from worldmm.cells.port import PlacementConflict

    # GIVEN a user whose move to b has begun (the map marks it) and not finished
    _place(services, "midway", "a")
    assert record_window(services, "midway", "S-midw-0001", 0) == "ok"
    services.cell_mover().placements.begin_move("midway", "a", "b")
    # WHEN forget-me runs; THEN it fails before the placement goes (retried, or re-run after the move)
    with pytest.raises(PlacementConflict):
        forget_user(services.for_user("midway"), "midway", requested_by="test")
    assert _placement_rows(pg.admin_url, "midway") == 1
