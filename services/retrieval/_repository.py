"""Everything the retrieval service says to Postgres, in one place.

Every transaction starts with ``set_config('tandem.tenant_id', …, true)``, which the
row-level-security policies of migration 0002 read, and the reader's settings
(``tandem.principal``, ``tandem.groups``, ``tandem.full_view``: the request's principal,
see ``_acl.reader_settings``), which the document-ACL policies of migration 0009 read.
Connection failures leave as ``Unavailable`` with reason DATABASE_UNAVAILABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from services.common import (
    Database,
    FailedPrecondition,
    Migration,
    ReadRouting,
    TenantStore,
    Unavailable,
    load_migrations,
    read_conninfo,
    retrying_read,
    role_conninfo,
)
from services.retrieval._acl import reader_settings
from services.retrieval._chunking import Chunk
from services.retrieval._types import (
    ContentType,
    DocumentAcl,
    Hit,
    JsonObject,
    RedactionKind,
    SearchMode,
    StoredChunk,
    StoredDocument,
)

_T = TypeVar("_T")
_HNSW_INDEX = "retrieval_chunks_embedding_hnsw"
_INDEX_LOCK_KEY = 0x7A4D_0005
_CHUNK_NAMESPACE = uuid.UUID("6f1d3c52-2b0e-4f57-9a43-5d0e6c1b8a21")


# The login role queries run as (created by migration 0002): it owns nothing and cannot
# bypass row-level security, so a query that forgets its tenant filter still sees only
# the tenant set for its transaction.
APP_ROLE = "tandem_retrieval_app"


def migrations() -> list[Migration]:
    """The retrieval component's schema migrations."""
    return load_migrations("retrieval", "services.retrieval.migrations")


def app_conninfo(owner_conninfo: str, app_url: str | None = None) -> str:
    """Where queries connect (see ``role_conninfo``)."""
    return role_conninfo(owner_conninfo, APP_ROLE, app_url)


def app_read_conninfo(read_url: str, app_url: str | None = None) -> str:
    """Where reads on a standby connect (see ``read_conninfo``): the same role."""
    return read_conninfo(read_url, APP_ROLE, app_url)


@dataclass(frozen=True)
class StoredVersion:
    """What idempotency compares: the stored fingerprint and model of one document."""

    fingerprint: str
    model_name: str
    content_sha256: str
    chunk_count: int


@dataclass(frozen=True)
class NewDocument:
    """A prepared document ready to be written with its chunks."""

    document_id: str
    title: str
    uri: str
    category: str
    metadata: JsonObject
    content_type: ContentType
    content_sha256: str
    fingerprint: str
    char_count: int
    redactions: Mapping[RedactionKind, int]
    chunks: Sequence[Chunk]
    # None: the whole tenant may read it.
    acl: DocumentAcl | None = None
    # ISO 639-1 code of the language it is written in; "" when not told.
    language: str = ""


@dataclass(frozen=True)
class SearchPlan:
    """One search, fully resolved: every default applied, every limit checked."""

    tenant_id: str
    mode: SearchMode
    query: str
    vector: npt.NDArray[np.float32] | None
    model_name: str
    categories: tuple[str, ...]
    document_ids: tuple[str, ...]
    metadata: JsonObject | None
    depth: int
    limit: int
    ef_search: int
    rrf_k: int
    dense_weight: float
    sparse_weight: float
    # Share of the query's known words a full-text hit must hold (search_plan: hybrid only).
    sparse_coverage: float = 0.0
    # Most chunks the full-text side reads and ranks (see _QUERY_TERMS); 0 = unbounded.
    sparse_candidates: int = 1000
    # Okapi BM25 term-frequency saturation and length normalisation.
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_k3: float = 5.0
    # The fusion guard on the full-text side (see _FUSED).
    sparse_min_share: float = 0.5
    sparse_top_gap: float = 1.3
    sparse_top_boost: float = 2.0


@dataclass(frozen=True)
class SearchRows:
    """Hits in fused order, and another model found among the tenant's vectors, if any."""

    hits: list[Hit]
    other_model: str | None


def chunk_id_for(tenant_id: str, document_id: str, fingerprint: str, ordinal: int) -> uuid.UUID:
    """Deterministic, opaque chunk ids: the same content always gets the same ids."""
    return uuid.uuid5(
        _CHUNK_NAMESPACE, f"{tenant_id}\x1f{document_id}\x1f{fingerprint}\x1f{ordinal}"
    )


_DOCUMENT_COLUMNS = sql.SQL(
    "document_id, title, uri, category, metadata, content_type, content_sha256, chunk_count, "
    "char_count, model_name, redactions, create_time, update_time, acl_principals, acl_groups, "
    "language"
)

