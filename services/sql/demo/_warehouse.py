"""The demo CRM warehouse: its own database, a commented schema, seeded rows, and the
SELECT-only role the SQL service executes as.

``ensure_warehouse`` is idempotent and safe to run from several processes at once: an
advisory lock in the maintenance database serialises them, and a version row tells a
later run that the data is already there. The reader role gets CONNECT, USAGE and
SELECT only; TEMPORARY and CREATE are revoked, and EXECUTE is revoked on the functions
that act even inside a READ ONLY transaction (large objects, advisory locks, notify,
set_config, sleeps, backend signalling).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from services.sql.definitions import GlossaryEntry, load_glossary
from services.sql.demo import data as demo_data
from services.sql.demo.data import DemoData

_log = logging.getLogger("tandem.sql.warehouse")

DEFAULT_DATABASE = "tandem_warehouse"
DEFAULT_READER_ROLE = "tandem_reader"
# Bump when the schema or the generator changes: the next start reloads the data.
WAREHOUSE_VERSION = 2
_LOCK_KEY = 0x7A4D_5157
# The demo's business definitions ("open" deals, "win rate"): configuration shipped with
# the demo, in the same file format a user's SQL_GLOSSARIES entry uses.
DEMO_GLOSSARY = Path(__file__).with_name("demo_glossary.json")
_META_SCHEMA = "tandem_internal"


@dataclass(frozen=True)
class Column:
    """One warehouse column: name, SQL type with constraints, comment."""

    name: str
    ddl: str
    comment: str


@dataclass(frozen=True)
class Table:
    """One warehouse table: name, comment, columns, extra constraints."""

    name: str
    comment: str
    columns: tuple[Column, ...]
    constraints: tuple[str, ...] = ()


SCHEMA: tuple[Table, ...] = (
    Table(
        "regions",
        "Sales regions (territories) that companies and sales reps belong to.",
        (
            Column("region_id", "integer PRIMARY KEY", "Region identifier."),
            Column("code", "text NOT NULL UNIQUE", "Short region code: NA, EMEA, APAC, LATAM."),
            Column("name", "text NOT NULL", "Region name, e.g. North America or EMEA."),
        ),
    ),
    Table(
        "owners",
        "Sales representatives (reps, account owners, salespeople) who own accounts and deals.",
        (
            Column("owner_id", "integer PRIMARY KEY", "Sales rep identifier."),
            Column("full_name", "text NOT NULL", "The rep's full name."),
            Column("email", "text NOT NULL UNIQUE", "The rep's work email address."),
            Column("title", "text NOT NULL", "Job title of the rep."),
            Column(
                "region_id",
                "integer NOT NULL REFERENCES regions (region_id)",
                "Region the rep covers.",
            ),
            Column("hired_on", "date NOT NULL", "Date the rep was hired."),
            Column("active", "boolean NOT NULL", "False when the rep has left the company."),
        ),
    ),
    Table(
        "companies",
        "Customer and prospect accounts (accounts, companies, organisations, customers).",
        (
            Column("company_id", "integer PRIMARY KEY", "Company identifier."),
            Column("name", "text NOT NULL UNIQUE", "Company name."),
            Column("industry", "text NOT NULL", "Industry (vertical) the company is in."),
            Column(
                "segment", "text NOT NULL", "Market segment by size: SMB, Mid-Market, Enterprise."
            ),
            Column(
                "region_id",
                "integer NOT NULL REFERENCES regions (region_id)",
                "Region the company is in.",
            ),
            Column("country", "text NOT NULL", "Country of the company's headquarters."),
            Column("employee_count", "integer NOT NULL", "Number of employees (headcount)."),
            Column(
                "annual_revenue",
                "numeric(16, 2) NOT NULL",
                "Company's annual revenue in US dollars.",
            ),
            Column("website", "text NOT NULL", "Company website URL."),
            Column(
                "owner_id",
                "integer NOT NULL REFERENCES owners (owner_id)",
                "Sales rep who owns the account.",
            ),
            Column(
                "created_at", "timestamptz NOT NULL", "When the account was created in the CRM."
            ),
            Column(
                "deleted_at",
                "timestamptz",
                "When the account was archived (churned); NULL for active accounts.",
            ),
        ),
    ),
    Table(
        "contacts",
        "People (contacts) who work at customer and prospect companies.",
        (
            Column("contact_id", "integer PRIMARY KEY", "Contact identifier."),
            Column(
                "company_id",
                "integer NOT NULL REFERENCES companies (company_id)",
                "Company the contact works at.",
            ),
            Column("first_name", "text NOT NULL", "First name."),
            Column("last_name", "text NOT NULL", "Last name (surname)."),
            Column("email", "text NOT NULL", "Email address."),
            Column("title", "text NOT NULL", "Job title, e.g. CTO or VP Sales."),
            Column(
                "primary_contact",
                "boolean NOT NULL",
                "True for the main point of contact at the company.",
            ),
            Column("created_at", "timestamptz NOT NULL", "When the contact was added."),
        ),
    ),
    Table(
        "products",
        "Products (offerings) that are sold, with list prices.",
        (
            Column("product_id", "integer PRIMARY KEY", "Product identifier."),
            Column("name", "text NOT NULL UNIQUE", "Product name."),
            Column("category", "text NOT NULL", "Product category (product line)."),
            Column("list_price", "numeric(12, 2) NOT NULL", "Annual list price in US dollars."),
            Column("launched_on", "date NOT NULL", "Date the product launched."),
            Column("active", "boolean NOT NULL", "False when the product is discontinued."),
        ),
    ),
    Table(
        "opportunities",
        "Sales opportunities (deals) in the pipeline: one row per deal, with its stage, "
        "amount, win-likelihood score and close date.",
        (
            Column("opportunity_id", "integer PRIMARY KEY", "Opportunity (deal) identifier."),
            Column(
                "company_id",
                "integer NOT NULL REFERENCES companies (company_id)",
                "Company the deal is with.",
            ),
            Column(
                "owner_id",
                "integer NOT NULL REFERENCES owners (owner_id)",
                "Sales rep who owns the deal.",
            ),
            Column(
                "product_id",
                "integer NOT NULL REFERENCES products (product_id)",
                "Product being sold.",
            ),
            Column("name", "text NOT NULL", "Deal name."),
            Column(
                "stage",
                "text NOT NULL",
                "Pipeline stage; Closed Won and Closed Lost are closed, the rest are open.",
            ),
            Column(
                "amount",
                "numeric(14, 2) NOT NULL",
                "Deal amount (value, revenue, pipeline) in US dollars.",
            ),
            Column(
                "score",
                "integer NOT NULL CHECK (score BETWEEN 0 AND 100)",
                "Win-likelihood score from 0 to 100; higher is better.",
            ),
            Column("lead_source", "text NOT NULL", "Where the lead came from."),
            Column("created_at", "timestamptz NOT NULL", "When the deal was created (opened)."),
            Column(
                "close_date",
                "date NOT NULL",
                "Date the deal closed, or is expected to close when still open.",
            ),
            Column("closed_at", "timestamptz", "When the deal was closed; NULL while open."),
            Column("lost_reason", "text", "Why a Closed Lost deal was lost; NULL otherwise."),
        ),
    ),
    Table(
        "activities",
        "Logged sales activities: calls, emails, meetings, demos and notes, with "
        "free-text call notes.",
        (
            Column("activity_id", "integer PRIMARY KEY", "Activity identifier."),
            Column(
                "company_id",
                "integer NOT NULL REFERENCES companies (company_id)",
                "Company the activity was with.",
            ),
            Column(
                "opportunity_id",
                "integer REFERENCES opportunities (opportunity_id)",
                "Deal the activity belongs to, if any.",
            ),
            Column(
                "contact_id",
                "integer REFERENCES contacts (contact_id)",
                "Contact the activity was with, if any.",
            ),
            Column(
                "owner_id",
                "integer NOT NULL REFERENCES owners (owner_id)",
                "Sales rep who logged the activity.",
            ),
            Column("kind", "text NOT NULL", "Activity type: Call, Email, Meeting, Demo or Note."),
            Column("subject", "text NOT NULL", "Short subject line."),
            Column("notes", "text NOT NULL", "Free-text notes, e.g. call notes."),
            Column("outcome", "text NOT NULL", "How it went: Positive, Neutral or Negative."),
            Column("duration_minutes", "integer", "Length in minutes (calls, meetings, demos)."),
            Column("occurred_at", "timestamptz NOT NULL", "When the activity happened."),
        ),
    ),
)


@dataclass(frozen=True)
class Warehouse:
    """Where the warehouse lives and how to reach it read-only."""

    database: str
    reader_role: str
    reader_url: str
    loaded: bool


@functools.cache
def demo_glossary() -> tuple[GlossaryEntry, ...]:
    """The demo warehouse's glossary (read once; a malformed file fails loudly)."""
    return load_glossary(DEMO_GLOSSARY)


