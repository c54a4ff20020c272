"""Issue 28: server connections stay bounded. A process never holds more than DATABASE_POOL_SIZE +
DATABASE_MAX_OVERFLOW connections, and N concurrent Lambda containers (real processes running the
template's functions against the embedded PostgreSQL) stay under that bound and under max_connections."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from tests.support.harness import make_settings
from worldmm.db.engine import close_all_connections, get_database
from worldmm.db.local import LocalDatabase

pytestmark = pytest.mark.integration


def server_connections(pg: LocalDatabase) -> int:
    engine = create_engine(pg.admin_url)
    with engine.connect() as conn:
        count = conn.execute(
            text("SELECT count(*) FROM pg_stat_activity WHERE usename = 'worldmm_app' AND pid <> pg_backend_pid()")
        ).scalar_one()
    engine.dispose()
    return int(count)


@pytest.fixture
def fresh_pools() -> Iterator[None]:
    close_all_connections()
    yield
    close_all_connections()


def test_a_process_holds_at_most_pool_size_plus_overflow_connections(pg: LocalDatabase, fresh_pools: None) -> None:
    # GIVEN the template's pool bound (1 + 1) and no other application connection open
    database = get_database(make_settings(database_url=pg.app_url, database_pool_size=1, database_max_overflow=1))
    database.engine.dispose()
    before = server_connections(pg)
    # WHEN the process holds two connections and asks for a third
    first, second = database.engine.connect(), database.engine.connect()
    third_connected = threading.Event()

    def third() -> None:
        with database.engine.connect():
            third_connected.set()

    waiter = threading.Thread(target=third, daemon=True)
    waiter.start()
    # THEN the third waits for one of them: the server sees two
    assert not third_connected.wait(1.0)
    assert server_connections(pg) - before == 2
    # AND it proceeds once one is returned; the overflow connection is closed, the pooled one kept
    second.close()
    assert third_connected.wait(30)
    waiter.join(30)
    first.close()
    assert server_connections(pg) - before == 1


def test_concurrent_containers_stay_under_the_pool_bound_and_max_connections() -> None:
    from bench.bench_connections import main

    # GIVEN 4 containers at once (2 ingest a window, 2 answer two questions) with the template's pool
    report = main(["--levels", "4", "--pools", "template", "--frames", "4"])
    level = report["pools"]["template"]["levels"][0]
    # THEN every request succeeded
    assert level["errors"] == []
    # AND the server connections they took stayed under the stated bound and under max_connections
    assert 1 <= level["peak_connections"] <= level["bound"] == 4 * (1 + 1)
    assert level["bound"] < report["max_connections"]
    # AND idle containers hold their pool's one connection each, as warm Lambda containers do
    assert level["idle_connections"] <= 4
    # AND 2,000 executions without a proxy need executions x pool connections at most
    assert report["model"]["without_proxy"]["worst_case"] == 2000 * 2


def _prepared_statements_after_repeats(database_url: str, **settings: object) -> int:
    database = get_database(make_settings(database_url=database_url, **settings))
    with database.engine.connect() as conn:
        for _ in range(8):  # psycopg prepares a statement on its 5th use
            conn.execute(text("SELECT count(*) FROM worldmm_segments")).scalar_one()
        count = int(conn.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar_one())
    close_all_connections()
    return count


def test_behind_the_rds_proxy_no_server_side_prepared_statements_pin_a_connection(
    pg: LocalDatabase, fresh_pools: None
) -> None:
    # GIVEN a query repeated on one connection: without a proxy psycopg prepares it on the server
    assert _prepared_statements_after_repeats(pg.app_url) >= 1
    # WHEN DATABASE_PROXY_HOST names an RDS Proxy (a prepared statement would pin the session to one
    # server connection)
    # THEN nothing is prepared on the server
    assert _prepared_statements_after_repeats(pg.app_url, database_proxy_host="db.proxy-x.rds.amazonaws.com") == 0
