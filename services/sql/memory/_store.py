"""The SQL service's answer memory: answers it gave, feedback on them, and confirmed
question→SQL pairs, per tenant in Postgres under row-level security.

The service is stateless; this store is where an answer waits for its feedback and where
confirmed pairs live. It has its own pool on ``DATABASE_URL`` (the service's own
database, not a target warehouse), migrated as the owner and queried as
``tandem_sql_memory_app``, which cannot bypass the tenant policies of migration 0001.
Every transaction sets ``tandem.tenant_id`` first; reads skip rows older than the
retention, and writes purge the tenant's expired rows.

Inside a tenant, rows say whom they belong to (migration 0002): the answers a principal
was given, the pairs it taught, the feedback it gave (``services.common.current_principal``;
None, a service key, is the tenant's full view). The store reads the request's principal
itself, as it sets the tenant: no caller can forget to pass it.
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import grpc
import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.types.json import Jsonb

from services.common import (
    Database,
    FailedPrecondition,
    InvalidArgument,
    TenantStore,
    current_principal,
    decode_page_token,
    encode_page_token,
    load_migrations,
    role_conninfo,
)
from services.sql.memory._record import Params, RecordQueue, parameters, record
from tandem.v1 import embedding_service_pb2 as epb
from tandem.v1 import embedding_service_pb2_grpc as epb_grpc

APP_ROLE = "tandem_sql_memory_app"
Vector = npt.NDArray[np.float32]


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity (pgvector's ``1 - (a <=> b)``); 0 for a zero vector."""
    norm = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    return float(np.dot(a, b)) / norm if norm else 0.0


class PairSource(enum.Enum):
    """Values match ``tandem.v1.ConfirmedPairSource``."""

    TAUGHT = 1
    HELPFUL = 2
    CORRECTED = 3


class Rating(enum.Enum):
    """Values match ``tandem.v1.FeedbackRating``."""

    HELPFUL = 1
    WRONG = 2


@dataclass(frozen=True)
class ConfirmedPair:
    """A stored pair; ``intent`` is the intent's protobuf JSON when there was one."""

    pair_id: str
    database: str
    question: str
    sql: str
    source: PairSource
    create_time: datetime
    intent: dict[str, Any] | None = None
    use_count: int = 0
    # The principal that taught it (directly or by feedback); None: a service key.
    taught_by: str | None = None


@dataclass(frozen=True)
class NearPair:
    """A candidate for reuse and its cosine similarity to the asked question."""

    pair: ConfirmedPair
    similarity: float


# Pairs one survey reads: enough to screen them all in process for a typical tenant, few
# enough that a big memory costs one bounded query (beyond it, every question embeds).
SURVEY_LIMIT = 200


@dataclass(frozen=True)
class Survey:
    """The tenant's live pairs on one database, read before any embedding: ``same``
    holds those with the asked template; ``complete`` is False when there were more than
    the survey reads."""

    pairs: tuple[ConfirmedPair, ...]
    same: tuple[ConfirmedPair, ...]
    complete: bool


@dataclass(frozen=True)
class RecordedAnswer:
    """An answer the service gave, as feedback needs it."""

    answer_id: str
    database: str
    question: str
    sql: str
    intent: dict[str, Any] | None


def app_conninfo(owner_conninfo: str, app_url: str | None = None) -> str:
    """Where the memory's queries connect (see ``role_conninfo``)."""
    return role_conninfo(owner_conninfo, APP_ROLE, app_url)


def migrations() -> list[Any]:
    return load_migrations("sql_memory", "services.sql.memory.migrations")


def parse_uuid(value: str, field: str) -> str:
    """A canonical UUID string, or INVALID_ARGUMENT naming ``field``."""
    if not value.strip():
        raise InvalidArgument.field(field, "required")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidArgument.field(field, "must be a UUID") from None


_PAIR_COLUMNS = (
    "pair_id, database, question, sql, source, create_time, intent, use_count, taught_by"
)
# Index of the first column a query selects after _PAIR_COLUMNS.
_AFTER_PAIR = 9


def _viewer() -> str | None:
    """The principal the current request is for (None: a service key's full view)."""
    principal = current_principal.get()
    return None if principal is None else principal.id