def reader_url(admin_url: str, database: str, role: str) -> str:
    """The admin connection string with the reader role and the warehouse database.

    Meant for the embedded server (trust authentication on its private socket); other
    servers supply a read-only user's URL through configuration instead. An admin URL
    naming a primary and its standbys (``target_session_attrs=read-write``) gives a reader
    that prefers a standby: the role's sessions are read-only, which ``read-write`` refuses
    on every node, and the warehouse's reads need no primary (infra/compose.ha.yaml, tandem
    run --pg-standby).
    """
    params = conninfo_to_dict(admin_url)
    params.pop("password", None)
    params.update(user=role, dbname=database)
    if params.get("target_session_attrs") not in (None, "any"):
        params["target_session_attrs"] = "prefer-standby"
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def database_url(admin_url: str, database: str) -> str:
    """The admin connection string pointed at another database."""
    params = conninfo_to_dict(admin_url)
    params["dbname"] = database
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


async def ensure_warehouse(
    admin_url: str,
    *,
    database: str = DEFAULT_DATABASE,
    reader_role: str = DEFAULT_READER_ROLE,
    seed: int = demo_data.DEFAULT_SEED,
    anchor: date = demo_data.ANCHOR_DATE,
) -> Warehouse:
    """Create (or find) the demo warehouse and its reader role; returns the reader URL.

    ``admin_url`` must connect as a role that may create databases and roles (the
    embedded server's superuser).
    """
    loaded = False
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
        await admin.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            await ensure_reader_role(admin, reader_role)
            cur = await admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
            if await cur.fetchone() is None:
                await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            warehouse_url = database_url(admin_url, database)
            async with await psycopg.AsyncConnection.connect(
                warehouse_url, autocommit=True
            ) as conn:
                if not await _is_current(conn, seed, anchor):
                    await _load(conn, demo_data.generate(seed, anchor), seed, anchor)
                    loaded = True
                await grant_read_only(conn, database, reader_role, schemas=["public"])
                await _revoke_meta(conn)
        finally:
            await admin.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    if loaded:
        _log.info(
            "demo warehouse loaded",
            extra={"fields": {"database": database, "version": WAREHOUSE_VERSION}},
        )
    return Warehouse(database, reader_role, reader_url(admin_url, database, reader_role), loaded)


