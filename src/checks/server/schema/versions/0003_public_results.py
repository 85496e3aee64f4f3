"""The public checks' results of each submission, apart from the hidden ones: the server runs the
assignment's public suite on every upload and shows that result to the student at once, while the
hidden result waits for the due date or the staff's release (issue 32). `public_error` is the
public run's grader failure, shown to staff only.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("public_result", sa.Text))
        batch.add_column(sa.Column("public_error", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("public_error")
        batch.drop_column("public_result")