# The pairs a principal's requests may read, list and reuse: those it taught and those a
# service key taught for everyone (``%(p)s`` the viewer; NULL, a service key, reads all).
# Another principal's pair is theirs (SYSTEM.md: taught pairs belong to principals): an
# answer adapted from it would tell the asker that someone asked and confirmed it.
_LISTABLE = "(%(p)s::text IS NULL OR taught_by IS NULL OR taught_by = %(p)s)"


def _pair(row: Sequence[Any]) -> ConfirmedPair:
    return ConfirmedPair(
        pair_id=str(row[0]),
        database=row[1],
        question=row[2],
        sql=row[3],
        source=PairSource(row[4]),
        create_time=row[5],
        intent=row[6],
        use_count=row[7],
        taught_by=row[8],
    )


# Entries of the no-pairs memory at most (tenants x databases seen lately).
_EMPTY_MAX = 4096


class MemoryStore(TenantStore):
    """Every statement the memory sends to Postgres, each in a tenant-scoped transaction."""

    name = "the answer memory"

    def __init__(
        self,
        database: Database,
        *,
        retention_days: int,
        answer_retention_days: int,
        empty_ttl_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(database, migrations())
        self._retention = f"{retention_days} days"
        self._answer_retention = f"{answer_retention_days} days"
        # (tenant, database) pairs seen without any pair, until when: most tenants teach
        # nothing on most databases, and every question would otherwise ask Postgres so
        # (a transaction of four statements per question, a tenth of the SQL service's
        # CPU). A pair taught here clears its entry at once; one taught through another
        # replica is seen within ``empty_ttl_s`` (0: always ask).
        self._empty_ttl_s = empty_ttl_s
        self._clock = clock
        self._empty: dict[tuple[str, str], float] = {}
        # Answers recorded together while a record is being written: one commit for all.
        self._records = RecordQueue(self._write_records)

    async def close(self) -> None:
        await self._records.drained()  # the answers given are recorded before the pool goes
        await super().close()

    async def record_answer(
        self,
        tenant_id: str,
        *,
        database: str,
        question: str,
        sql: str,
        intent: dict[str, Any] | None,
        used_pair: str | None = None,
    ) -> str:
        """Store an answer; ``used_pair`` (the confirmed pair it reused) counts one more
        use in the same transaction."""
        answer_id = str(uuid.uuid4())
        # Every answer pays for this write: one statement alone, instead of BEGIN, the
        # tenant, the INSERT (and the UPDATE) and COMMIT pipelined; sent on the libpq
        # connection (``_record``), not through a cursor, in one commit with the records
        # of the answers that finished meanwhile.
        params = parameters(
            tenant_id, answer_id=answer_id, database=database, question=question, sql=sql,
            intent=intent, principal_id=_viewer(), used_pair=used_pair,
        )  # fmt: skip
        await self._records.record(params)
        return answer_id

    async def _write_records(self, batch: Sequence[Params]) -> None:
        """A batch of answers' records in one transaction (``RecordQueue``)."""
        async with self._unavailable(), self._db.autocommit() as conn:
            await record(conn, *batch)

    async def answer(self, tenant_id: str, answer_id: str) -> RecordedAnswer | None:
        """The answer, when the current principal was the one given it (a service key:
        any of the tenant's); None otherwise, as for a missing one."""
        async with self._tx(tenant_id) as conn:
            cur = await conn.execute(
                "SELECT answer_id, database, question, sql, intent FROM sql_answers "
                "WHERE tenant_id = %(t)s AND answer_id = %(a)s "
                "AND create_time > now() - %(r)s::interval "
                "AND (%(p)s::text IS NULL OR principal_id = %(p)s)",
                {"t": tenant_id, "a": answer_id, "r": self._answer_retention, "p": _viewer()},
            )
            row = await cur.fetchone()
        if row is None:
            return None
        return RecordedAnswer(str(row[0]), row[1], row[2], row[3], row[4])

    async def save_pair(
        self,
        tenant_id: str,
        *,
        database: str,
        question: str,
        template: str,
        sql: str,
        source: PairSource,
        embedding: Vector,
        model_name: str,
        intent: dict[str, Any] | None = None,
    ) -> ConfirmedPair:
        """Store a pair taught by the current principal; the same question on the same
        database replaces the older one its teacher (that principal, or a service key)
        taught. Each teacher's pair is their own: a principal teaching a question someone
        else taught stores theirs beside it, exactly as a fresh question, so nobody learns
        from teaching that anyone else asked it."""
        taught_by = _viewer()
        self._empty.pop((tenant_id, database), None)
        async with self._tx(tenant_id) as conn:
            await self._purge(conn, tenant_id)
            cur = await conn.execute(
                "INSERT INTO sql_confirmed_pairs (tenant_id, pair_id, database, question, "
                "template, sql, intent, source, model_name, embedding, taught_by) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (tenant_id, database, question, taught_by) DO UPDATE SET "
                "sql = EXCLUDED.sql, template = EXCLUDED.template, intent = EXCLUDED.intent, "
                "source = EXCLUDED.source, model_name = EXCLUDED.model_name, "
                "embedding = EXCLUDED.embedding, use_count = 0, create_time = now() "
                f"RETURNING {_PAIR_COLUMNS}",
                (tenant_id, str(uuid.uuid4()), database, question, template, sql,
                 Jsonb(intent) if intent else None, source.value, model_name, embedding,
                 taught_by),
            )  # fmt: skip
            row = await cur.fetchone()
        assert row is not None  # an insert or its teacher's own row updated
        return _pair(row)

    async def _purge(self, conn: psycopg.AsyncConnection[Any], tenant_id: str) -> None:
        """The tenant's rows past retention go on every write: no sweeper process needed."""
        await conn.execute(
            "DELETE FROM sql_confirmed_pairs WHERE tenant_id = %s "
            "AND create_time <= now() - %s::interval",
            (tenant_id, self._retention),
        )
        await conn.execute(
            "DELETE FROM sql_answers WHERE tenant_id = %s AND create_time <= now() - %s::interval",
            (tenant_id, self._answer_retention),
        )

    async def record_feedback(
        self,
        tenant_id: str,
        *,
        answer_id: str,
        rating: Rating,
        corrected_sql: str,
        note: str,
        pair_id: str | None,
    ) -> str:
        feedback_id = str(uuid.uuid4())
        async with self._tx(tenant_id) as conn:
            await conn.execute(
                "INSERT INTO sql_feedback (tenant_id, feedback_id, answer_id, rating, "
                "corrected_sql, note, pair_id, given_by) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (tenant_id, feedback_id, answer_id, rating.value, corrected_sql, note, pair_id,
                 _viewer()),
            )  # fmt: skip
        return feedback_id

    async def nearest(
        self,
        tenant_id: str,
        database: str,
        embedding: Vector,
        *,
        model_name: str,
        limit: int,
        min_similarity: float,
    ) -> list[NearPair]:
        """The tenant's pairs on ``database`` the current principal may reuse
        (``_LISTABLE``) closest to ``embedding`` (same model only), most similar first,
        at least ``min_similarity``."""
        async with self._tx(tenant_id) as conn:
            cur = await conn.execute(
                f"SELECT {_PAIR_COLUMNS}, 1 - (embedding <=> %(v)s) AS similarity "
                "FROM sql_confirmed_pairs WHERE tenant_id = %(t)s AND database = %(d)s "
                "AND model_name = %(m)s AND create_time > now() - %(r)s::interval "
                f"AND {_LISTABLE} "
                "ORDER BY embedding <=> %(v)s LIMIT %(k)s",
                {"v": embedding, "t": tenant_id, "d": database, "m": model_name,
                 "r": self._retention, "k": limit, "p": _viewer()},
            )  # fmt: skip
            rows = await cur.fetchall()
        return [
            NearPair(_pair(row), float(row[_AFTER_PAIR]))
            for row in rows
            if float(row[_AFTER_PAIR]) >= min_similarity
        ]

    async def vectors(
        self, tenant_id: str, pair_ids: Sequence[str]
    ) -> dict[str, tuple[str, Vector]]:
        """The model name and stored vector of each of ``pair_ids`` that exists."""
        async with self._tx(tenant_id) as conn:
            cur = await conn.execute(
                "SELECT pair_id, model_name, embedding::real[] FROM sql_confirmed_pairs "
                "WHERE tenant_id = %s AND pair_id = ANY(%s::uuid[])",
                (tenant_id, list(pair_ids)),
            )
            rows = await cur.fetchall()
        return {str(row[0]): (row[1], np.asarray(row[2], dtype=np.float32)) for row in rows}

    def known_empty(self, tenant_id: str, database: str) -> bool:
        """Whether the tenant was seen without pairs on ``database`` within the last
        ``empty_ttl_s`` (``survey`` would answer none without asking): the caller skips
        reading the question for a lookup that cannot find anything."""
        return self._empty.get((tenant_id, database), 0.0) > self._clock()

    async def survey(
        self, tenant_id: str, database: str, template: str, *, limit: int = SURVEY_LIMIT
    ) -> Survey:
        """The tenant's live pairs on ``database`` the current principal may reuse
        (``_LISTABLE``; those whose template equals ``template`` first, its own before a
        service key's: a value swap of a confirmed question needs no embedding), at most
        ``limit``. A tenant seen without pairs on ``database`` within the last
        ``empty_ttl_s`` is not asked again: only a tenant with none at all, not one whose
        pairs are all other principals' (the next asker may be one of them)."""
        key = (tenant_id, database)
        now = self._clock()
        if self._empty.get(key, 0.0) > now:
            return Survey((), (), complete=True)
        async with self._tx(tenant_id) as conn:
            # The listable pairs sort first: the limit counts only them, and a row that is
            # not listable is read only to tell "no pairs here" from "none of yours".
            cur = await conn.execute(
                f"SELECT {_PAIR_COLUMNS}, template = %(q)s, {_LISTABLE} "
                "FROM sql_confirmed_pairs WHERE tenant_id = %(t)s AND database = %(d)s "
                "AND create_time > now() - %(r)s::interval "
                f"ORDER BY {_LISTABLE} DESC, template = %(q)s DESC, "
                "taught_by IS NOT DISTINCT FROM %(p)s::text DESC, create_time DESC "
                "LIMIT %(k)s",
                {"q": template, "t": tenant_id, "d": database, "r": self._retention,
                 "k": limit + 1, "p": _viewer()},
            )  # fmt: skip
            rows = await cur.fetchall()
        listable = [row for row in rows if row[_AFTER_PAIR + 1]]
        pairs = tuple(_pair(row) for row in listable[:limit])
        same = tuple(p for p, row in zip(pairs, listable, strict=False) if row[_AFTER_PAIR])
        if not rows and self._empty_ttl_s > 0:
            if len(self._empty) >= _EMPTY_MAX:
                self._empty.clear()
            self._empty[key] = now + self._empty_ttl_s
        return Survey(pairs, same, complete=len(listable) <= limit)

    async def list_pairs(
        self, tenant_id: str, *, database: str, page_size: int, page_token: str
    ) -> tuple[list[ConfirmedPair], str]:
        """The tenant's pairs, newest first; a principal lists those it taught and those
        a service key taught (another person's questions are not its to read)."""
        after = _decode_token(page_token) if page_token else None
        query = (
            f"SELECT {_PAIR_COLUMNS} FROM sql_confirmed_pairs WHERE tenant_id = %(t)s "
            "AND create_time > now() - %(r)s::interval "
            "AND (%(d)s = '' OR database = %(d)s) "
            f"AND {_LISTABLE} "
        )
        params: dict[str, Any] = {"t": tenant_id, "r": self._retention, "d": database,
                                  "k": page_size + 1, "p": _viewer()}  # fmt: skip
        if after is not None:
            query += "AND (create_time, pair_id) < (%(at)s, %(ap)s) "
            params.update(at=after[0], ap=after[1])
        query += "ORDER BY create_time DESC, pair_id DESC LIMIT %(k)s"
        async with self._tx(tenant_id) as conn:
            cur = await conn.execute(query, params)
            rows = await cur.fetchall()
        viewer = _viewer()
        pairs = [_own_uses(_pair(row), viewer) for row in rows[:page_size]]
        token = ""
        if len(rows) > page_size and pairs:
            token = _encode_token(pairs[-1].create_time, pairs[-1].pair_id)
        return pairs, token

    async def delete_pair(self, tenant_id: str, pair_id: str) -> bool:
        """Delete a pair: a service key any, a principal only one it taught (False, as
        for a missing one, for another principal's). A pair a service key taught is
        listed to every principal but is not theirs to delete: FAILED_PRECONDITION."""
        viewer = _viewer()
        async with self._tx(tenant_id) as conn:
            cur = await conn.execute(
                "WITH deleted AS (DELETE FROM sql_confirmed_pairs WHERE tenant_id = %(t)s "
                "AND pair_id = %(i)s AND (%(p)s::text IS NULL OR taught_by = %(p)s) "
                "RETURNING 1) "
                "SELECT EXISTS (SELECT 1 FROM deleted), EXISTS (SELECT 1 FROM "
                "sql_confirmed_pairs WHERE tenant_id = %(t)s AND pair_id = %(i)s "
                "AND taught_by IS NULL)",
                {"t": tenant_id, "i": pair_id, "p": viewer},
            )
            row = await cur.fetchone()
        assert row is not None
        if not row[0] and row[1] and viewer is not None:
            raise FailedPrecondition(
                "this confirmed pair was taught with a service key; only a service key can "
                "delete it",
                reason="CONFIRMED_PAIR_TAUGHT_BY_ANOTHER",
            )
        return bool(row[0])


