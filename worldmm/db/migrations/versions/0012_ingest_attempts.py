"""Each window counts its ingest attempts (`ingest_attempts`): a window that keeps failing or timing out stops
being re-run (each run is paid model work) after INGEST_MAX_ATTEMPTS claims; a forced retrigger starts it over.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "worldmm_segments", sa.Column("ingest_attempts", sa.Integer(), nullable=False, server_default="0")
    )


def downgrade() -> None:
    op.drop_column("worldmm_segments", "ingest_attempts")