# Who reads (migration 0009): set with the tenant at the start of every transaction.
_READER = (
    "set_config('tandem.principal', %s, true), "
    "set_config('tandem.groups', %s::text[]::text, true), "
    "set_config('tandem.full_view', %s, true)"
)
_SET_READER = "SELECT " + _READER


def _acl_columns(acl: DocumentAcl | None) -> tuple[list[str] | None, list[str] | None]:
    """The stored form: NULL in both columns is the whole tenant."""
    if acl is None:
        return None, None
    return list(acl.principals), list(acl.groups)


def _document(row: Sequence[Any]) -> StoredDocument:
    return StoredDocument(
        document_id=row[0],
        title=row[1],
        uri=row[2],
        category=row[3],
        metadata=row[4],
        content_type=ContentType(row[5]),
        content_sha256=row[6],
        chunk_count=row[7],
        char_count=row[8],
        model_name=row[9],
        redactions={RedactionKind[k]: int(v) for k, v in (row[10] or {}).items()},
        create_time=row[11],
        update_time=row[12],
        acl=None if row[13] is None else DocumentAcl(tuple(row[13]), tuple(row[14] or ())),
        language=row[15],
    )


class RetrievalRepository(TenantStore):
    """Documents and chunks of every tenant; each call is scoped to one tenant.

    The pool is opened (and migrated) by ``prepare_store``, which also builds the vector
    index; the repository only runs statements on it.

    Reads that tolerate bounded staleness — Search, its EXPLAIN, GetDocument and
    ListDocuments: idempotent, read-only, and each write of the tenant is marked so that
    the tenant's next read sees it — take the pool ``reads`` chooses (a standby when one
    is configured and fresh). Everything a write decides on (``tenant_exists``,
    ``stored_versions``) and the writes themselves stay on the primary."""

    name = "the retrieval database"

    def __init__(self, database: Database, reads: ReadRouting | None = None) -> None:
        super().__init__(database, migrations())
        self.reads = reads or ReadRouting(database)

    @asynccontextmanager
    async def _write(self, tenant_id: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A write's transaction; once committed, its tenant is marked written so that
        its next read waits for no standby that has not replayed it."""
        async with self._transaction(tenant_id) as conn:
            yield conn
        await self.reads.mark_written(tenant_id)

    async def _routed(
        self,
        tenant_id: str,
        body: Callable[[psycopg.AsyncConnection[Any]], Awaitable[_T]],
        *,
        reader: bool = True,
        pipelined: bool = True,
    ) -> _T:
        """``body`` in a read transaction on the pool ``reads`` picks (``reader``: with
        the reader statement of ``_tx``; Search sets the reader in its own statement). The
        read is idempotent: a standby that fails it is replaced by the primary, and on
        the primary a connection that broke under it (a failover) is retried once on a
        fresh one (``retrying_read``).

        Pipelined, ``body`` returns its cursor unread and the caller fetches after the
        commit, so the whole read stays one round trip (a fetch inside the pipeline
        would wait for the database before the COMMIT is even sent)."""

        async def attempt(database: Database) -> _T:
            async with self._tx_on(tenant_id, database, reader=reader, pipelined=pipelined) as conn:
                return await body(conn)

        with self.reads.reading(tenant_id) as database:
            if database is not self._db:
                try:
                    return await attempt(database)
                except Unavailable:
                    pass
            return await retrying_read(lambda: attempt(self._db))

    @asynccontextmanager
    async def _tx_on(
        self, tenant_id: str, database: Database, *, reader: bool, pipelined: bool
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        async with super()._tx(tenant_id, database=database, pipelined=pipelined) as conn:
            if reader:
                await conn.execute(_SET_READER, reader_settings())
            yield conn

    @asynccontextmanager
    async def _tx(
        self, tenant_id: str, *, pipelined: bool = True, database: Database | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """The tenant's transaction with the reader set too: one more statement in the
        same pipeline (no round trip of its own)."""
        async with super()._tx(tenant_id, pipelined=pipelined, database=database) as conn:
            await conn.execute(_SET_READER, reader_settings())
            yield conn

    def _transaction(
        self, tenant_id: str
    ) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        # Not pipelined: writes branch on what an upsert returned and read rowcounts.
        return self._tx(tenant_id, pipelined=False)

    async def tenant_exists(self, tenant_id: str) -> bool:
        async def run(conn: psycopg.AsyncConnection[Any]) -> bool:
            cur = await conn.execute("SELECT 1 FROM tenants WHERE tenant_id = %s", (tenant_id,))
            return await cur.fetchone() is not None

        return await self._read(tenant_id, run, pipelined=False)

    async def stored_versions(
        self, tenant_id: str, document_ids: Sequence[str]
    ) -> dict[str, StoredVersion]:
        if not document_ids:
            return {}

        async def run(conn: psycopg.AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(
                "SELECT document_id, fingerprint, model_name, content_sha256, chunk_count "
                "FROM retrieval_documents WHERE tenant_id = %s AND document_id = ANY(%s)",
                (tenant_id, list(document_ids)),
            )
            return await cur.fetchall()

        rows = await self._read(tenant_id, run, pipelined=False)
        return {r[0]: StoredVersion(r[1], r[2], r[3], r[4]) for r in rows}

    async def write_document(
        self,
        tenant_id: str,
        document: NewDocument,
        model_name: str,
        vectors: npt.NDArray[np.float32],
    ) -> bool:
        """Upsert the document and replace its chunks in one transaction; True if replaced."""
        acl = _acl_columns(document.acl)
        # A document id held by a document this reader cannot read fails the upsert
        # (row-level security refuses to update a row its USING hides: 42501, not an
        # overwrite), as does an ACL that leaves the reader out (WITH CHECK).
        async with self._write(tenant_id) as conn:
            cur = await conn.execute(
                """
                INSERT INTO retrieval_documents (
                    tenant_id, document_id, title, uri, category, metadata, content_type,
                    content_sha256, fingerprint, model_name, chunk_count, char_count, redactions,
                    acl_principals, acl_groups, language
                ) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                ON CONFLICT (tenant_id, document_id) DO UPDATE SET
                    title = EXCLUDED.title, uri = EXCLUDED.uri, category = EXCLUDED.category,
                    metadata = EXCLUDED.metadata, content_type = EXCLUDED.content_type,
                    content_sha256 = EXCLUDED.content_sha256,
                    fingerprint = EXCLUDED.fingerprint, model_name = EXCLUDED.model_name,
                    chunk_count = EXCLUDED.chunk_count, char_count = EXCLUDED.char_count,
                    redactions = EXCLUDED.redactions, update_time = now(),
                    acl_principals = EXCLUDED.acl_principals, acl_groups = EXCLUDED.acl_groups,
                    language = EXCLUDED.language
                RETURNING (xmax <> 0) AS replaced
                """,
                (
                    tenant_id,
                    document.document_id,
                    document.title,
                    document.uri,
                    document.category,
                    Jsonb(document.metadata),
                    int(document.content_type),
                    document.content_sha256,
                    document.fingerprint,
                    model_name,
                    len(document.chunks),
                    document.char_count,
                    Jsonb({k.name: v for k, v in document.redactions.items()}),
                    *acl,
                    document.language,
                ),
            )
            row = await cur.fetchone()
            replaced = bool(row[0]) if row else False
            if replaced:
                await conn.execute(
                    "DELETE FROM retrieval_chunks WHERE tenant_id = %s AND document_id = %s",
                    (tenant_id, document.document_id),
                )
            # Row by row in one pipelined batch: COPY FROM is refused on tables under
            # row-level security.
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO retrieval_chunks (chunk_id, tenant_id, document_id, ordinal, "
                    "category, title, section, body, model_name, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (
                            chunk_id_for(
                                tenant_id, document.document_id, document.fingerprint, chunk.ordinal
                            ),
                            tenant_id,
                            document.document_id,
                            chunk.ordinal,
                            document.category,
                            document.title,
                            chunk.section,
                            chunk.text,
                            model_name,
                            vector,
                        )
                        for chunk, vector in zip(document.chunks, vectors, strict=True)
                    ],
                )
        return replaced

    async def delete_document(self, tenant_id: str, document_id: str) -> tuple[bool, int]:
        """Delete a document and its chunks; returns (existed, chunks deleted)."""
        async with self._write(tenant_id) as conn:
            cur = await conn.execute(
                "DELETE FROM retrieval_chunks WHERE tenant_id = %s AND document_id = %s",
                (tenant_id, document_id),
            )
            chunks = cur.rowcount
            cur = await conn.execute(
                "DELETE FROM retrieval_documents WHERE tenant_id = %s AND document_id = %s",
                (tenant_id, document_id),
            )
            return cur.rowcount > 0, max(chunks, 0)

    async def update_acl(
        self, tenant_id: str, document_id: str, acl: DocumentAcl | None
    ) -> int | None:
        """Set a document's ACL: one row, whatever its size (its chunks follow it through
        the forbidden set of migration 0009), nothing re-embedded; the chunks it covers,
        or None when the reader cannot see the document (missing and forbidden alike).
        The next transaction sees the new rights."""
        principals, groups = _acl_columns(acl)
        async with self._tx(tenant_id) as conn:
            cur = await conn.execute(
                "UPDATE retrieval_documents SET acl_principals = %s, acl_groups = %s "
                "WHERE tenant_id = %s AND document_id = %s RETURNING chunk_count",
                (principals, groups, tenant_id, document_id),
            )
            row = await cur.fetchone()
        if row is not None:
            await self.reads.mark_written(tenant_id)
        return None if row is None else int(row[0])

    async def get_document(
        self, tenant_id: str, document_id: str, *, include_chunks: bool
    ) -> tuple[StoredDocument, list[StoredChunk]] | None:
        async def body(
            conn: psycopg.AsyncConnection[Any],
        ) -> tuple[StoredDocument, list[StoredChunk]] | None:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT {} FROM retrieval_documents WHERE tenant_id = %s AND document_id = %s"
                ).format(_DOCUMENT_COLUMNS),
                (tenant_id, document_id),
            )
            row = await cur.fetchone()
            if row is None:
                return None
            chunks: list[StoredChunk] = []
            if include_chunks:
                cur = await conn.execute(
                    "SELECT chunk_id, ordinal, section, body FROM retrieval_chunks "
                    "WHERE tenant_id = %s AND document_id = %s ORDER BY ordinal",
                    (tenant_id, document_id),
                )
                chunks = [
                    StoredChunk(str(r[0]), document_id, r[1], r[2], r[3])
                    for r in await cur.fetchall()
                ]
            return _document(row), chunks

        return await self._routed(tenant_id, body, pipelined=False)

    async def list_documents(
        self,
        tenant_id: str,
        *,
        categories: Sequence[str],
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[StoredDocument]:
        """Newest update first, starting after the ``(update_time, document_id)`` cursor."""
        conditions = [sql.SQL("tenant_id = %(tenant)s")]
        params: dict[str, Any] = {"tenant": tenant_id, "limit": limit}
        if categories:
            conditions.append(sql.SQL("category = ANY(%(categories)s)"))
            params["categories"] = list(categories)
        if after is not None:
            conditions.append(sql.SQL("(update_time, document_id) < (%(time)s, %(id)s)"))
            params["time"], params["id"] = after
        query = sql.SQL(
            "SELECT {} FROM retrieval_documents WHERE {} "
            "ORDER BY update_time DESC, document_id DESC LIMIT %(limit)s"
        ).format(_DOCUMENT_COLUMNS, sql.SQL(" AND ").join(conditions))

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[StoredDocument]:
            cur = await conn.execute(query, params)
            return [_document(r) for r in await cur.fetchall()]

        return await self._routed(tenant_id, body, pipelined=False)

    async def search(self, plan: SearchPlan) -> SearchRows:
        """Run one search in one statement, in one round trip: the tenant transaction is
        pipelined, so its start, the settings, the statement and the commit leave
        together, and the rows are read after it."""
        query, params = _search_statement(plan)

        async def body(conn: psycopg.AsyncConnection[Any]) -> psycopg.AsyncCursor[Any]:
            await conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                "set_config('plan_cache_mode', 'force_generic_plan', true), " + _READER,
                (str(plan.ef_search), *reader_settings()),
            )
            # Prepared and planned once per connection and statement (tenant, filters and
            # sizes are in its text, see _search_statement): planning this statement cost
            # a third of its backend CPU on the demo corpus (1.5 of 4.6 ms), and a plan
            # made for each search bought nothing, because what varies per search (the
            # words, the vector) is not something a plan here can use — the full-text
            # tiers are computed inside the statement. Hybrid p50 in the retrieval
            # benchmark, planned each time → once: 10K chunks 5.3 → 2.6 ms, 100K 12.6 →
            # 10.6 ms, the same recall and the same hits.
            return await conn.execute(query, params, prepare=True)

        # The tenant's transaction without ``_tx``'s reader statement: the reader goes in
        # the settings statement with the search's own settings.
        cur = await self._routed(plan.tenant_id, body, reader=False)
        rows = await cur.fetchall()
        other = rows[0][0] if rows else None
        hits = [_hit(r) for r in rows if r[1] is not None]
        return SearchRows(hits, other)

    async def explain_search(self, plan: SearchPlan) -> Any:
        """The plan (EXPLAIN, JSON) of ``plan``'s statement, run exactly as ``search``
        runs it (same settings, same reader, same pool choice): benchmarks check the
        indexes stay in use."""
        query, params = _search_statement(plan)

        async def body(conn: psycopg.AsyncConnection[Any]) -> Any:
            await conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'relaxed_order', true), " + _READER,
                (str(plan.ef_search), *reader_settings()),
            )
            cur = await conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) {}").format(query), params)
            row = await cur.fetchone()
            return row[0] if row else None

        return await self._routed(plan.tenant_id, body, reader=False)

    async def ensure_vector_index(self, *, enabled: bool, m: int, ef_construction: int) -> str:
        """Bring the HNSW index in line with the settings: "created", "rebuilt", "dropped"
        or "unchanged". Serialised across replicas by an advisory lock."""
        wanted = {"m": str(m), "ef_construction": str(ef_construction)}
        name = sql.Identifier(_HNSW_INDEX)
        async with self._unavailable(), self._db.owner_connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INDEX_LOCK_KEY,))
            cur = await conn.execute(
                "SELECT c.reloptions FROM pg_class c WHERE c.oid = to_regclass(%s)",
                (_HNSW_INDEX,),
            )
            row = await cur.fetchone()
            if not enabled:
                if row is None:
                    return "unchanged"
                await conn.execute(sql.SQL("DROP INDEX {}").format(name))
                return "dropped"
            current = dict(o.split("=", 1) for o in (row[0] or [])) if row else {}
            if row is not None and all(current.get(k) == v for k, v in wanted.items()):
                return "unchanged"
            await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(name))
            await conn.execute(
                sql.SQL(
                    "CREATE INDEX {} ON retrieval_chunks USING hnsw "
                    "(embedding_half halfvec_cosine_ops) "
                    "WITH (m = {}, ef_construction = {})"
                ).format(name, sql.Literal(m), sql.Literal(ef_construction))
            )
        return "created" if row is None else "rebuilt"


def _hit(row: Sequence[Any]) -> Hit:
    return Hit(
        chunk_id=str(row[1]),
        document_id=row[2],
        ordinal=row[3],
        section=row[4],
        text=row[5],
        title=row[6],
        uri=row[7],
        category=row[8],
        metadata=row[9] or {},
        score=float(row[10]),
        fused_score=float(row[11] or 0.0),
        dense_rank=int(row[12] or 0),
        sparse_rank=int(row[13] or 0),
        dense_score=float(row[14] or 0.0),
        sparse_score=float(row[15] or 0.0),
    )


# Okapi BM25 over the full-text vectors, with per-tenant statistics kept exact by the
# triggers of migrations 0004 and 0006:
#   score(c) = sum over query words t in c of
#              qw(t) * idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(c) / avglen))
#   idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))   (never negative)
# where a query word is a lexeme of ``to_tsvector('english', query)`` (the parser the
# chunks' vectors use, stop words dropped), df its chunk count in ``retrieval_terms``, tf
# the number of positions it holds in the chunk's vector, len(c) the chunk's positions in
# all (``retrieval_tsvector_length``, stored as ``tsv_length``) and N and avglen the
# tenant's chunk count and mean length (``retrieval_corpus_stats``). A word occurring q
# times in the query is weighted q * (k3 + 1) / (q + k3) (Robertson's query-frequency
# saturation; k3 = 0: once).
# ``mass`` below is that weight times the IDF: a chunk holding the word once at average
# length scores exactly its mass, so the sum of the masses is the query's BM25 weight.
#
# Bounded cost. Scoring is O(candidates read), and a common word matches most of a
# tenant (every chunk in the 100K benchmark). So at most ``candidates`` chunks are read
# and scored, in two groups:
# 1. chunks holding every query word that occurs in the tenant (one AND tsquery, answered
#    from the GIN posting lists: only matching rows are read);
# 2. chunks holding one of the query's rarest words: words are taken rarest first while
#    their chunk counts sum to at most ``candidates`` (the rarest one always), which are
#    the words with the largest IDF and so the largest share of any chunk's score.
# When every word's chunks fit in the budget, this reads every match and the ranking is
# exact BM25; beyond it, a chunk is missed only if it holds none of the rarer words and
# not all of the words. ``candidates = 0`` lifts the budget. With a coverage floor
# (``required`` of the ``present`` words), a chunk must hold one of the
# ``present - required + 1`` rarest words (pigeonhole), so only those are probed.
_QUERY_TERMS = sql.SQL(
    r"""query_words AS (
    SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS occurrences
    FROM unnest(to_tsvector('english'::regconfig, %(text)s)) AS u
), corpus AS (
    SELECT s.chunks::float8 AS n, greatest(s.tokens, 1)::float8 / s.chunks AS avglen
    FROM retrieval_corpus_stats s
    WHERE s.tenant_id = {tenant}
), weighted AS (
    -- every query word, those the tenant has never seen (df 0) included: they are part
    -- of what the query asks, and the fusion guard weighs how much of it full text sees
    SELECT w.lexeme, f.chunks AS df,
           w.occurrences * (%(k3)s + 1) / (w.occurrences + %(k3)s)
             * ln(1 + (k.n - coalesce(f.chunks, 0) + 0.5) / (coalesce(f.chunks, 0) + 0.5))
             AS mass
    FROM query_words w
    CROSS JOIN corpus k
    LEFT JOIN retrieval_terms f ON f.tenant_id = {tenant} AND f.lexeme = w.lexeme
), terms AS (
    SELECT w.lexeme, w.mass,
           '''' || replace(replace(w.lexeme, '\', '\\'), '''', '''''') || '''' AS quoted,
           row_number() OVER (ORDER BY w.df, w.lexeme) AS rarity,
           sum(w.df) OVER (ORDER BY w.df, w.lexeme) AS cumulative,
           count(*) OVER () AS present
    FROM weighted w
    WHERE w.df IS NOT NULL
), query_terms AS (
    SELECT string_agg(t.quoted, ' & ')::tsquery AS all_words,
           array_agg(t.lexeme) AS lexemes,
           string_agg(t.quoted, ' | ') FILTER (
               WHERE t.rarity <= t.present - r.required + 1
                 AND (t.rarity = 1 OR {candidates} = 0 OR t.cumulative <= {candidates})
           )::tsquery AS probe,
           min(r.required) AS required,
           count(*) AS known_words,
           sum(t.mass) AS known_mass,
           (SELECT sum(w.mass) FROM weighted w) AS query_mass,
           -- the same with each unseen word weighing at most what the rarest known word
           -- does ("what do call notes *say* about security reviews")
           (SELECT sum(CASE WHEN w.df IS NULL
                            THEN least(w.mass, coalesce((SELECT max(x.mass) FROM weighted x
                                                          WHERE x.df IS NOT NULL), w.mass))
                            ELSE w.mass END)
            FROM weighted w) AS capped_mass,
           (SELECT count(*) FROM weighted w WHERE w.df IS NULL) AS unseen_words
    FROM terms t
    CROSS JOIN LATERAL (
        SELECT greatest(1, ceil(t.present * %(coverage)s))::int AS required
    ) AS r
), tier0 AS MATERIALIZED (
    -- through the full-text index, as the tables' owner (migration 0008): the index is
    -- out of the service role's reach under row-level security
    SELECT m.chunk_id, m.tsv, m.tsv_length
    FROM query_terms q
    CROSS JOIN LATERAL retrieval_text_candidates(
        q.all_words, NULL, nullif({candidates}, 0), {filters}) AS m
), rest AS MATERIALIZED (
    SELECT m.chunk_id, m.tsv, m.tsv_length
    FROM query_terms q
    CROSS JOIN LATERAL retrieval_text_candidates(
        q.probe, q.all_words, (nullif({candidates}, 0) - (SELECT count(*) FROM tier0))::int,
        {filters}) AS m
), candidates AS (
    SELECT * FROM tier0 UNION ALL SELECT * FROM rest
)"""
)

# Distances are computed in half precision over the stored, inline ``embedding_half``
# column (migration 0003), which the HNSW index also covers: no detoasting, no cast.
_DENSE = sql.SQL(
    """dense AS (
    SELECT c.chunk_id,
           c.embedding_half <=> %(vector)s::halfvec(384) AS distance
    FROM retrieval_chunks c
    WHERE {where} AND c.model_name = %(model)s
    ORDER BY c.embedding_half <=> %(vector)s::halfvec(384)
    LIMIT {depth}
), dense_ranked AS (
    -- equal distances share a rank (as equal scores below): nothing orders them by the
    -- chunks' ids, a hash that changes whenever a document is chunked again
    SELECT chunk_id, 1 - distance AS score,
           rank() OVER (ORDER BY distance) AS rank
    FROM dense
)"""
)

_SPARSE = sql.SQL(
    """sparse_words AS (
    -- Only the query's words are unnested: each candidate's vector is cut to them in C
    -- (mark them weight A, keep A), and len(c) is stored (migration 0007).
    SELECT c.chunk_id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf,
           c.tsv_length::float8 AS len
    FROM candidates c
    CROSS JOIN query_terms q
    CROSS JOIN LATERAL unnest(
        ts_filter(setweight(setweight(c.tsv, 'D'), 'A', q.lexemes), '{{a}}')
    ) AS u
), sparse AS (
    -- one aggregation over every candidate's words (not one sub-plan per candidate),
    -- each chunk's words summed rarest first as before, so its score is bit-identical
    SELECT x.chunk_id,
           sum(
               t.mass * x.tf * (%(k1)s + 1)
               / (x.tf + %(k1)s * (1 - %(b)s + %(b)s * x.len / k.avglen))
               ORDER BY t.rarity
           ) AS score,
           count(*) AS matched
    FROM sparse_words x
    JOIN terms t ON t.lexeme = x.lexeme
    CROSS JOIN corpus k
    GROUP BY x.chunk_id
    HAVING count(*) >= (SELECT q.required FROM query_terms q)
    ORDER BY score DESC, x.chunk_id
    LIMIT {depth}
), sparse_ranked AS (
    -- equal scores (chunks of one table that match on the header they all repeat)
    -- share a rank, so they fuse alike; ``position`` orders them for the guard alone
    SELECT chunk_id, score, matched,
           rank() OVER (ORDER BY score DESC) AS rank,
           row_number() OVER (ORDER BY score DESC, chunk_id) AS position
    FROM sparse
)"""
)

# Fusion is weighted reciprocal rank fusion, sum of weight / (k + rank) over the two
# lists, with a guard on the full-text side, per query:
# - its weight is 0 when the words the tenant holds carry less than ``min_share`` of the
#   query's BM25 weight (IDF of all its words, words never seen at df 0): full text then
#   ranks chunks by incidental words of a query phrased unlike the documents, a
#   near-random list that would drag the dense side down (the golden set's paraphrases:
#   hybrid 0.63 nDCG@10 unguarded, dense alone 0.89) — unless a single word is unseen
#   and the known words carry that share once it weighs no more than the rarest known
#   one: one stray word ("what do call notes *say* about security reviews") does not
#   silence the words the tenant knows;
# - its first hit counts ``top_boost`` times when it is conclusive: it scores at least
#   ``top_gap`` times the runner-up, or it holds every query word the tenant knows and
#   the runner-up does not. That is a lexical match (an identifier, a rare name) which a
#   dense list ranking some other chunk first, that chunk also in the full-text list on a
#   common word such as "INC", would otherwise outvote. The development collections'
#   long natural queries are rarely conclusive (8 of 158), so they are nearly unaffected.
# Score-normalised fusion (convex combinations of min-max or z-scored scores, or of cosine
# and BM25 over the query's weight) was tried on the development collections and lost to
# RRF on at least one of them; see docs/search.md "Ranking".
_FUSED = {
    SearchMode.HYBRID: sql.SQL(
        """sparse_guard AS (
    -- The full-text side's weight and its first hit's multiplier (see _FUSED).
    SELECT %(sparse_weight)s * CASE
               WHEN coalesce(q.known_mass, 0) >= %(min_share)s * q.query_mass THEN 1.0
               -- one stray unseen word weighs no more than the rarest known word
               WHEN coalesce(q.known_mass, 0) >= %(min_share)s * q.capped_mass
                    AND q.unseen_words = 1 THEN 1.0
               ELSE 0.0
           END AS weight,
           CASE
               WHEN first.score >= %(top_gap)s * coalesce(second.score, 0)
                 OR (first.matched = q.known_words
                     AND coalesce(second.matched, 0) < q.known_words)
               THEN %(top_boost)s
               ELSE 1.0
           END AS top
    FROM query_terms q
    LEFT JOIN sparse_ranked first ON first.position = 1
    LEFT JOIN sparse_ranked second ON second.position = 2
), fused AS (
    SELECT coalesce(d.chunk_id, s.chunk_id) AS chunk_id,
           d.rank AS dense_rank, s.rank AS sparse_rank,
           d.score AS dense_score, s.score AS sparse_score,
           coalesce(%(dense_weight)s / (%(k)s + d.rank), 0)
             + coalesce(
                 g.weight * CASE WHEN s.rank = 1 THEN g.top ELSE 1.0 END / (%(k)s + s.rank), 0
               ) AS fused
    FROM dense_ranked d FULL OUTER JOIN sparse_ranked s ON s.chunk_id = d.chunk_id
    CROSS JOIN sparse_guard g
), best AS (
    SELECT *, fused AS score FROM fused ORDER BY fused DESC, chunk_id LIMIT {limit}
)"""
    ),
    SearchMode.DENSE: sql.SQL(
        """best AS (
    SELECT chunk_id, rank AS dense_rank, NULL::bigint AS sparse_rank, score AS dense_score,
           NULL::float8 AS sparse_score, 0::float8 AS fused, score
    FROM dense_ranked ORDER BY rank LIMIT {limit}
)"""
    ),
    SearchMode.SPARSE: sql.SQL(
        """best AS (
    SELECT chunk_id, NULL::bigint AS dense_rank, rank AS sparse_rank,
           NULL::float8 AS dense_score, score AS sparse_score, 0::float8 AS fused, score
    FROM sparse_ranked ORDER BY rank LIMIT {limit}
)"""
    ),
}

_GUARD_DENSE = sql.SQL(
    """guard AS (
    SELECT (SELECT m.model_name FROM retrieval_documents m
            WHERE m.tenant_id = {tenant} AND m.model_name <> %(model)s LIMIT 1) AS other_model
)"""
)
_GUARD_NONE = sql.SQL("guard AS (SELECT NULL::text AS other_model)")

_SELECT = sql.SQL(
    """SELECT g.other_model, b.chunk_id, c.document_id, c.ordinal, c.section, c.body,
       c.title, d.uri, c.category, d.metadata, b.score, b.fused,
       b.dense_rank, b.sparse_rank, b.dense_score, b.sparse_score
