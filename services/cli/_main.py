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
    retrieval = bench_sub.add_parser("retrieval", help="search latency, HNSW recall, ingest")
    retrieval.add_argument("--quick", action="store_true", help="10K chunks only")
    retrieval.add_argument("--out", type=Path, default=Path("bench-results/retrieval.json"))

    evals = sub.add_parser("eval", help="quality evals on golden sets: table + JSON")
    eval_sub = evals.add_subparsers(dest="target", required=True)
    eval_retrieval = eval_sub.add_parser("retrieval", help="Recall@10, MRR@10, nDCG@10 by mode")
    eval_retrieval.add_argument("--dataset", type=Path, default=None, help="BEIR layout dir")
    eval_retrieval.add_argument(
        "--out", type=Path, default=Path("bench-results/eval-retrieval.json")
    )
    eval_sql = eval_sub.add_parser("sql", help="text-to-SQL execution accuracy")
    eval_sql.add_argument("--golden", type=Path, default=None)
    eval_sql.add_argument("--out", type=Path, default=Path("bench-results/sql_eval.json"))
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
    if args.command == "bench" and args.target == "retrieval":
        from services.retrieval.bench import main as bench_retrieval  # noqa: PLC0415

        bench_retrieval(args.out, quick=args.quick)
        return 0
    if args.command == "eval" and args.target == "retrieval":
        from services.retrieval.eval import main as eval_retrieval  # noqa: PLC0415

        eval_retrieval(args.dataset, args.out)
        return 0
    if args.command == "eval" and args.target == "sql":
        from services.sql.eval import main as eval_sql  # noqa: PLC0415

        eval_sql(args.out, args.golden)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
