"""Alembic's scripts for the course server's schema (env.py, versions/); run by server/migrations.py."""
