"""Engines and units of work; every unit of work for a user sets `app.user_id` for row-level security."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from worldmm.config import Settings
from worldmm.db.vector_type import register_vector_dumper

USER_SETTING = "app.user_id"


@lru_cache(maxsize=8)
def _engine_for(url: str, pool_size: int = 10, max_overflow: int = 20, prepare: bool = True) -> Engine:
    # Behind RDS Proxy, server-side prepared statements (psycopg prepares a query after 5 uses) would pin
    # every client connection to one server connection and undo the proxy's multiplexing.
    connect_args = {} if prepare else {"prepare_threshold": None}
    engine = create_engine(
        url,
        pool_pre_ping=True,
        pool_size=pool_size,
        max_overflow=max_overflow,
        connect_args=connect_args,
        future=True,
    )
    # Every connection can bind vectors, whichever module was imported first (see vector_type).
    event.listen(engine, "connect", lambda dbapi_connection, _record: register_vector_dumper(dbapi_connection))
    return engine


def resolve_database_url(settings: Settings) -> str:
    """The application role's SQLAlchemy URL (from settings, a Secrets Manager secret, or local PostgreSQL)."""
    if settings.database_url:
        return settings.database_url
    if settings.database_secret_arn:
        from worldmm.db.secret import url_from_secret

        return url_from_secret(
            settings.database_secret_arn,
            max_age_s=settings.database_secret_max_age_s,
            host=settings.database_proxy_host,
        )
    from worldmm.db.local import ensure_local_database

    return ensure_local_database(settings).app_url


def resolve_admin_url(settings: Settings) -> str:
    """The owner role's URL, used only to apply migrations: DATABASE_ADMIN_URL, or the local profile's embedded
    server's. Never the application role's: where the database is given (DATABASE_URL, DATABASE_SECRET_ARN)
    and DATABASE_ADMIN_URL is not, a ConfigurationError."""
    if settings.database_admin_url:
        return settings.database_admin_url
    if settings.database_url or settings.database_secret_arn:
        from worldmm.errors import ConfigurationError

        given = "DATABASE_URL" if settings.database_url else "DATABASE_SECRET_ARN"
        raise ConfigurationError(
            f"DATABASE_ADMIN_URL is not set: `worldmm migrate` runs as the tables' owner role, and {given} names "
            "the application role, which must neither own nor create them. Set DATABASE_ADMIN_URL to the owner's "
            "URL (e.g. postgresql+psycopg://owner@host/worldmm)."
        )
    from worldmm.db.local import ensure_local_database

    return ensure_local_database(settings).admin_url


class Database:
    """The application's handle on PostgreSQL: hands out units of work scoped to one user."""

    def __init__(
        self, url: str, *, pool_size: int = 10, max_overflow: int = 20, prepare: bool = True, fenced: bool = False
    ) -> None:
        self.url = url
        self.engine = _engine_for(url, pool_size, max_overflow, prepare)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.fenced = fenced

    @contextmanager
    def unit_of_work(self, user_id: str | None) -> Iterator[Session]:
        """One transaction in which only `user_id`'s rows are visible; commits on success.

        On a database cell (`fenced`, deployments of two or more cells) it also enters the user's cell
        (migration 0018): a user being moved out of this cell, or moved out, is a UserMovingError before any
        row is read or written."""
        with self._sessions() as session, session.begin():
            if user_id is not None:
                if not user_id:
                    raise ValueError("user_id must be non-empty")
                if self.fenced:
                    departed = session.execute(
                        text("SELECT set_config(:k, :v, true), worldmm_cell_entry(:v)"),
                        {"k": USER_SETTING, "v": user_id},
                    ).one()[1]
                    if departed is not None:
                        from worldmm.errors import UserMovingError

                        raise UserMovingError()
                else:
                    session.execute(text("SELECT set_config(:k, :v, true)"), {"k": USER_SETTING, "v": user_id})
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


_databases: dict[str, Database] = {}


# Held directly or through any role it is a member of (a member may SET ROLE to it, or inherits an owner's rights
# to ALTER a table out of row-level security): pg_has_role(..., 'MEMBER') follows the whole membership graph.
_ROLE_SQL = """
SELECT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolsuper AND pg_has_role(current_user, r.oid, 'MEMBER'))
           AS superuser,
       EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolbypassrls AND pg_has_role(current_user, r.oid, 'MEMBER'))
           AS bypass_rls,
       EXISTS (SELECT 1 FROM pg_tables t WHERE t.schemaname = current_schema()
                                           AND pg_has_role(current_user, t.tableowner, 'MEMBER'))
           AS owns_tables
"""


def check_application_role(database: Database) -> None:
    """ConfigurationError when `database` connects as a role row-level security does not hold: a superuser,
    a BYPASSRLS role, or the tables' owner, itself or through a role it is a member of. Functions and the CLI
    refuse to start as one (migrations use the owner through DATABASE_ADMIN_URL, never through this)."""
    from worldmm.errors import ConfigurationError

    with database.engine.connect() as connection:
        role = connection.execute(text(_ROLE_SQL)).one()
    reasons = [
        reason
        for held, reason in (
            (role.superuser, "is a superuser"),
            (role.bypass_rls, "has BYPASSRLS"),
            (role.owns_tables, "owns the tables"),
        )
        if held
    ]
    if reasons:
        raise ConfigurationError(
            f"the application's database role {' and '.join(reasons)}: row-level security would not keep users "
            "apart. Connect as the application role (DATABASE_URL or DATABASE_SECRET_ARN)."
        )


def get_database(
    settings: Settings, url: str | None = None, *, fenced: bool = False, prepare: bool | None = None
) -> Database:
    """The process-wide Database for these settings (reused across warm Lambda invocations), once its role
    is known to be held by row-level security (`check_application_role`). `url` and `fenced`: one database
    cell's (worldmm.cells), behind its proxy unless `prepare`."""
    url = url or resolve_database_url(settings)
    key = f"fenced {url}" if fenced else url
    if key not in _databases:
        database = Database(
            url,
            pool_size=settings.database_pool_size,
            max_overflow=settings.database_max_overflow,
            prepare=(not settings.database_proxy_host) if prepare is None else prepare,
            fenced=fenced,
        )
        check_application_role(database)
        _databases[key] = database
    return _databases[key]


def close_all_connections() -> None:
    """Close every pooled connection of this process and forget its engines: the next unit of work connects
    afresh (a SnapStart snapshot must hold no connection, and a restored copy must not reuse one)."""
    for database in _databases.values():
        database.engine.dispose()
    _databases.clear()
    _engine_for.cache_clear()
