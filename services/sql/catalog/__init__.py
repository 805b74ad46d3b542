"""The schema catalog and what it knows without being told: tables, columns, types,
keys and comments introspected through the target's read-only role; keys and joins
inferred from names and data where none are declared (``_joins``); the values stored in
text columns and which column holds a word (``_stored``); the standard code system (ISO
3166) a column's values are codes of, and the places they stand for (``_codes``); the
span of integer columns named for a year (``_years``) and the extent of numeric ones
(``_extents``: what unit a number said may be in), both read under one bounded read
of the data (``_bounded``); which tables are copies of
another (``_families``); one load in the order that keeps a wide warehouse cheap
(``_load``), kept current in the background (``_cache``); the tables each question is
linked against (``_narrowing``).
"""

from __future__ import annotations

from services.sql.catalog._cache import CatalogCache
from services.sql.catalog._candidates import is_number, type_family
from services.sql.catalog._catalog import (
    ACCESS_KEY,
    SAMPLE_VALUES,
    TEXT_TYPES,
    Catalog,
    ColumnInfo,
    ForeignKeyInfo,
    RenderedCatalog,
    TableInfo,
    excluded,
    fingerprint,
    introspect,
    read_values,
    render,
)
from services.sql.catalog._codes import CodeSystem, code_system, place_names
from services.sql.catalog._families import (
    Family,
    describe_families,
    families_of,
    unqualified_names,
)
from services.sql.catalog._inference import infer_joins
from services.sql.catalog._joins import (
    COUNTS_WITHHELD,
    Edge,
    JoinGraph,
    describe,
    resolve_joins,
    without_counts,
)
from services.sql.catalog._load import load_catalog
from services.sql.catalog._narrowing import CatalogIndex, Narrowed, index_of
from services.sql.catalog._rows import ROW_COUNT_CAP
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
    "ACCESS_KEY",
    "COUNTS_WITHHELD",
    "ROW_COUNT_CAP",
    "SAMPLE_VALUES",
    "TEXT_TYPES",
    "Catalog",
    "CatalogCache",
    "CatalogIndex",
    "CodeSystem",
    "ColumnInfo",
    "Comparison",
    "Edge",
    "Family",
    "ForeignKeyInfo",
    "JoinGraph",
    "Narrowed",
    "RenderedCatalog",
    "StoredValues",
    "TableInfo",
    "code_system",
    "compared_columns",
    "comparisons",
    "describe",
    "describe_families",
    "excluded",
    "families_of",
    "fingerprint",
    "index_of",
    "infer_joins",
    "introspect",
    "is_number",
    "load_catalog",
    "place_names",
    "read_values",
    "render",
    "resolve_joins",
    "stored_in",
    "stored_spelling",
    "table_for",
    "type_family",
    "unqualified_names",
    "without_counts",
]
