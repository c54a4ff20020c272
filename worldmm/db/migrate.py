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


def upgrade(settings: Settings, revision: str = "head", admin_url: str | None = None) -> None:
    """Bring the schema up to `revision`."""
    _run(settings, admin_url, "upgrade", revision)


def downgrade(settings: Settings, revision: str = "base", admin_url: str | None = None) -> None:
    """Take the schema down to `revision`."""
    _run(settings, admin_url, "downgrade", revision)
