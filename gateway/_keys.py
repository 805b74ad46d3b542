"""API keys: 256-bit random secrets, stored only as a peppered HMAC, verified in constant time.

A key reads ``tdm_<key id>_<secret>``: the recognisable prefix lets secret scanners find
leaked keys, the key id is the database lookup, and the secret never touches storage or
logs. A verified key is served from memory for ``cache_ttl_s`` only while the gateway
listens for key changes (``_key_changes``): a revocation, by any path, is announced as its
transaction commits and drops the key there. A revoked key stops within the time this
gateway takes to hear the announcement, milliseconds: Postgres delivers it to the
listener after the commit, and every memory answer first applies the announcements that
have already arrived (``KeyChanges.caught_up``), so a busy event loop adds nothing to that
window. Not listening, or with the memory off, every call reads the database.

One exception keeps callers served through a Postgres failover: when the listener was
lost *and* the database cannot be reached, a key that was in memory at the loss (or read
since) answers for up to ``outage_grace_s`` after the loss. No primary means no revocation
can commit meanwhile; what it risks is a revocation committed in the instant before the
loss whose announcement never arrived, usable for at most that grace. When the listener is
back it starts from an empty memory, as always. ``outage_grace_s=0`` refuses instead.
"""

from __future__ import annotations

import base64
import hmac
import logging
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from services.common import (
    Database,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    ensure_tenant,
)

_log = logging.getLogger("tandem.gateway.keys")

KEY_PREFIX = "tdm_"
_KEY_SHAPE = re.compile(r"^tdm_([a-z2-7]{16})_([A-Za-z0-9_-]{43})$")
TENANT_SHAPE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class Scope(StrEnum):
    """What a key may do; every gateway RPC needs exactly one (``gateway._server``)."""

    ASK = "ask"  # Ask, StreamAsk, Search, the SQL reads, conversations
    INGEST = "ingest"  # IngestDocuments, DeleteDocument
    TEACH = "teach"  # TeachSql, DeleteConfirmedPair, feedback that changes reuse
    ADMIN = "admin"  # operator work through the API
    # Not an operation but the key's kind: it calls for end users and names one
    # (x-tandem-principal headers) on every data call, each seeing only what that
    # principal may. A key without it is a service key: the tenant's full view.
    ACT_AS = "act_as"


# ``all``: every operation. Not ``act_as``: that changes what the key's calls see (each
# must name a principal), so it is granted by name, never swept in with the rest.
ALL_SCOPES: tuple[Scope, ...] = tuple(s for s in Scope if s is not Scope.ACT_AS)
DEFAULT_SCOPES: tuple[Scope, ...] = (Scope.ASK,)
SERVICE_KIND = "service"
ACTS_AS_KIND = "acts as principals"


def key_kind(scopes: Iterable[Scope]) -> str:
    """What ``tandem keys`` calls a key: ``service`` (no ``act_as``: the tenant's full
    view) or ``acts as principals``."""
    return ACTS_AS_KIND if Scope.ACT_AS in set(scopes) else SERVICE_KIND


def parse_scopes(values: Iterable[str]) -> tuple[Scope, ...]:
    """Scopes from names (``all`` for every operation scope, ``act_as`` only by name), in
    their canonical order; an unknown or empty list is INVALID_ARGUMENT naming ``scopes``."""
    names = {v.strip().lower() for value in values for v in value.split(",") if v.strip()}
    if "all" in names:
        names = (names - {"all"}) | {s.value for s in ALL_SCOPES}
    unknown = sorted(names - {s.value for s in Scope})
    if unknown or not names:
        raise InvalidArgument.field(
            "scopes",
            f"unknown scope {', '.join(unknown)}" if unknown else "at least one scope",
            reason="API_KEY_SCOPE_INVALID",
        )
    return tuple(s for s in Scope if s.value in names)


