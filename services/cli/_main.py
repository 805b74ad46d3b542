"""Argument parsing and dispatch; each subcommand lives next to what it exercises."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tandem", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start every implemented service locally")
    run.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for health")

    bench = sub.add_parser("bench", help="benchmarks: print a table, write JSON")
    bench_sub = bench.add_subparsers(dest="target", required=True)
    embed = bench_sub.add_parser("embed", help="embedding throughput and latency")
    embed.add_argument("--passages", type=int, default=512)
    embed.add_argument("--queries", type=int, default=200)
    embed.add_argument("--out", type=Path, default=Path("bench-results/embed.json"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        from services.cli._run import run  # noqa: PLC0415

        return run(args.timeout)
    if args.command == "bench" and args.target == "embed":
        from services.embedding.bench import main as bench_embed  # noqa: PLC0415

        bench_embed(args.out, args.passages, args.queries)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
