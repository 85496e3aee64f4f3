"""Each user's session generation: a random value that every signed session cookie of theirs
carries and the server compares, so that signing out (or a new token, a new role) ends every
session of the user on the server's side: a cookie captured before is refused (issue 44).
Rows from before it have none, and their old cookies none that matches: they sign in again.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("session_gen", sa.String(32), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("session_gen")
