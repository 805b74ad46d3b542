"""Postgres high availability: the embedded primary with a synchronous standby, the
failover monitor that promotes it, and the conninfos that name both nodes.

The face other packages use; nothing outside imports the ``_`` modules.
"""

from services.pgha._conninfo import NodeAddress, node_conninfo, reader_conninfo, writer_conninfo
from services.pgha._embedded import EmbeddedNode, EmbeddedPair, PairInfo, application_name
from services.pgha._monitor import FailoverEvent, FailoverMonitor
from services.pgha._node import DOWN, SYNC_ANY, Node, NodeState, Repairer, Role, SqlNode
from services.pgha._settings import FailoverSettings

__all__ = [
    "DOWN",
    "SYNC_ANY",
    "EmbeddedNode",
    "EmbeddedPair",
    "FailoverEvent",
    "FailoverMonitor",
    "FailoverSettings",
    "Node",
    "NodeAddress",
    "NodeState",
    "PairInfo",
    "Repairer",
    "Role",
    "SqlNode",
    "application_name",
    "node_conninfo",
    "reader_conninfo",
    "writer_conninfo",
]
