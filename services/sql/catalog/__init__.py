"""The schema catalog and what it knows without being told: tables, columns, types,
keys and comments introspected through the target's read-only role; keys and joins
inferred from names and data where none are declared (``_joins``); the values stored in
text columns and which column holds a word (``_stored``).
"""

from __future__ import annotations

from services.sql.catalog._cache import CatalogCache
from services.sql.catalog._catalog import (
    TEXT_TYPES,
    Catalog,
    ColumnInfo,
    ForeignKeyInfo,
    RenderedCatalog,
    TableInfo,
    fingerprint,
    introspect,
    render,
)
from services.sql.catalog._joins import Edge, JoinGraph, describe, infer_joins, resolve_joins
from services.sql.catalog._stored import (
    Comparison,
    StoredValues,
    compared_columns,
    comparisons,
    stored_in,
    stored_spelling,
    table_for,
)

__all__ = [
    "TEXT_TYPES",
    "Catalog",
    "CatalogCache",
    "ColumnInfo",
    "Comparison",
    "Edge",
    "ForeignKeyInfo",
    "JoinGraph",
    "RenderedCatalog",
    "StoredValues",
    "TableInfo",
    "compared_columns",
    "comparisons",
    "describe",
    "fingerprint",
    "infer_joins",
    "introspect",
    "render",
    "resolve_joins",
    "stored_in",
    "stored_spelling",
    "table_for",
]
