"""Conversations: each tenant's turns in Postgres, under row-level security.

The services stay stateless; a conversation lives here. The gateway reads a
conversation's last turns before an Ask (bounded by turns and characters) and hands them
to the router by value, and stores the turn the router describes after answering. The
store has its own pool, connected as ``tandem_conversation_app`` (migration 0002), which
cannot bypass the tenant policies; every transaction sets ``tandem.tenant_id`` first.
Retention counts from a conversation's last turn: reads skip expired conversations (so
an expired id is NOT_FOUND at once) and writes purge the tenant's expired ones.

A conversation belongs to the principal it was started for (migration 0006): a principal
sees only its own, a service key (no principal) the tenant's whole set. Each statement
filters by it, and a restrictive policy enforces it too, from two transaction settings
(``tandem.principal_view``, ``tandem.principal_id``) set first in every transaction: a
query that forgot the filter still cannot reach another principal's conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg

from services.common import (
    Database,
    InvalidArgument,
    NotFound,
    Principal,
    TenantStore,
    decode_page_token,
    encode_page_token,
    role_conninfo,
)

APP_ROLE = "tandem_conversation_app"
NOT_FOUND_REASON = "CONVERSATION_NOT_FOUND"
TITLE_CHARS = 120
MAX_MEMBERS = 50
# The SQL service's cap on an earlier statement a follow-up builds on.
MAX_SQL_CHARS = 20_000


@dataclass(frozen=True)
class Turn:
    """One stored turn: what a later follow-up may refer to, never the answer text."""

    question: str
    resolved_question: str
    route: int = 0
    follow_up_kind: int = 0
    members: tuple[str, ...] = ()
    sql_fingerprints: tuple[str, ...] = ()
    cited_chunk_ids: tuple[str, ...] = ()
    row_count: int = 0
    create_time: datetime | None = None
    sql: str = ""


@dataclass(frozen=True)
class ConversationSummary:
    """A conversation as a listing shows it."""

    conversation_id: str
    turn_count: int
    title: str
    create_time: datetime
    update_time: datetime
    expire_time: datetime


@dataclass(frozen=True)
class HistoryLimits:
    """How much history a follow-up is resolved against: the last ``turns`` turns, fewer
    when their questions and members pass ``chars`` characters."""

    turns: int = 4
    chars: int = 4000


@dataclass
class ConversationPage:
    """One page of a listing."""

    conversations: list[ConversationSummary] = field(default_factory=list)
    next_page_token: str = ""


def app_conninfo(owner_conninfo: str, app_url: str | None = None) -> str:
    """Where the store's queries connect (see ``role_conninfo``)."""
    return role_conninfo(owner_conninfo, APP_ROLE, app_url)


def parse_id(value: str, field_name: str = "conversation_id") -> str:
    """A canonical UUID string, or INVALID_ARGUMENT naming the field."""
    if not value.strip():
        raise InvalidArgument.field(field_name, "is required")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidArgument.field(field_name, "must be a UUID") from None


def not_found(conversation_id: str) -> NotFound:
    """The one answer for a missing, deleted, expired, other tenant's or other principal's
    conversation: they are indistinguishable on purpose, so an id leaks nothing about
    another tenant or person."""
    return NotFound(
        "conversation not found (deleted, expired, or never created for this tenant)",
        reason=NOT_FOUND_REASON,
        metadata={"conversation_id": conversation_id},
    )


def bounded(turns: Sequence[Turn], limits: HistoryLimits) -> list[Turn]:
    """The newest turns that fit the limits, oldest first; the newest turn is kept even
    alone over the character limit (it is the one a follow-up most likely refers to),
    with its members cut to fit."""
    kept: list[Turn] = []
    used = 0
    for turn in reversed(list(turns)[-limits.turns :] if limits.turns > 0 else []):
        size = len(turn.question) + len(turn.resolved_question) + sum(map(len, turn.members))
        if kept and used + size > limits.chars:
            break
        if not kept and size > limits.chars:
            budget = max(0, limits.chars - len(turn.question) - len(turn.resolved_question))
            members: list[str] = []
            for member in turn.members:
                if budget < len(member):
                    break
                members.append(member)
                budget -= len(member)
            kept.append(replace(turn, members=tuple(members)))
        else:
            kept.append(turn)
        used += size
    kept.reverse()
    return kept


