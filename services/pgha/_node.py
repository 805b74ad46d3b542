"""One Postgres node as the failover monitor sees it: a role read over SQL, and the few
SQL actions the monitor takes on it.

Everything goes through ordinary connections (``pg_is_in_recovery()``,
``pg_stat_replication``, ``pg_promote()``, ``ALTER SYSTEM``), so the monitor works the
same between containers as on one machine; nothing here needs the node's files.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol

import psycopg

from services.pgha._conninfo import NodeAddress, node_conninfo

# What the primary requires while a standby is attached: any one standby confirms every
# commit ("*" matches every application_name, so a rebuilt node needs no renaming).
SYNC_ANY = "*"


class Role(enum.Enum):
    PRIMARY = "primary"
    STANDBY = "standby"
    DOWN = "down"


@dataclass(frozen=True)
class NodeState:
    """One observation of a node.

    ``sync_names``: on a primary, the application names of standbys that confirm commits
    now (``sync_state`` sync or quorum); ``streaming``: those streaming at all.
    ``receiving``: on a standby, whether its WAL receiver is streaming from a primary (it
    then sees a live primary, whatever the monitor sees).
    """

    role: Role
    timeline: int = 0
    sync_required: bool = False
    sync_names: frozenset[str] = field(default_factory=frozenset)
    streaming: frozenset[str] = field(default_factory=frozenset)
    receiving: bool = False
    read_only: bool = False


DOWN = NodeState(Role.DOWN)


class Node(Protocol):
    """What the monitor needs of a node (a fake in unit tests, SQL in production)."""

    @property
    def name(self) -> str: ...

    def probe(self) -> NodeState: ...

    def promote(self) -> None: ...

    def fence(self) -> None: ...

    def set_sync(self, required: bool) -> None: ...


class Repairer(Protocol):
    """What can reach a node's files (the embedded pair; in compose, nothing: a returning
    node's own entry point rebuilds it). Optional for the monitor."""

    def fence_down(self, name: str) -> None:
        """Make a node that is down unable to start as a primary again."""

    def repair(self, name: str, primary: str) -> None:
        """Bring a node that is down or fenced back as a standby of ``primary``."""


_PROBE = """
SELECT pg_is_in_recovery(),
       current_setting('default_transaction_read_only')::bool,
       current_setting('synchronous_standby_names')
"""
_TIMELINE = "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int"
_REPLICATION = "SELECT application_name, state, sync_state FROM pg_stat_replication"
_RECEIVER = "SELECT status FROM pg_stat_wal_receiver"


class SqlNode:
    """A node reached by a conninfo of its own; one short connection per action, so a dead
    or restarted node never leaves the monitor holding a broken session."""

    def __init__(
        self,
        name: str,
        address: NodeAddress,
        *,
        user: str = "postgres",
        dbname: str = "postgres",
        connect_timeout_s: int = 2,
    ) -> None:
        self._name = name
        self.address = address
        self._conninfo = node_conninfo(
            address,
            user=user,
            dbname=dbname,
            connect_timeout_s=connect_timeout_s,
            application_name="tandem-pg-monitor",
        )

    @property
    def name(self) -> str:
        return self._name

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(self._conninfo, autocommit=True)

    def probe(self) -> NodeState:
        try:
            with self._connect() as conn:
                row = conn.execute(_PROBE).fetchone()
                assert row is not None
                in_recovery, read_only, sync_names = bool(row[0]), bool(row[1]), str(row[2])
                if in_recovery:
                    receiver = conn.execute(_RECEIVER).fetchone()
                    return NodeState(
                        Role.STANDBY,
                        receiving=receiver is not None and receiver[0] == "streaming",
                        read_only=True,
                    )
                timeline_row = conn.execute(_TIMELINE).fetchone()
                replicas = conn.execute(_REPLICATION).fetchall()
        except psycopg.Error:
            return DOWN
        return NodeState(
            Role.PRIMARY,
            timeline=int(timeline_row[0]) if timeline_row else 0,
            sync_required=bool(sync_names.strip()),
            sync_names=frozenset(
                str(r[0]) for r in replicas if r[1] == "streaming" and r[2] in ("sync", "quorum")
            ),
            streaming=frozenset(str(r[0]) for r in replicas if r[1] == "streaming"),
            read_only=read_only,
        )

    def promote(self) -> None:
        with self._connect() as conn:
            conn.execute("SELECT pg_promote(true, 30)")
            # A node rebuilt from a fenced copy must not carry the fence into its new role.
            conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
            conn.execute("SELECT pg_reload_conf()")

    def fence(self) -> None:
        """Refuse writes from now on: read-only by default (libpq's read-write check then
        skips this node) and every client session ended, so none keeps writing."""
        with self._connect() as conn:
            conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )

    def set_sync(self, required: bool) -> None:
        with self._connect() as conn:
            conn.execute(
                "ALTER SYSTEM SET synchronous_standby_names = "
                + ("'" + SYNC_ANY + "'" if required else "''")
            )
            conn.execute("ALTER SYSTEM SET synchronous_commit = on")
            conn.execute("SELECT pg_reload_conf()")
