"""Several graders on one queue: each claim gets its own token (submissions.claim), so that a
grader whose lease ran out cannot record a result over the claim that replaced it, even one of
its own slot; and every recorded result is written to `gradings`, one row per result, so that
"graded exactly once" can be read back from the database.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("claim", sa.String(32)))
    op.create_table(
        "gradings",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.String(64), nullable=False),
        sa.Column("claim", sa.String(32), nullable=False),
        sa.Column("worker", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("finished", sa.Float, nullable=False),
        sa.UniqueConstraint("claim", name="uq_gradings_claim"),
    )
    op.create_index("ix_gradings_submission_id", "gradings", ["submission_id"])


def downgrade() -> None:
    op.drop_index("ix_gradings_submission_id", "gradings")
    op.drop_table("gradings")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("claim")
