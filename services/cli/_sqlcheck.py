"""``tandem sql-check``: per configured SQL database, what the service will do and why."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.cli._main import Commands


def register(commands: Commands) -> None:
    check = commands.top.add_parser(
        "sql-check",
        help="check the SQL service's databases (SQL_DATABASES, ...): served, refused, and why",
    )
    check.set_defaults(handler=_sql_check)


def _sql_check(args: argparse.Namespace) -> int:
    from services.sql import (  # noqa: PLC0415
        SqlSettings,
        check_databases,
    )

    checks = asyncio.run(check_databases(SqlSettings.from_env()))
    width = max(len(c.name) for c in checks)
    for check in checks:
        print(f"{check.name:<{width}}  {check.action:<11}  tenants: {check.tenants}")
        for reason in check.reasons:
            print(f"{'':<{width}}  {reason}")
        for line in check.schema:
            print(f"{'':<{width}}  {line}")
    if any(c.blocks_start for c in checks):
        print("The SQL service will refuse to start until every refused database is fixed.")
        return 1
    return 0
