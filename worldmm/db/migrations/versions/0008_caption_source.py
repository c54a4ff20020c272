"""Where a window's caption came from (`CaptionMode`): `seen` (a model saw the frames), `tidied` (a text
model rewrote what was heard) or `heard` (the transcript itself); NULL for summaries and older rows.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("worldmm_segments", sa.Column("caption_source", sa.String(16), nullable=True))


def downgrade() -> None:
    op.drop_column("worldmm_segments", "caption_source")
