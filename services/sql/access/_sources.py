"""What each view of a database reads: a view runs as its owner and reads its tables
unfiltered, so a view over a filtered or hidden table would hand a principal what the
policy protects. The policy must then protect the view too (``BoundPolicy`` refuses the
catalog otherwise); this reads the dependencies once per catalog load."""

from __future__ import annotations

from typing import Any

import psycopg

# Each view (or materialized view) and the relations its rewrite rule reads directly.
_VIEW_SOURCES = """
SELECT DISTINCT vn.nspname, v.relname, tn.nspname, t.relname
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid
JOIN pg_catalog.pg_class v ON v.oid = r.ev_class
JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
JOIN pg_catalog.pg_namespace vn ON vn.oid = v.relnamespace
JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
  AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
  AND v.oid <> t.oid AND v.relkind IN ('v', 'm')
"""
SOURCES_KEY = "access.view_sources"


async def read_view_sources(conn: psycopg.AsyncConnection[Any]) -> dict[str, frozenset[str]]:
    """Every view's qualified name -> every relation it reads, through other views too."""
    direct: dict[str, set[str]] = {}
    cursor = await conn.execute(_VIEW_SOURCES)
    for view_schema, view, schema, table in await cursor.fetchall():
        direct.setdefault(f"{view_schema}.{view}", set()).add(f"{schema}.{table}")
    return {view: frozenset(_closure(view, direct)) for view in direct}


def _closure(view: str, direct: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(direct.get(view, ()))
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(direct.get(name, ()))
    return seen
