"""``tandem bench router``: router latency per mode and time to the first streamed event."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.cli._main import Commands


def register(commands: Commands) -> None:
    bench = commands.bench.add_parser(
        "router", help="RETRIEVE / AGENTIC / AUTO latency and first streamed event"
    )
    bench.add_argument("--requests", type=int, default=50, help="requests per measured case")
    bench.add_argument("--out", type=Path, default=Path("bench-results/router.json"))
    bench.set_defaults(handler=_bench_router)


def _bench_router(args: argparse.Namespace) -> int:
    from services.router.bench import main as bench_router  # noqa: PLC0415

    bench_router(args.out, requests=args.requests)
    return 0