def _own_uses(pair: ConfirmedPair, viewer: str | None) -> ConfirmedPair:
    """``pair`` as ``viewer`` lists it: a pair a service key taught is reused by every
    principal, so its count of uses would tell one principal that others asked; it lists
    as unused to a principal (its own pairs count only its own and service keys' uses)."""
    if viewer is None or pair.taught_by == viewer:
        return pair
    return replace(pair, use_count=0)


def _encode_token(create_time: datetime, pair_id: str) -> str:
    return encode_page_token(create_time.isoformat(), pair_id)


def _decode_token(token: str) -> tuple[datetime, str]:
    def parse(parts: list[str]) -> tuple[datetime, str]:
        when, pair_id = parts
        return datetime.fromisoformat(when), str(uuid.UUID(pair_id))

    return decode_page_token(token, parse)


# --- the question embedder ----------------------------------------------------------------


class EmbeddingUnavailable(Exception):
    """The embedding service could not embed the question now (no text in the message)."""


class QuestionEmbedder(Protocol):
    """Embeds a question template; raises :class:`EmbeddingUnavailable` when it cannot."""

    async def embed(self, text: str) -> tuple[Vector, str]:
        """The vector and the model that made it."""
        ...


# Texts per Embed call for phrases: within the embedding service's batch cap.
_PHRASE_BATCH = 64


