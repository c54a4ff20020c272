"""Nothing runs on the memory as a role row-level security does not hold.

`get_database` (what every function and the CLI reach the memory through) checks the role it connects as:
the embedded server's superuser, a BYPASSRLS role and the tables' owner are refused; the application role
is taken.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text

from tests.support.harness import make_settings
from worldmm.db.engine import get_database
from worldmm.db.local import LocalDatabase
from worldmm.errors import ConfigurationError

pytestmark = pytest.mark.integration


def _role_url(pg: LocalDatabase, role: str) -> str:
    return pg.app_url.replace("worldmm_app@", f"{role}@")


@pytest.fixture
def bypass_role(pg: LocalDatabase) -> str:
    role = f"bypass_{uuid.uuid4().hex[:8]}"
    engine = create_engine(pg.admin_url)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN NOSUPERUSER BYPASSRLS"))
        conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
    yield role
    with engine.begin() as conn:
        conn.execute(text(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}"))
        conn.execute(text(f"DROP ROLE {role}"))
    engine.dispose()


@pytest.mark.parametrize("who", ["superuser (the owner here)", "bypassrls"])
def test_security_functions_refuse_a_role_row_level_security_does_not_hold(
    pg: LocalDatabase, bypass_role: str, who: str
) -> None:
    url = pg.admin_url if who.startswith("superuser") else _role_url(pg, bypass_role)
    with pytest.raises(ConfigurationError, match="row-level security"):
        get_database(make_settings(database_url=url))


def test_security_the_application_role_is_taken(pg: LocalDatabase) -> None:
    database = get_database(make_settings(database_url=pg.app_url))
    assert database.url == pg.app_url


# --- DATABASE_ADMIN_URL: never the application role ----------------------------------------------------------


@pytest.mark.parametrize("given", ["database_url", "database_secret_arn"])
def test_security_migrate_without_admin_url_is_a_configuration_error(given: str) -> None:
    from worldmm.db.engine import resolve_admin_url

    value = "postgresql+psycopg://worldmm_app@/worldmm" if given == "database_url" else "arn:aws:secretsmanager:x"
    settings = make_settings(**{given: value})
    assert settings.database_admin_url is None  # no silent fallback to the application role's URL
    with pytest.raises(ConfigurationError, match="DATABASE_ADMIN_URL is not set"):
        resolve_admin_url(settings)


def test_security_worldmm_migrate_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from worldmm.cli import main
    from worldmm.config import get_settings

    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://worldmm_app@/worldmm?host=/nonexistent")
    monkeypatch.delenv("DATABASE_ADMIN_URL", raising=False)
    get_settings.cache_clear()
    try:
        assert main(["migrate"]) == 2
    finally:
        get_settings.cache_clear()
    assert "DATABASE_ADMIN_URL is not set" in capsys.readouterr().err


def test_security_the_local_profile_supplies_its_owner(pg: LocalDatabase, tmp_path: object) -> None:
    from pathlib import Path

    from worldmm.db.engine import resolve_admin_url
    from worldmm.demo import local_profile

    settings = local_profile(Path(str(tmp_path)), pg)
    assert resolve_admin_url(settings) == pg.admin_url


# --- owner_maintenance_read narrowed to a maintenance role (migration 0011) ----------------------------------

_SEGMENT = (
    "INSERT INTO worldmm_segments (id, user_id, session_id, window_index, duration_seconds, start_time, end_time, "
    "caption, processing_status, frame_count, updated_at) VALUES (gen_random_uuid(), :u, 's', 0, 30, now(), now(), "
    "'secret caption', 'pending', 3, now() - interval '2 hours')"
)


def _insert_segment(app_url: str, user_id: str) -> None:
    from worldmm.db.engine import Database

    with Database(app_url).unit_of_work(user_id) as session:
        session.execute(text(_SEGMENT), {"u": user_id})


def test_security_maintenance_role_reads_keys_only(pg: LocalDatabase) -> None:
    from tests.support.harness import truncate_all

    truncate_all(pg.admin_url)
    _insert_segment(pg.app_url, "alice")
    _insert_segment(pg.app_url, "bob")
    engine = create_engine(pg.admin_url)
    try:
        with engine.connect() as conn:
            policies = dict(
                conn.execute(
                    text("SELECT policyname, roles::text FROM pg_policies WHERE tablename = 'worldmm_segments'")
                ).all()
            )
            owners = set(
                conn.execute(
                    text(
                        "SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE proname IN "
                        "('worldmm_stale_pending_windows', 'worldmm_stale_summary_windows', 'worldmm_claimed_windows')"
                    )
                ).scalars()
            )
            assert "owner_maintenance_read" not in policies
            assert policies["maintenance_read"] == "{worldmm_app_maintenance}"
            assert owners == {"worldmm_app_maintenance"}
            conn.execute(text("SET ROLE worldmm_app_maintenance"))
            keys = conn.execute(text("SELECT user_id, window_index FROM worldmm_segments ORDER BY user_id")).all()
            assert [tuple(k) for k in keys] == [("alice", 0), ("bob", 0)]
            with pytest.raises(Exception, match="permission denied"):
                conn.execute(text("SELECT caption FROM worldmm_segments"))
            conn.rollback()
        # The reaper's function still sees every user's stale windows through the application role.
        with create_engine(pg.app_url).connect() as app:
            stale = app.execute(text("SELECT user_id FROM worldmm_stale_pending_windows(interval '1 hour', 10)"))
            assert sorted(stale.scalars()) == ["alice", "bob"]
    finally:
        truncate_all(pg.admin_url)
        engine.dispose()


def test_security_an_owner_that_is_not_a_superuser_sees_no_user_rows(pg: LocalDatabase) -> None:
    """The deployed shape (RDS: the owner is no superuser): migrate as such an owner, then the owner's own
    connection reads none of a user's segments, and the reaper still works."""
    from worldmm.db import migrate

    suffix = uuid.uuid4().hex[:8]
    owner, app_role, database = f"owner_{suffix}", f"app_{suffix}", f"rds_{suffix}"
    admin = create_engine(pg.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE ROLE {owner} LOGIN CREATEROLE NOSUPERUSER NOBYPASSRLS"))
        conn.execute(text(f'CREATE DATABASE "{database}" OWNER {owner}'))
    ext = create_engine(pg.admin_url.replace("/worldmm?", f"/{database}?"), isolation_level="AUTOCOMMIT")
    with ext.connect() as conn:  # RDS: rds_superuser creates extensions; here the superuser does
        conn.execute(text("CREATE EXTENSION vector"))
    ext.dispose()
    owner_url = pg.admin_url.replace("postgres@", f"{owner}@").replace("/worldmm?", f"/{database}?")
    app_url = pg.app_url.replace("worldmm_app@", f"{app_role}@").replace("/worldmm?", f"/{database}?")
    settings = make_settings(database_app_role=app_role)
    migrate.upgrade(settings, admin_url=owner_url)
    try:
        _insert_segment(app_url, "alice")
        owner_engine = create_engine(owner_url)
        with owner_engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM worldmm_segments")).scalar_one() == 0
            inherits = conn.execute(text(f"SELECT pg_has_role('{app_role}_maintenance', 'USAGE')")).scalar_one()
            assert inherits is False  # the owner holds none of the maintenance role's privileges
        owner_engine.dispose()
        with create_engine(app_url).connect() as app:
            stale = app.execute(text("SELECT user_id FROM worldmm_stale_pending_windows(interval '1 hour', 10)"))
            assert list(stale.scalars()) == ["alice"]
        migrate.downgrade(settings, "0010", admin_url=owner_url)
        migrate.upgrade(settings, admin_url=owner_url)
    finally:
        from worldmm.db.engine import _engine_for

        _engine_for.cache_clear()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{database}" WITH (FORCE)'))
            for role in (f"{app_role}_maintenance", app_role, owner):
                conn.execute(text(f"DROP ROLE IF EXISTS {role}"))
        admin.dispose()
