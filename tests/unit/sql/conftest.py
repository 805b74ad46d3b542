"""A catalog shaped like the demo warehouse (no database needed)."""

from __future__ import annotations

import pytest

from services.sql import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.demo import data as demo_data
from services.sql.demo._warehouse import SCHEMA

# Columns whose stored values the catalog would sample (low cardinality).
_SAMPLES = {
    ("activities", "kind"): demo_data.ACTIVITY_KINDS,
    ("activities", "outcome"): demo_data.OUTCOMES,
    ("companies", "industry"): demo_data.INDUSTRIES,
    ("companies", "segment"): demo_data.SEGMENTS,
    ("contacts", "title"): demo_data.CONTACT_TITLES,
    ("opportunities", "stage"): demo_data.STAGES,
    ("opportunities", "lead_source"): demo_data.LEAD_SOURCES,
    ("opportunities", "lost_reason"): demo_data.LOST_REASONS,
    ("owners", "title"): demo_data.OWNER_TITLES,
    ("products", "category"): ("Analytics", "Integration", "Platform", "Security", "Services"),
    ("products", "name"): tuple(p[0] for p in demo_data.PRODUCTS),
    ("regions", "name"): tuple(r[1] for r in demo_data.REGIONS),
}
_ROWS = {
    "regions": 4,
    "owners": 20,
    "companies": 300,
    "contacts": 1000,
    "products": 8,
    "opportunities": 2900,
    "activities": 8600,
}


def _type(ddl: str) -> str:
    base = ddl
    for marker in (" NOT NULL", " PRIMARY KEY", " REFERENCES", " CHECK", " UNIQUE"):
        base = base.split(marker, maxsplit=1)[0]
    base = base.strip()
    return {"timestamptz": "timestamp with time zone"}.get(base, base.replace(", ", ","))


def warehouse_catalog() -> Catalog:
    tables = []
    for table in SCHEMA:
        columns, keys = [], []
        for column in table.columns:
            columns.append(
                ColumnInfo(
                    column.name,
                    _type(column.ddl),
                    nullable="NOT NULL" not in column.ddl and "PRIMARY KEY" not in column.ddl,
                    comment=column.comment,
                    sample_values=tuple(sorted(_SAMPLES.get((table.name, column.name), ()))),
                )
            )
            if "REFERENCES" in column.ddl:
                target = column.ddl.split("REFERENCES ")[1]
                ref_table, ref_column = target.split(" (")
                keys.append(
                    ForeignKeyInfo((column.name,), f"public.{ref_table}", (ref_column[:-1],))
                )
        primary = tuple(c.name for c in table.columns if "PRIMARY KEY" in c.ddl)
        tables.append(
            TableInfo(
                "public",
                table.name,
                table.comment,
                _ROWS[table.name],
                tuple(columns),
                primary,
                tuple(keys),
            )
        )
    return Catalog("warehouse", tuple(sorted(tables, key=lambda t: t.name)))


@pytest.fixture
def catalog() -> Catalog:
    return warehouse_catalog()