class GrpcQuestionEmbedder:
    """Questions through ``tandem.v1.EmbeddingService`` as queries (its cache serves
    repeats without model work)."""

    def __init__(self, channel: grpc.aio.Channel, *, timeout_s: float = 2.0) -> None:
        self._stub = epb_grpc.EmbeddingServiceStub(channel)
        self._timeout_s = timeout_s

    async def embed(self, text: str) -> tuple[Vector, str]:
        try:
            reply = await self._stub.Embed(
                epb.EmbedRequest(texts=[text], input_type=epb.INPUT_TYPE_QUERY),
                timeout=self._timeout_s,
            )
        except grpc.aio.AioRpcError as exc:
            raise EmbeddingUnavailable(exc.code().name) from None
        if len(reply.embeddings) != 1:
            raise EmbeddingUnavailable("WRONG_VECTOR_COUNT")
        return np.array(reply.embeddings[0].values, dtype=np.float32), reply.model_name

    async def embed_phrases(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Short texts (words, names) as queries, in batches the service takes; one
        row per text (the linker's meanings)."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), _PHRASE_BATCH):
            batch = list(texts[start : start + _PHRASE_BATCH])
            try:
                reply = await self._stub.Embed(
                    epb.EmbedRequest(texts=batch, input_type=epb.INPUT_TYPE_QUERY),
                    timeout=self._timeout_s,
                )
            except grpc.aio.AioRpcError as exc:
                raise EmbeddingUnavailable(exc.code().name) from None
            if len(reply.embeddings) != len(batch):
                raise EmbeddingUnavailable("WRONG_VECTOR_COUNT")
            rows += [list(e.values) for e in reply.embeddings]
        return np.array(rows, dtype=np.float32)