class ConversationStore(TenantStore):
    """Every statement conversations send to Postgres, each in a tenant-scoped transaction.

    Opened without migrations: the gateway's owner pool applied migration 0002 already,
    this pool only connects as the conversation role."""

    name = "the conversation store"

    def __init__(self, database: Database, *, retention_days: int) -> None:
        super().__init__(database)
        self._retention = timedelta(days=retention_days)

    @property
    def retention(self) -> timedelta:
        return self._retention

    @asynccontextmanager
    async def _seen_by(
        self, tenant_id: str, principal: Principal | None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A tenant transaction in which the policies show ``principal``'s conversations
        only (None: all of the tenant's)."""
        async with self._tx(tenant_id) as conn:
            await conn.execute(
                "SELECT set_config('tandem.principal_view', %s, true), "
                "set_config('tandem.principal_id', %s, true)",
                ("all", "") if principal is None else ("own", principal.id),
            )
            yield conn

    async def history(
        self,
        tenant_id: str,
        conversation_id: str,
        limits: HistoryLimits,
        principal: Principal | None = None,
    ) -> list[Turn]:
        """The conversation's last turns within ``limits``, oldest first; NOT_FOUND when it
        does not exist for this tenant and principal, or has expired."""
        async with self._seen_by(tenant_id, principal) as conn:
            cur = await conn.execute(
                "SELECT 1 FROM gateway_conversations WHERE tenant_id = %s "
                "AND conversation_id = %s AND update_time > now() - %s" + _OWNED,
                (tenant_id, conversation_id, self._retention, *_owner(principal)),
            )
            if await cur.fetchone() is None:
                raise not_found(conversation_id)
            cur = await conn.execute(
                "SELECT question, resolved_question, route, follow_up_kind, members, "
                "sql_fingerprints, cited_chunk_ids, row_count, create_time, sql "
                "FROM gateway_conversation_turns WHERE tenant_id = %s AND conversation_id = %s "
                "ORDER BY turn_index DESC LIMIT %s",
                (tenant_id, conversation_id, max(limits.turns, 0)),
            )
            rows = await cur.fetchall()
        turns = [
            Turn(
                question=r[0], resolved_question=r[1], route=r[2], follow_up_kind=r[3],
                members=tuple(r[4]), sql_fingerprints=tuple(r[5]),
                cited_chunk_ids=tuple(r[6]), row_count=r[7], create_time=r[8], sql=r[9],
            )
            for r in reversed(rows)
        ]  # fmt: skip
        return bounded(turns, limits)

    async def append(
        self,
        tenant_id: str,
        conversation_id: str,
        turn: Turn,
        *,
        new: bool,
        principal: Principal | None = None,
    ) -> int:
        """Store ``turn`` as the conversation's next; creates the conversation when ``new``
        (owned by ``principal``; None: a service key's).

        Returns the turn's index (1 for the first), or 0 when an existing conversation was
        deleted or expired while the question was being answered (or is not this
        principal's): it is not resurrected.
        """
        async with self._seen_by(tenant_id, principal) as conn:
            await conn.execute(
                "DELETE FROM gateway_conversations WHERE tenant_id = %s "
                "AND update_time <= now() - %s",
                (tenant_id, self._retention),
            )
            if new:
                cur = await conn.execute(
                    "INSERT INTO gateway_conversations (tenant_id, conversation_id, title, "
                    "turn_count, principal_id) VALUES (%s, %s, %s, 1, %s) RETURNING turn_count",
                    (tenant_id, conversation_id, turn.question[:TITLE_CHARS],
                     None if principal is None else principal.id),
                )  # fmt: skip
            else:
                # The row lock taken here orders concurrent turns of one conversation.
                cur = await conn.execute(
                    "UPDATE gateway_conversations SET turn_count = turn_count + 1, "
                    "update_time = now() WHERE tenant_id = %s AND conversation_id = %s"
                    + _OWNED
                    + " RETURNING turn_count",
                    (tenant_id, conversation_id, *_owner(principal)),
                )
            row = await cur.fetchone()
            if row is None:
                return 0
            index = int(row[0])
            await conn.execute(
                "INSERT INTO gateway_conversation_turns (tenant_id, conversation_id, "
                "turn_index, question, resolved_question, route, follow_up_kind, members, "
                "sql_fingerprints, cited_chunk_ids, row_count, sql) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (tenant_id, conversation_id, index, turn.question, turn.resolved_question,
                 turn.route, turn.follow_up_kind, list(turn.members[:MAX_MEMBERS]),
                 list(turn.sql_fingerprints), list(turn.cited_chunk_ids), turn.row_count,
                 turn.sql[:MAX_SQL_CHARS]),
            )  # fmt: skip
        return index

    async def page(
        self,
        tenant_id: str,
        *,
        page_size: int,
        page_token: str,
        principal: Principal | None = None,
    ) -> ConversationPage:
        """The live conversations ``principal`` may see (None: all of the tenant's), most
        recently active first."""
        after = _decode_token(page_token) if page_token else None
        size = page_size or 50
        async with self._seen_by(tenant_id, principal) as conn:
            query = (
                "SELECT conversation_id, turn_count, title, create_time, update_time "
                "FROM gateway_conversations WHERE tenant_id = %s AND update_time > now() - %s"
                + _OWNED
            )
            params: list[Any] = [tenant_id, self._retention, *_owner(principal)]
            if after is not None:
                query += " AND (update_time, conversation_id) < (%s, %s)"
                params.extend(after)
            query += " ORDER BY update_time DESC, conversation_id DESC LIMIT %s"
            params.append(size + 1)
            cur = await conn.execute(query, params)
            rows = await cur.fetchall()
        page = ConversationPage(
            [
                ConversationSummary(
                    conversation_id=str(r[0]), turn_count=r[1], title=r[2],
                    create_time=r[3], update_time=r[4], expire_time=r[4] + self._retention,
                )
                for r in rows[:size]
            ]
        )  # fmt: skip
        if len(rows) > size:
            last = page.conversations[-1]
            page.next_page_token = _encode_token(last.update_time, last.conversation_id)
        return page

    async def delete(
        self, tenant_id: str, conversation_id: str, principal: Principal | None = None
    ) -> int | None:
        """Delete the conversation and its turns; the number of turns deleted, or None
        when it did not exist for this tenant and principal (or had expired)."""
        async with self._seen_by(tenant_id, principal) as conn:
            cur = await conn.execute(
                "DELETE FROM gateway_conversations WHERE tenant_id = %s "
                "AND conversation_id = %s"
                + _OWNED
                + " RETURNING turn_count, update_time > now() - %s",
                (tenant_id, conversation_id, *_owner(principal), self._retention),
            )
            row = await cur.fetchone()
        if row is None or not row[1]:
            return None
        return int(row[0])


# The owner filter every statement adds: a principal's own conversations, or (a service
# key) every one. The policies enforce the same; the filter lets the index serve it.
_OWNED = " AND (%s OR principal_id = %s)"


def _owner(principal: Principal | None) -> tuple[bool, str | None]:
    return (True, None) if principal is None else (False, principal.id)


def _encode_token(update_time: datetime, conversation_id: str) -> str:
    return encode_page_token(update_time.isoformat(), conversation_id)


def _decode_token(token: str) -> tuple[datetime, str]:
    def parse(parts: list[str]) -> tuple[datetime, str]:
        stamp, conversation_id = parts
        return datetime.fromisoformat(stamp), str(uuid.UUID(conversation_id))

    return decode_page_token(token, parse)