FROM guard g
LEFT JOIN (
    best b
    JOIN retrieval_chunks c ON c.chunk_id = b.chunk_id
    JOIN retrieval_documents d ON d.tenant_id = c.tenant_id AND d.document_id = c.document_id
) ON true
ORDER BY b.score DESC, c.document_id, c.ordinal"""
)


# retrieval_text_candidates' filter arguments (migration 0008), in its order.
_TEXT_FILTERS = (("categories", "text[]"), ("document_ids", "text[]"), ("metadata", "jsonb"))


def _search_statement(plan: SearchPlan) -> tuple[sql.Composed, dict[str, Any]]:
    # The tenant and the sizes are part of the text, so the plan made once per
    # connection and statement (see ``search``) is made for them: how many chunks the
    # tenant holds and how many are wanted is what chooses between the vector index and
    # an exact scan, and a plan for an average tenant would choose wrongly for a large or
    # a small one. The prepared statements stay bounded (psycopg keeps the most recent).
    literals = {
        "tenant": sql.Literal(plan.tenant_id),
        "depth": sql.Literal(plan.depth),
        "limit": sql.Literal(plan.limit),
        "candidates": sql.Literal(plan.sparse_candidates),
    }
    conditions: list[sql.Composable] = [sql.SQL("c.tenant_id = {tenant}").format(**literals)]
    params: dict[str, Any] = {}
    if plan.categories:
        conditions.append(sql.SQL("c.category = ANY(%(categories)s)"))
        params["categories"] = list(plan.categories)
    if plan.document_ids:
        conditions.append(sql.SQL("c.document_id = ANY(%(document_ids)s)"))
        params["document_ids"] = list(plan.document_ids)
    if plan.metadata is not None:
        conditions.append(
            sql.SQL(
                "c.document_id IN (SELECT f.document_id FROM retrieval_documents f "
                "WHERE f.tenant_id = {tenant} AND f.metadata @> %(metadata)s)"
            ).format(**literals)
        )
        params["metadata"] = Jsonb(plan.metadata)
    where = sql.SQL(" AND ").join(conditions)
    # The full-text candidates' filters, as arguments of retrieval_text_candidates.
    filters = sql.SQL(", ").join(
        sql.SQL(f"%({name})s::{kind}" if name in params else f"NULL::{kind}")
        for name, kind in _TEXT_FILTERS
    )
    dense = plan.mode in (SearchMode.HYBRID, SearchMode.DENSE)
    sparse = plan.mode in (SearchMode.HYBRID, SearchMode.SPARSE)
    ctes: list[sql.Composable] = []
    if dense:
        ctes.append(_DENSE.format(where=where, **literals))
        params["vector"] = plan.vector
        params["model"] = plan.model_name
    if sparse:
        ctes.append(_QUERY_TERMS.format(filters=filters, **literals))
        ctes.append(_SPARSE.format(**literals))
        params["text"] = plan.query
        params["coverage"] = plan.sparse_coverage
        # floats, so that Postgres never divides integers
        params["k1"] = float(plan.bm25_k1)
        params["b"] = float(plan.bm25_b)
        params["k3"] = float(plan.bm25_k3)
    if plan.mode is SearchMode.HYBRID:
        params.update(
            k=plan.rrf_k,
            dense_weight=float(plan.dense_weight),
            sparse_weight=float(plan.sparse_weight),
            min_share=float(plan.sparse_min_share),
            top_gap=float(plan.sparse_top_gap),
            top_boost=float(plan.sparse_top_boost),
        )
    ctes.append(_FUSED[plan.mode].format(**literals))
    ctes.append(_GUARD_DENSE.format(**literals) if dense else _GUARD_NONE)
    statement = sql.SQL("WITH {ctes}\n{select}").format(
        ctes=sql.SQL(",\n").join(ctes), select=_SELECT
    )
    return statement, params


def model_mismatch(stored: str, serving: str) -> FailedPrecondition:
    """The error Search returns when a tenant's vectors come from another model."""
    return FailedPrecondition(
        "stored vectors were made by a different embedding model than the one serving "
        "queries; re-ingest the documents",
        reason="MODEL_MISMATCH",
        metadata={"stored_model": stored, "serving_model": serving},
    )
