"""What each view of a database reads: a view runs as its owner and reads its tables
unfiltered, so a view over a filtered or hidden table would hand a principal what the
policy protects. The same holds for a table inheriting from a protected one (its rows are
the parent's rows, read directly past the parent's filter). The policy must then protect
those too (``BoundPolicy`` refuses the catalog otherwise); this reads the dependencies
once per catalog load. Partitions are not in the catalog at all. Which tables have
row-level security is read with them (role mode reads their values as the role)."""

from __future__ import annotations

from typing import Any

import psycopg

# Each view (or materialized view) and the relations its rewrite rule reads directly; each
# inheritance child and its parent.
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
UNION
SELECT cn.nspname, c.relname, pn.nspname, p.relname
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
JOIN pg_catalog.pg_namespace cn ON cn.oid = c.relnamespace
JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace
WHERE NOT c.relispartition
"""
SOURCES_KEY = "access.view_sources"
# Every table whose rows the warehouse's own row-level security selects (role mode: which
# rows of it a principal's role reads is the database's to say, not the login role's).
_ROW_SECURITY = """
SELECT n.nspname, c.relname
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relrowsecurity AND c.relkind IN ('r', 'p')
"""
ROW_SECURITY_KEY = "access.row_security"


async def read_view_sources(conn: psycopg.AsyncConnection[Any]) -> dict[str, frozenset[str]]:
    """Every view's (or inheriting table's) qualified name -> every relation it reads or
    whose rows it holds, through other views and parents too."""
    direct: dict[str, set[str]] = {}
    cursor = await conn.execute(_VIEW_SOURCES)
    for view_schema, view, schema, table in await cursor.fetchall():
        direct.setdefault(f"{view_schema}.{view}", set()).add(f"{schema}.{table}")
    return {view: frozenset(_closure(view, direct)) for view in direct}


async def read_row_security(conn: psycopg.AsyncConnection[Any]) -> frozenset[str]:
    """The qualified names of the tables with row-level security enabled: the login role's
    stored values of them are not a role's (``_values`` reads them again as the role)."""
    cursor = await conn.execute(_ROW_SECURITY)
    return frozenset(f"{schema}.{table}" for schema, table in await cursor.fetchall())


def _closure(view: str, direct: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(direct.get(view, ()))
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(direct.get(name, ()))
    return seen
