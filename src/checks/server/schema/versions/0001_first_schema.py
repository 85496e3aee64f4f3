"""The schema `checks serve` first shipped (made then by metadata.create_all, without Alembic):
users, submissions and their queue, login failures, rate-limit buckets, staff releases.

A database made before migrations existed holds exactly these tables: server/migrations.py
stamps it with this revision and upgrades it from here.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("email", sa.Text, nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("token_id", sa.String(64), unique=True, nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
    )
    op.create_table(
        "submissions",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(64), unique=True, nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("assignment", sa.String(200), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("claimed_by", sa.String(100)),
        sa.Column("lease_until", sa.Float),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("started", sa.Float),
        sa.Column("finished", sa.Float),
        sa.Column("result", sa.Text),
        sa.Column("error", sa.Text),
    )
    op.create_index("ix_submissions_user_id", "submissions", ["user_id"])
    op.create_index("ix_submissions_status", "submissions", ["status"])
    op.create_table(
        "login_failures",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("last", sa.Float, nullable=False),
    )
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("tokens", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
    )
    op.create_table(
        "releases",
        sa.Column("assignment", sa.String(200), primary_key=True),
        sa.Column("released_at", sa.Float, nullable=False),
        sa.Column("released_by", sa.String(200), nullable=False),
    )


def downgrade() -> None:
    for table in ("releases", "rate_buckets", "login_failures", "submissions", "users"):
        op.drop_table(table)
