"""Connection strings that name every node of a Postgres pair.

libpq tries the hosts in order and keeps the first that fits ``target_session_attrs``:
``read-write`` skips a standby (and a fenced old primary, which is read-only), so a
writer finds the primary wherever it is after a failover without being told; readers
use ``prefer-standby`` and fall back to the primary when no standby answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeAddress:
    """Where one Postgres node listens: a TCP host (or a Unix socket directory) and port."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> NodeAddress:
        """``HOST:PORT`` (the last colon splits, so a socket directory may hold colons)."""
        host, sep, port = text.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"node {text!r}: expected HOST:PORT (port 1-65535)")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def _quote(value: str) -> str:
    """A libpq keyword value, quoted when it holds a space, quote or backslash."""
    if value and not any(c in value for c in " '\\"):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def node_conninfo(
    node: NodeAddress,
    *,
    user: str = "postgres",
    dbname: str = "postgres",
    connect_timeout_s: int = 2,
    application_name: str | None = None,
) -> str:
    """A conninfo for one node alone (the monitor talks to each node by itself)."""
    parts = [
        f"host={_quote(node.host)}",
        f"port={node.port}",
        f"user={_quote(user)}",
        f"dbname={_quote(dbname)}",
        f"connect_timeout={max(1, connect_timeout_s)}",
    ]
    if application_name:
        parts.append(f"application_name={_quote(application_name)}")
    return " ".join(parts)


# Over TCP, a node that vanished without closing its connections (a machine or container
# lost, a partition) is noticed within seconds, not after the kernel's two hours: idle
# connections by keepalives, a statement in flight by the unacknowledged-data timeout
# (not by how long a query runs). Unix sockets ignore both.
_TCP_LIVENESS = "keepalives_idle=5 keepalives_interval=2 keepalives_count=3 tcp_user_timeout=10000"


def _multi_host(
    nodes: Sequence[NodeAddress], attrs: str, user: str, dbname: str, connect_timeout_s: int
) -> str:
    if not nodes:
        raise ValueError("at least one node is needed")
    hosts = ",".join(n.host for n in nodes)
    ports = ",".join(str(n.port) for n in nodes)
    return (
        f"host={_quote(hosts)} port={ports} user={_quote(user)} dbname={_quote(dbname)} "
        f"connect_timeout={max(1, connect_timeout_s)} target_session_attrs={attrs} " + _TCP_LIVENESS
    )


def writer_conninfo(
    nodes: Sequence[NodeAddress],
    *,
    user: str = "postgres",
    dbname: str = "postgres",
    connect_timeout_s: int = 2,
) -> str:
    """Every node, ``target_session_attrs=read-write``: connects to whichever is primary."""
    return _multi_host(nodes, "read-write", user, dbname, connect_timeout_s)


def reader_conninfo(
    nodes: Sequence[NodeAddress],
    *,
    user: str = "postgres",
    dbname: str = "postgres",
    connect_timeout_s: int = 2,
) -> str:
    """Every node, ``target_session_attrs=prefer-standby``: a standby when one answers."""
    return _multi_host(nodes, "prefer-standby", user, dbname, connect_timeout_s)