READER_TEMP_FILE_LIMIT = "1GB"


async def ensure_reader_role(admin: psycopg.AsyncConnection[Any], role: str) -> None:
    """A LOGIN role with no attributes beyond logging in; read-only by default."""
    cur = await admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
    name = sql.Identifier(role)
    if await cur.fetchone() is None:
        await admin.execute(
            sql.SQL(
                "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                "NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 64"
            ).format(name)
        )
    # Only a default: the role could switch it off itself, which is why every statement
    # also runs in an explicit READ ONLY transaction and the grants hold no write.
    await admin.execute(
        sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(name)
    )
    # Temp files (a sort or hash past work_mem) bounded per session: only a superuser
    # may set it, so the role cannot lift it; past it the statement fails with SQLSTATE
    # 53400, reported as SQL_RESOURCE_LIMIT.
    await admin.execute(
        sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(
            name, sql.Literal(READER_TEMP_FILE_LIMIT)
        )
    )


# Functions that act even inside a READ ONLY transaction, or change settings that other
# defences rely on: EXECUTE on them is revoked from PUBLIC in the target database. The
# loop runs server-side, so no function signature is ever spliced into SQL text here.
_REVOKE_DANGEROUS_FUNCTIONS = """
DO $revoke$
DECLARE f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure
    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname IN ('pg_catalog', 'public')
      AND (p.proname IN ('set_config', 'pg_sleep', 'pg_sleep_for', 'pg_sleep_until',
                         'pg_notify', 'pg_terminate_backend', 'pg_cancel_backend',
                         'lowrite', 'loread', 'pg_logical_emit_message', 'txid_current',
                         'pg_current_xact_id')
           OR p.proname LIKE 'lo\\_%' OR p.proname LIKE 'pg\\_advisory%'
           OR p.proname LIKE 'pg\\_try\\_advisory%' OR p.proname LIKE 'dblink%')
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
END
$revoke$
"""


