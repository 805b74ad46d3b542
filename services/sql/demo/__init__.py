"""The demo CRM: its deterministic data (``data``) and its warehouse database with the
SELECT-only role the SQL service reads it as.
"""

from __future__ import annotations

from services.sql.demo import data
from services.sql.demo._warehouse import (
    DEFAULT_DATABASE,
    DEFAULT_READER_ROLE,
    Warehouse,
    database_url,
    demo_glossary,
    ensure_reader_role,
    ensure_warehouse,
    grant_read_only,
    reader_url,
)

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_READER_ROLE",
    "Warehouse",
    "data",
    "database_url",
    "demo_glossary",
    "ensure_reader_role",
    "ensure_warehouse",
    "grant_read_only",
    "reader_url",
]
