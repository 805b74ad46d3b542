"""``tandem postgres supervise``: the failover monitor on its own, for compose (or any
pair of Postgres nodes reachable over the network).

It talks to each node over SQL only; it cannot rebuild a node's files, so a returning old
primary is fenced (read-only, sessions ended) and its own entry point must rebuild it as a
standby (``pg_basebackup`` from the new primary). See README, "Postgres high availability".
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.cli._main import Commands
    from services.pgha import NodeAddress


def register(commands: Commands) -> None:
    postgres = commands.top.add_parser("postgres", help="Postgres high availability tools")
    sub = postgres.add_subparsers(dest="action", required=True)
    supervise = sub.add_parser(
        "supervise",
        help="watch a primary and its synchronous standby; promote the standby when the "
        "primary is gone",
        description=__doc__.split("\n\n")[0],
    )
    supervise.add_argument(
        "--node",
        action="append",
        required=True,
        metavar="[NAME=]HOST:PORT",
        help="a Postgres node (each once, at least two; HOST may be a Unix socket "
        "directory). NAME is the application_name the node streams under as a standby "
        "(its primary_conninfo); default: HOST with every character but letters and "
        "digits replaced by _ (postgres-b -> postgres_b)",
    )
    supervise.add_argument(
        "--user",
        default=os.environ.get("PGUSER") or "postgres",
        help="role to connect as (needs pg_promote, ALTER SYSTEM; default $PGUSER or postgres; "
        "the password, as libpq reads it: $PGPASSWORD or ~/.pgpass)",
    )
    supervise.add_argument(
        "--dbname",
        default=os.environ.get("PGDATABASE") or "postgres",
        help="database to connect to (default $PGDATABASE or postgres)",
    )
    supervise.add_argument(
        "--grace-s",
        type=float,
        default=None,
        help="seconds the primary must be unreachable before promotion "
        "(default $PG_FAILOVER_GRACE_S or 2)",
    )
    supervise.add_argument(
        "--sync-wait-s",
        type=float,
        default=None,
        help="seconds commits wait for a missing standby before they stop being "
        "synchronous (default $PG_SYNC_STANDBY_WAIT_S or 5)",
    )
    supervise.add_argument(
        "--interval-s",
        type=float,
        default=None,
        help="seconds between probes of every node (default $PG_MONITOR_INTERVAL_S or 0.5)",
    )
    supervise.set_defaults(handler=_supervise)


def _supervise(args: argparse.Namespace) -> int:
    from dataclasses import replace  # noqa: PLC0415

    from services.pgha import FailoverMonitor, FailoverSettings, SqlNode  # noqa: PLC0415

    try:
        named = [_named_node(raw) for raw in args.node]
    except ValueError as exc:
        print(f"error: --node: {exc}", file=sys.stderr)
        return 2
    addresses = [address for _, address in named]
    names = [name for name, _ in named]
    if len(set(addresses)) != len(addresses) or len(set(names)) != len(names) or len(named) < 2:
        print("error: --node: give at least two distinct nodes", file=sys.stderr)
        return 2
    settings = FailoverSettings.from_env()
    overrides = {
        field: value
        for field, value in (
            ("grace_s", args.grace_s),
            ("sync_wait_s", args.sync_wait_s),
            ("interval_s", args.interval_s),
        )
        if value is not None
    }
    settings = replace(settings, **overrides)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s postgres %(message)s", stream=sys.stdout
    )
    log = logging.getLogger("tandem.pgha")
    nodes = [SqlNode(name, a, user=args.user, dbname=args.dbname) for name, a in named]
    monitor = FailoverMonitor(nodes, settings, say=log.warning)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _s, _f: stop.set())
    log.warning(
        "postgres supervise: %s (grace %.1f s, sync wait %.1f s)",
        ", ".join(f"{name}={a}" for name, a in named),
        settings.grace_s,
        settings.sync_wait_s,
    )
    monitor.run(stop)
    return 0


def _named_node(raw: str) -> tuple[str, NodeAddress]:
    """``[NAME=]HOST:PORT`` -> (application name, address)."""
    from services.pgha import NodeAddress, application_name  # noqa: PLC0415

    name, sep, rest = raw.partition("=")
    address = NodeAddress.parse(rest if sep else raw)
    if not sep:
        name = application_name(address.host)
    if not name or not all(c.isalnum() or c == "_" for c in name):
        raise ValueError(f"node name {name!r}: letters, digits and _ only")
    return name, address