def key_id_of(presented: str | None) -> str | None:
    """The key id a well-formed key names (its ``tdm_<key id>_`` part), None otherwise;
    who it belongs to is only known once the key verified."""
    match = _KEY_SHAPE.match(presented or "")
    return match.group(1) if match else None


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key: ``secret`` is shown once and never stored."""

    key_id: str
    tenant_id: str
    secret: str
    scopes: tuple[Scope, ...] = DEFAULT_SCOPES

    @property
    def kind(self) -> str:
        return key_kind(self.scopes)


@dataclass(frozen=True)
class KeyRecord:
    """What is stored about a key (no secret)."""

    key_id: str
    tenant_id: str
    label: str
    created_at: datetime
    revoked_at: datetime | None
    scopes: tuple[Scope, ...] = DEFAULT_SCOPES

    @property
    def kind(self) -> str:
        return key_kind(self.scopes)


@dataclass(frozen=True)
class Caller:
    """Who a verified key is: its tenant, its id (never the secret) and its scopes."""

    tenant: str
    key_id: str
    scopes: frozenset[Scope]

    @property
    def acts_as(self) -> bool:
        """The key calls for end users: every data call must name one."""
        return Scope.ACT_AS in self.scopes


class ApiKeys:
    """Creates, lists, revokes and verifies keys against the ``api_keys`` table."""

    def __init__(
        self,
        db: Database,
        pepper: bytes,
        *,
        recent_size: int = 10_000,
        cache_ttl_s: float = 0.0,
        outage_grace_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len(pepper) < 16:
            raise ValueError("API key pepper must be at least 16 bytes")
        self._db = db
        self._pepper = pepper
        # key id -> (tenant, HMAC, when it was read, scopes) of keys that verified
        # recently. It grants access only within ``cache_ttl_s`` and while
        # ``listening()`` is True.
        self._recent: OrderedDict[str, tuple[str, bytes, float, frozenset[Scope]]] = OrderedDict()
        self._recent_size = recent_size
        self._cache_ttl_s = cache_ttl_s
        self._outage_grace_s = outage_grace_s
        self._clock = clock
        self._listening: Callable[[], bool] = lambda: False
        # Bumped by every change heard: a read that saw one start is not remembered.
        self.changes = 0
        # When the listener was lost (None while listening, or before it first listened).
        self._deaf_since: float | None = None
        self._outage_said = False

    def listen(self, listening: Callable[[], bool]) -> None:
        """Serve verified keys from memory while ``listening()`` (key changes reach
        :meth:`forget` meanwhile). It is asked before every memory answer, so it may apply
        the changes already received first (``KeyChanges.caught_up`` does)."""
        self._listening = listening

    def forget(self, key_id: str) -> None:
        """A key changed (``""``: any key may have): it is read from the database again."""
        self.changes += 1
        if key_id:
            self._recent.pop(key_id, None)
        else:
            self._recent.clear()
            self._deaf_since = None
            self._outage_said = False

    def lost(self) -> None:
        """The listener lost its connection: announcements may be missed from now on. The
        memory answers no more (``listening()`` is False), except as the outage fallback."""
        self.changes += 1
        if self._deaf_since is None:
            self._deaf_since = self._clock()

    def _outage_answer(self, key_id: str, presented_hmac: bytes, now: float) -> Caller | None:
        """The remembered caller while the database is unreachable, within the grace."""
        deaf = self._deaf_since
        entry = self._recent.get(key_id)
        if deaf is None or entry is None or now - deaf > self._outage_grace_s:
            return None
        if deaf - entry[2] >= self._cache_ttl_s or not hmac.compare_digest(
            presented_hmac, entry[1]
        ):
            return None  # already stale at the loss, or not this key's secret
        if not self._outage_said:
            self._outage_said = True
            _log.warning(
                "the key database is unreachable: keys verified before are answered from "
                "memory for up to the outage grace",
                extra={"fields": {"grace_s": self._outage_grace_s}},
            )
        return Caller(entry[0], key_id, entry[3])

    def _hmac(self, secret: str) -> bytes:
        return hmac.digest(self._pepper, secret.encode(), "sha256")

    async def create(
        self, tenant_id: str, label: str = "", scopes: Iterable[Scope] = DEFAULT_SCOPES
    ) -> IssuedKey:
        if not TENANT_SHAPE.match(tenant_id):
            raise InvalidArgument.field("tenant", "must be 1-63 of [a-z0-9_-], starting alnum")
        granted = parse_scopes(scopes)
        key_id = base64.b32encode(secrets.token_bytes(10)).decode().lower()
        secret = secrets.token_urlsafe(32)  # 256 bits
        async with self._db.connection() as conn, conn.transaction():
            await ensure_tenant(conn, tenant_id)
            await conn.execute(
                "INSERT INTO api_keys (key_id, tenant_id, secret_hmac, label, scopes) "
                "VALUES (%s, %s, %s, %s, %s)",
                (key_id, tenant_id, self._hmac(secret), label, [g.value for g in granted]),
            )
        return IssuedKey(key_id, tenant_id, f"{KEY_PREFIX}{key_id}_{secret}", granted)

    async def set_scopes(self, key_id: str, scopes: Iterable[Scope]) -> tuple[Scope, ...]:
        """Replace a key's scopes. Like a revocation it is a key change: gateways drop the
        key from memory as they hear the update commit (milliseconds), and this one at once."""
        granted = parse_scopes(scopes)
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "UPDATE api_keys SET scopes = %s WHERE key_id = %s",
                ([g.value for g in granted], key_id),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no API key with id {key_id}", reason="API_KEY_NOT_FOUND")
        self._recent.pop(key_id, None)
        return granted

    async def list(self, tenant_id: str | None = None) -> list[KeyRecord]:
        query = "SELECT key_id, tenant_id, label, created_at, revoked_at, scopes FROM api_keys"
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            query += " WHERE tenant_id = %s"
            params = (tenant_id,)
        async with self._db.connection() as conn:
            cur = await conn.execute(query + " ORDER BY created_at", params)
            return [
                KeyRecord(row[0], row[1], row[2], row[3], row[4], parse_scopes(row[5]))
                for row in await cur.fetchall()
            ]

    async def revoke(self, key_id: str) -> None:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE key_id = %s",
                (key_id,),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no API key with id {key_id}", reason="API_KEY_NOT_FOUND")
        self._recent.pop(key_id, None)

    def recent_tenant(self, presented: str | None) -> str | None:
        """The tenant of a key that verified recently, checked against its HMAC in memory.

        Only for refusing an over-quota caller before the database lookup (a flooding
        tenant's rejections must stay cheap); any call that does work still goes through
        ``verify``, so a revoked key is never served.
        """
        match = _KEY_SHAPE.match(presented or "")
        entry = self._recent.get(match.group(1)) if match else None
        if match is None or entry is None:
            return None
        tenant, stored, _, _ = entry
        return tenant if hmac.compare_digest(self._hmac(match.group(2)), stored) else None

    async def verify(self, presented: str | None) -> str:
        """The tenant of a valid, unrevoked key; UNAUTHENTICATED otherwise.

        Unknown, malformed and revoked keys are indistinguishable to the caller.
        """
        return (await self._verified(presented)).tenant

    async def authorize(self, presented: str | None, scope: Scope) -> Caller:
        """The caller of a valid key that holds ``scope``: UNAUTHENTICATED for a bad key,
        PERMISSION_DENIED naming the missing scope for a good key without it."""
        caller = await self._verified(presented)
        if scope not in caller.scopes:
            raise PermissionDenied(
                f"this API key lacks the '{scope.value}' scope "
                f"(`tandem keys scope KEY_ID --set ...` grants it)",
                reason="API_KEY_SCOPE_MISSING",
                metadata={"scope": scope.value},
            )
        return caller

    async def _verified(self, presented: str | None) -> Caller:
        if not presented:
            raise Unauthenticated("missing API key", reason="API_KEY_MISSING")
        match = _KEY_SHAPE.match(presented)
        # Compute the HMAC even for malformed keys so timing says nothing about shape.
        presented_hmac = self._hmac(match.group(2) if match else presented)
        now = self._clock()
        if match and self._cache_ttl_s > 0 and self._listening():
            entry = self._recent.get(match.group(1))
            if (
                entry is not None
                and now - entry[2] < self._cache_ttl_s
                and hmac.compare_digest(presented_hmac, entry[1])
            ):
                self._recent.move_to_end(match.group(1))
                return Caller(entry[0], match.group(1), entry[3])
        changes = self.changes
        row = None
        if match:
            try:
                async with self._db.autocommit() as conn:
                    cur = await conn.execute(
                        "SELECT tenant_id, secret_hmac, scopes FROM api_keys "
                        "WHERE key_id = %s AND revoked_at IS NULL",
                        (match.group(1),),
                        prepare=True,
                    )
                    row = await cur.fetchone()
            except Unavailable:
                remembered = self._outage_answer(match.group(1), presented_hmac, now)
                if remembered is None:
                    raise
                return remembered
        stored = bytes(row[1]) if row else self._hmac(secrets.token_urlsafe(32))
        if not hmac.compare_digest(presented_hmac, stored) or row is None or match is None:
            raise Unauthenticated("invalid API key", reason="API_KEY_INVALID")
        tenant: str = row[0]
        scopes = frozenset(Scope(s) for s in row[2])
        if changes == self.changes:  # else the row may predate a change heard since
            self._recent[match.group(1)] = (tenant, stored, now, scopes)
            self._recent.move_to_end(match.group(1))
            while len(self._recent) > self._recent_size:
                self._recent.popitem(last=False)
        return Caller(tenant, match.group(1), scopes)
