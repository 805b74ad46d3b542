"""``tandem bench router`` (latency per mode, first streamed event) and ``tandem eval chat``
(follow-ups answered in conversations)."""

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
    chat = commands.eval.add_parser(
        "chat",
        help="scripted conversations: follow-ups answered correctly, per follow-up kind",
    )
    chat.add_argument("--only", default="", help="only conversations whose name contains this")
    chat.add_argument(
        "--dataset",
        type=Path,
        default=None,
        help="a dev set (../shared/datasets/sql or sql-spider): its databases and the "
        "conversations scripted for them, each follow-up also asked spelled out alone",
    )
    chat.add_argument(
        "--script",
        type=Path,
        action="append",
        default=[],
        help="with --dataset: only this script of conversations (repeatable; default every "
        "services/bench/golden/conversations_<set>*.json)",
    )
    chat.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON report (default bench-results/eval-chat.json, or "
        "eval-conversations-<set>.json with --dataset, a later script's name added)",
    )
    chat.set_defaults(handler=_eval_chat)


def _bench_router(args: argparse.Namespace) -> int:
    from services.bench.router import main as bench_router  # noqa: PLC0415

    bench_router(args.out, requests=args.requests)
    return 0


def _eval_chat(args: argparse.Namespace) -> int:
    if args.dataset is not None:
        from services.bench import sql_conversations  # noqa: PLC0415

        reports = sql_conversations.main(args.dataset, args.out, args.script)
        return 0 if all(sql_conversations.meets_targets(r) for r in reports) else 1
    from services.bench.eval_chat import main as eval_chat  # noqa: PLC0415

    results = eval_chat(args.out or Path("bench-results/eval-chat.json"), only=args.only)
    follow = results["follow_up"]
    return 0 if follow["accuracy"] >= follow["target"] else 1