async def grant_read_only(
    conn: psycopg.AsyncConnection[Any], database: str, role: str, *, schemas: Sequence[str]
) -> None:
    """Give ``role`` exactly CONNECT + USAGE + SELECT on ``schemas`` of this database.

    Run as the database owner (or a superuser) on a connection to that database.
    """
    name = sql.Identifier(role)
    db = sql.Identifier(database)
    statements: list[sql.Composed] = [
        sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db),
        sql.SQL("REVOKE ALL ON DATABASE {} FROM {}").format(db, name),
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, name),
    ]
    for schema in schemas:
        ident = sql.Identifier(schema)
        statements += [
            sql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(ident),
            sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM PUBLIC").format(ident),
            sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM PUBLIC").format(ident),
            sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(ident, name),
            sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(ident, name),
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(ident, name),
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(ident, name),
        ]
    for statement in statements:
        await conn.execute(statement)
    await conn.execute(_REVOKE_DANGEROUS_FUNCTIONS)


async def _is_current(conn: psycopg.AsyncConnection[Any], seed: int, anchor: date) -> bool:
    cur = await conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{_META_SCHEMA}.warehouse_info",)
    )
    row = await cur.fetchone()
    if not row or not row[0]:
        return False
    cur = await conn.execute(
        sql.SQL("SELECT version, seed, anchor FROM {}.warehouse_info").format(
            sql.Identifier(_META_SCHEMA)
        )
    )
    return await cur.fetchone() == (WAREHOUSE_VERSION, seed, anchor)


async def _load(
    conn: psycopg.AsyncConnection[Any], data: DemoData, seed: int, anchor: date
) -> None:
    """Drop and recreate every warehouse table and fill it, in one transaction."""
    meta = sql.Identifier(_META_SCHEMA)
    async with conn.transaction():
        for table in reversed(SCHEMA):
            await conn.execute(
                sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(table.name))
            )
        for table in SCHEMA:
            await conn.execute(_create_statement(table))
            await conn.execute(
                sql.SQL("COMMENT ON TABLE {} IS {}").format(
                    sql.Identifier(table.name), sql.Literal(table.comment)
                )
            )
            for column in table.columns:
                await conn.execute(
                    sql.SQL("COMMENT ON COLUMN {}.{} IS {}").format(
                        sql.Identifier(table.name),
                        sql.Identifier(column.name),
                        sql.Literal(column.comment),
                    )
                )
        rows_by_table: dict[str, Iterable[Any]] = {
            "regions": data.regions,
            "owners": data.owners,
            "companies": data.companies,
            "contacts": data.contacts,
            "products": data.products,
            "opportunities": data.opportunities,
            "activities": data.activities,
        }
        for table in SCHEMA:
            await _copy(conn, table, rows_by_table[table.name])
        for statement in _INDEXES:
            await conn.execute(statement)
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(meta))
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.warehouse_info "
                "(version integer NOT NULL, seed bigint NOT NULL, anchor date NOT NULL, "
                "loaded_at timestamptz NOT NULL DEFAULT now())"
            ).format(meta)
        )
        await conn.execute(sql.SQL("DELETE FROM {}.warehouse_info").format(meta))
        await conn.execute(
            sql.SQL(
                "INSERT INTO {}.warehouse_info (version, seed, anchor) VALUES (%s, %s, %s)"
            ).format(meta),
            (WAREHOUSE_VERSION, seed, anchor),
        )
    # Statistics give the catalog its row estimates and sample values.
    await conn.execute("ANALYZE")


_INDEXES = [
    sql.SQL("CREATE INDEX ON {} ({})").format(sql.Identifier(t), sql.Identifier(c))
    for t, c in (
        ("opportunities", "company_id"),
        ("opportunities", "close_date"),
        ("opportunities", "stage"),
        ("activities", "opportunity_id"),
        ("activities", "company_id"),
        ("activities", "occurred_at"),
        ("contacts", "company_id"),
    )
]


def _create_statement(table: Table) -> sql.Composed:
    parts: list[sql.Composable] = [
        sql.SQL("{} {}").format(sql.Identifier(c.name), sql.SQL(c.ddl)) for c in table.columns
    ]
    parts += [sql.SQL(c) for c in table.constraints]
    return sql.SQL("CREATE TABLE {} ({})").format(
        sql.Identifier(table.name), sql.SQL(", ").join(parts)
    )


async def _copy(conn: psycopg.AsyncConnection[Any], table: Table, rows: Iterable[Any]) -> None:
    columns = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns)
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(table.name), columns)
    order = [c.name for c in table.columns]
    async with conn.cursor() as cur, cur.copy(statement) as copy:
        for row in rows:
            await copy.write_row([getattr(row, name) for name in order])


async def _revoke_meta(conn: psycopg.AsyncConnection[Any]) -> None:
    meta = sql.Identifier(_META_SCHEMA)
    await conn.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(meta))
    await conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM PUBLIC").format(meta))
