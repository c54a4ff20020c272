"""Applies the Alembic migrations; called by `worldmm migrate`, never on import."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

from worldmm.config import Settings
from worldmm.db.engine import resolve_admin_url

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def _alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["embedding_dim"] = settings.embedding_dim
    config.attributes["visual_embedding_dim"] = settings.visual_embedding_dim
    config.attributes["migration_batch_rows"] = settings.migration_batch_rows
    config.attributes["app_role"] = settings.database_app_role
    return config


def _run(settings: Settings, admin_url: str | None, action: str, revision: str) -> None:
    url = admin_url or resolve_admin_url(settings)
    config = _alembic_config(settings)
    engine = create_engine(url)
    try:
        # Alembic commits each revision on its own (env.py: transaction_per_migration), so a revision that
        # works in batches (0017) can commit them, and a killed run resumes from the last revision stamped.
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            getattr(command, action)(config, revision)
    finally:
        engine.dispose()


def _admin_urls(settings: Settings, admin_url: str | None) -> list[str | None]:
    """`admin_url`, else every database cell's owner URL (DATABASE_CELLS), else the one database's."""
    if admin_url or not settings.database_cells:
        return [admin_url]
    from worldmm.errors import ConfigurationError

    missing = [cell.id for cell in settings.database_cells if not cell.database_admin_url]
    if missing:
        raise ConfigurationError(f"cells {', '.join(missing)} have no databaseAdminUrl: migrations run on every cell")
    return [cell.database_admin_url for cell in settings.database_cells]


def head_revision() -> str:
    """The newest revision in the migrations directory: the schema `worldmm migrate` brings a database to."""
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None, "the migrations directory has no revision"
    return head


def upgrade(settings: Settings, revision: str = "head", admin_url: str | None = None) -> None:
    """Bring the schema up to `revision` (on every database cell, one after another)."""
    for url in _admin_urls(settings, admin_url):
        _run(settings, url, "upgrade", revision)


def downgrade(settings: Settings, revision: str = "base", admin_url: str | None = None) -> None:
    """Take the schema down to `revision` (on every database cell)."""
    for url in _admin_urls(settings, admin_url):
        _run(settings, url, "downgrade", revision)
