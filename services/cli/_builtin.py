"""``tandem run`` and the per-service benchmarks and evals."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.cli._main import Commands
    from services.common import Principal


def register(commands: Commands) -> None:
    run = commands.top.add_parser(
        "run",
        help="set up and start the whole system locally: services, demo documents, a demo API key",
    )
    run.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for each service's health"
    )
    run.add_argument(
        "--replicas",
        type=_replica_count,
        default=1,
        help="processes of each of retrieval, sql and router (1-8; their callers balance "
        "over them and skip one that is starting or draining)",
    )
    run.add_argument(
        "--port-base",
        type=int,
        default=None,
        metavar="N",
        help="move every port at once: the edge on N, the gateway on N+1, … (default 50050; "
        "a <SERVICE>_PORT variable set explicitly still wins)",
    )
    run.add_argument(
        "--pg-standby",
        action="store_true",
        help="run the embedded Postgres as a primary and a synchronous streaming standby "
        "(TANDEM_DATA_DIR/pg and pg-standby) with a failover monitor that promotes the "
        "standby when the primary dies (README: Postgres high availability)",
    )
    run.set_defaults(handler=_run)

    embed = commands.bench.add_parser("embed", help="embedding throughput and latency")
    embed.add_argument("--passages", type=int, default=512)
    embed.add_argument("--queries", type=int, default=200)
    embed.add_argument("--out", type=Path, default=Path("bench-results/embed.json"))
    embed.set_defaults(handler=_bench_embed)
    retrieval = commands.bench.add_parser("retrieval", help="search latency, HNSW recall, ingest")
    retrieval.add_argument("--quick", action="store_true", help="10K chunks only")
    retrieval.add_argument("--out", type=Path, default=Path("bench-results/retrieval.json"))
    retrieval.set_defaults(handler=_bench_retrieval)
    memory = commands.bench.add_parser(
        "ingest-memory", help="resident memory of services and Postgres over a long ingest"
    )
    memory.add_argument("--documents", type=int, default=10_000)
    memory.add_argument("--batch", type=int, default=100, help="documents per IngestDocuments")
    memory.add_argument("--out", type=Path, default=Path("bench-results/ingest-memory.json"))
    memory.set_defaults(handler=_bench_ingest_memory)
    acl = commands.bench.add_parser(
        "acl", help="document ACLs: UpdateDocumentAcl p50/p99, search with vs without a principal"
    )
    acl.add_argument("--chunks", type=int, default=1000, help="chunks of the updated document")
    acl.add_argument("--rounds", type=int, default=100)
    acl.add_argument("--out", type=Path, default=Path("bench-results/acl.json"))
    acl.set_defaults(handler=_bench_acl)
    cost = commands.bench.add_parser(
        "cost",
        help="CPU ms per request of each gateway RPC, per process of the stack (from /proc)",
    )
    cost.add_argument("--concurrency", type=int, default=16)
    cost.add_argument("--duration", type=float, default=10.0, help="seconds per window")
    cost.add_argument("--rounds", type=int, default=1, help="windows per RPC and stack")
    cost.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="RPC",
        help="search search_http ask_retrieve ask_auto_sql ask_sql stream_ask, ask_sql_refused "
        "(default: all but ask_sql_refused)",
    )
    cost.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="SRC",
        help="also run a stack from this source tree and measure both side by side",
    )
    cost.add_argument("--through", choices=("edge", "gateway"), default="edge")
    cost.add_argument(
        "--principal",
        default=None,
        metavar="ID",
        help="call as this principal (an act_as key of the demo tenant, the "
        "x-tandem-principal headers on every call)",
    )
    cost.add_argument(
        "--principal-groups", default="", metavar="G1,G2", help="the principal's groups"
    )
    cost.add_argument(
        "--principal-attributes",
        default="",
        metavar="K=V&K=V",
        help="the principal's attributes, e.g. region=EMEA",
    )
    cost.add_argument(
        "--principal-compare",
        action="store_true",
        help="measure the stack both as the service key and as the principal, side by side",
    )
    cost.add_argument(
        "--traces",
        action="store_true",
        help="stacks it starts keep the local span store on (default: no span is exported)",
    )
    cost.add_argument(
        "--data-dir", type=Path, default=Path(".tandem/bench-cost"), help="stacks it starts"
    )
    cost.add_argument("--out", type=Path, default=Path("bench-results/cost.json"))
    cost.set_defaults(handler=_bench_cost)
    drill = commands.bench.add_parser(
        "drill",
        help="kill one replica each of retrieval, sql and router under load "
        "(tandem run --replicas 2): failed calls per RPC, p99 during the kills",
    )
    drill.add_argument("--rps", type=float, default=60.0, help="calls started per second")
    drill.add_argument(
        "--rounds", type=int, default=3, help="kills of each service (--postgres: primaries lost)"
    )
    drill.add_argument(
        "--postgres",
        action="store_true",
        help="lose the primary Postgres instead (tandem run --pg-standby; rounds alternate "
        "a SIGKILL and a data directory moved away): failed calls per RPC, time until writes "
        "succeed again, every acknowledged write looked for on the new primary",
    )
    drill.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the stack it starts (default .tandem/bench-drill, --postgres .tandem/bench-pg-drill: "
        "emptied first)",
    )
    drill.add_argument(
        "--out", type=Path, default=None, help="default bench-results/drill.json (pg-drill.json)"
    )
    drill.add_argument(
        "--attach",
        metavar="ADDR",
        default=None,
        help="drive the stack whose edge is at ADDR instead of starting one; name the "
        "containers to kill with --container (needs --api-key)",
    )
    drill.add_argument("--api-key", default=None, help="with --attach (default: $TANDEM_API_KEY)")
    drill.add_argument(
        "--container",
        action="append",
        default=[],
        metavar="SERVICE=NAME",
        help="with --attach: the container to kill for retrieval, sql and router (each once)",
    )
    drill.add_argument(
        "--runtime",
        default="podman",
        help="with --attach: the container command (e.g. 'podman --runtime /usr/sbin/runc')",
    )
    drill.set_defaults(handler=_bench_drill)
    hops = commands.bench.add_parser(
        "hops",
        help="CPU ms per request of a chain of bare Python gRPC processes: the topology's floor",
    )
    hops.add_argument("--hops", type=int, default=3, help="processes in the chain (Search: 3)")
    hops.add_argument("--concurrency", type=int, default=16)
    hops.add_argument("--duration", type=float, default=10.0, help="seconds of load")
    hops.add_argument("--reply-bytes", type=int, default=12_000)
    hops.add_argument(
        "--rate", type=float, default=0.0, help="requests/s to pace at (default: flat out)"
    )
    hops.add_argument("--out", type=Path, default=Path("bench-results/hops.json"))
    hops.set_defaults(handler=_bench_hops)
    replicas = commands.bench.add_parser(
        "replicas",
        help="Postgres CPU ms per Search on each node, reads on the primary only vs. "
        "spread over a streaming standby: the search capacity a standby adds",
    )
    replicas.add_argument("--chunks", type=int, default=10_000)
    replicas.add_argument("--searches", type=int, default=1000, help="per round and setup")
    replicas.add_argument("--concurrency", type=int, default=8)
    replicas.add_argument("--rounds", type=int, default=3)
    replicas.add_argument("--out", type=Path, default=Path("bench-results/replicas.json"))
    replicas.set_defaults(handler=_bench_replicas)

    eval_retrieval = commands.eval.add_parser(
        "retrieval", help="Recall@10, MRR@10, nDCG@10 by mode"
    )
    sources = eval_retrieval.add_mutually_exclusive_group()
    sources.add_argument("--dataset", type=Path, default=None, help="BEIR layout dir")
    sources.add_argument(
        "--datasets",
        type=Path,
        nargs="+",
        default=[],
        metavar="DIR",
        help="several BEIR dirs: each table, then nDCG side by side with the baselines",
    )
    eval_retrieval.add_argument(
        "--baselines",
        type=Path,
        default=None,
        help="BASELINES.md of reference runs (default: any beside the --datasets dirs)",
    )
    eval_retrieval.add_argument(
        "--out", type=Path, default=Path("bench-results/eval-retrieval.json")
    )
    eval_retrieval.set_defaults(handler=_eval_retrieval)
    eval_sql = commands.eval.add_parser(
        "sql",
        help="text-to-SQL execution accuracy: the demo golden set, or a dataset folder",
    )
    source = eval_sql.add_mutually_exclusive_group()
    source.add_argument("--golden", type=Path, default=None, help="a golden-set JSON file")
    source.add_argument(
        "--dataset",
        type=Path,
        default=None,
        help="a dataset folder (databases/*.sql, questions.jsonl), e.g. ../shared/datasets/sql",
    )
    source.add_argument(
        "--compare",
        type=Path,
        nargs="+",
        default=None,
        metavar="REPORT",
        help="print earlier --dataset reports (JSON) side by side, each half of each run",
    )
    eval_sql.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON report (default bench-results/sql_eval.json, or sql_dev_eval.json with "
        "--dataset)",
    )
    eval_sql.add_argument("--verbose", action="store_true", help="--dataset: one line per question")
    eval_sql.add_argument(
        "--drop-keys",
        action="store_true",
        help="--dataset: drop every PRIMARY KEY / FOREIGN KEY / UNIQUE after loading (a "
        "warehouse that declares no keys)",
    )
    eval_sql.add_argument(
        "--no-meanings",
        action="store_true",
        help="--dataset: no embedding service beside the SQL service (words no name spells "
        "are not read by meaning)",
    )
    eval_sql.add_argument(
        "--analyze",
        action="store_true",
        help="--dataset: run ANALYZE after loading (default: measured as a freshly restored "
        "database, with no planner statistics)",
    )
    eval_sql.add_argument(
        "--engine",
        choices=("postgres", "sqlite", "duckdb", "mysql"),
        default="postgres",
        help="--dataset: the warehouse engine asked (sqlite, duckdb: each database copied "
        "from the loaded Postgres one into a file; mysql: into a private MariaDB server; "
        "scored against the same gold results)",
    )
    eval_sql.add_argument(
        "--wide",
        type=int,
        nargs="?",
        const=1000,
        default=0,
        metavar="TABLES",
        help="--dataset: load each database beside about TABLES look-alike tables with rows "
        "(staging, archive, yearly and regional copies; default 1000)",
    )
    halves = eval_sql.add_mutually_exclusive_group()
    halves.add_argument(
        "--blind",
        action="store_const",
        const="blind",
        dest="half",
        help="--dataset: only the blind half its README names (totals per category only)",
    )
    halves.add_argument(
        "--study",
        action="store_const",
        const="study",
        dest="half",
        help="--dataset: only the study half its README names",
    )
    eval_sql.add_argument(
        "--memory",
        action="store_true",
        help="the answer memory: teach base questions, ask value swaps, paraphrases and "
        "unrelated questions (--dataset, default ../shared/datasets/sql; writes "
        "bench-results/sql_memory_eval.json)",
    )
    eval_sql.set_defaults(handler=_eval_sql)
    eval_routing = commands.eval.add_parser(
        "routing",
        help="where AUTO's offline planner sends each dev question first (records or documents)",
    )
    eval_routing.add_argument(
        "--datasets",
        type=Path,
        nargs="+",
        default=None,
        metavar="DIR",
        help="dataset folders (databases/ → records, corpus/ → documents; default: those of "
        "../shared/datasets/sql, sql-spider and qa that exist)",
    )
    eval_routing.add_argument("--out", type=Path, default=Path("bench-results/eval-routing.json"))
    eval_routing.set_defaults(handler=_eval_routing)
    eval_refusals = commands.eval.add_parser(
        "refusals",
        help="SQL refusals that call an existing table or column absent (target 0), on the "
        "dev sets' study halves",
    )
    eval_refusals.add_argument(
        "--datasets",
        type=Path,
        nargs="+",
        default=None,
        metavar="DIR",
        help="text-to-SQL dataset folders (default: ../shared/datasets/sql and sql-spider "
        "that exist; a dataset naming halves is asked its study half only)",
    )
    eval_refusals.add_argument(
        "--no-meanings",
        dest="meanings",
        action="store_false",
        help="no embedding service beside the SQL service: words are read by names alone",
    )
    eval_refusals.add_argument("--out", type=Path, default=Path("bench-results/eval-refusals.json"))
    eval_refusals.set_defaults(handler=_eval_refusals)
    eval_answers = commands.eval.add_parser(
        "answers",
        help="document answers: contains-gold, cited passage, length, outcomes by mode, with "
        "a BM25 best-sentence baseline",
    )
    eval_answers.add_argument(
        "--dataset",
        type=Path,
        default=Path("../shared/datasets/qa"),
        help="a folder with corpus/*.md and questions.jsonl (default ../shared/datasets/qa)",
    )
    eval_answers.add_argument(
        "--modes",
        default="retrieve,agentic,auto",
        help="comma-separated Ask modes (retrieve, agentic, auto)",
    )
    eval_answers.add_argument("--limit", type=int, default=None, help="the first N questions")
    eval_answers.add_argument("--out", type=Path, default=Path("bench-results/eval-answers.json"))
    eval_answers.set_defaults(handler=_eval_answers)
    eval_documents = commands.eval.add_parser(
        "documents",
        help="answers over real files (PDF, scan, HTML, DOCX, PPTX, CSV, XLSX) per format and "
        "half: contains-gold, words, one-line table answers, right locator, OCR nDCG@10",
    )
    eval_documents.add_argument(
        "--dataset",
        type=Path,
        default=Path("services/bench/devsets/documents"),
        help="a folder with corpus/, questions.jsonl, ocr_queries.jsonl and ocr_reference/ "
        "(default services/bench/devsets/documents)",
    )
    eval_documents.add_argument(
        "--modes", default="retrieve,auto", help="comma-separated Ask modes (retrieve, auto)"
    )
    eval_documents.add_argument("--limit", type=int, default=None, help="the first N questions")
    eval_documents.add_argument(
        "--out", type=Path, default=Path("bench-results/eval-documents.json")
    )
    eval_documents.set_defaults(handler=_eval_documents)


def _eval_routing(args: argparse.Namespace) -> int:
    from services.bench import routing_eval  # noqa: PLC0415

    shared = Path("../shared/datasets")
    folders = args.datasets or [
        d for d in (shared / "sql", shared / "sql-spider", shared / "qa") if d.is_dir()
    ]
    if not folders:
        raise SystemExit(
            "--datasets: none given and none of ../shared/datasets/{sql,sql-spider,qa}"
        )
    routing_eval.main(folders, args.out)
    return 0


def _eval_refusals(args: argparse.Namespace) -> int:
    from services.bench import sql_refusals  # noqa: PLC0415

    shared = Path("../shared/datasets")
    folders = args.datasets or [d for d in (shared / "sql", shared / "sql-spider") if d.is_dir()]
    if not folders:
        raise SystemExit("--datasets: none given and none of ../shared/datasets/{sql,sql-spider}")
    return sql_refusals.main(folders, args.out, meanings=args.meanings)


def _eval_answers(args: argparse.Namespace) -> int:
    from services.bench import answers  # noqa: PLC0415

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(answers.MODES))
    if unknown or not modes:
        raise SystemExit(
            f"--modes: unknown {', '.join(unknown) or '(none)'}; use {', '.join(answers.MODES)}"
        )
    answers.main(args.dataset, args.out, modes=modes, limit=args.limit)
    return 0


def _eval_documents(args: argparse.Namespace) -> int:
    from services.bench import documents_eval  # noqa: PLC0415

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(documents_eval.MODES))
    if unknown or not modes:
        raise SystemExit(
            f"--modes: unknown {', '.join(unknown) or '(none)'}; "
            f"use {', '.join(documents_eval.MODES)}"
        )
    documents_eval.main(args.dataset, args.out, modes=modes, limit=args.limit)
    return 0


def _replica_count(raw: str) -> int:
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if not 1 <= count <= 8:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 8, not {raw!r}")
    return count


def _run(args: argparse.Namespace) -> int:
    from services.cli._run import run  # noqa: PLC0415

    return run(
        args.timeout,
        replicas=args.replicas,
        port_base=args.port_base,
        pg_standby=args.pg_standby,
    )


def _bench_embed(args: argparse.Namespace) -> int:
    from services.bench.embed import main as bench_embed  # noqa: PLC0415

    bench_embed(args.out, args.passages, args.queries)
    return 0


def _bench_retrieval(args: argparse.Namespace) -> int:
    from services.bench.retrieval import main as bench_retrieval  # noqa: PLC0415

    bench_retrieval(args.out, quick=args.quick)
    return 0


def _bench_acl(args: argparse.Namespace) -> int:
    from services.bench.acl import main as bench_acl  # noqa: PLC0415

    bench_acl(args.out, chunks=args.chunks, rounds=args.rounds)
    return 0


def _bench_ingest_memory(args: argparse.Namespace) -> int:
    from services.bench.ingest_memory import main as bench_memory  # noqa: PLC0415

    bench_memory(args.out, args.documents, args.batch)
    return 0


def _bench_cost(args: argparse.Namespace) -> int:
    from services.bench.cost import SCENARIOS, CostSettings  # noqa: PLC0415
    from services.bench.cost import main as bench_cost  # noqa: PLC0415

    keys = tuple(s.key for s in SCENARIOS)
    unknown = sorted(set(args.only or ()) - set(keys))
    if unknown:
        raise SystemExit(f"unknown RPC for --only: {', '.join(unknown)} (one of {', '.join(keys)})")
    bench_cost(
        CostSettings(
            out=args.out,
            concurrency=args.concurrency,
            duration_s=args.duration,
            rounds=args.rounds,
            scenarios=tuple(args.only) if args.only else CostSettings.scenarios,
            baseline=args.baseline,
            data_dir=args.data_dir,
            through=args.through,
            traces=args.traces,
            principal=_bench_principal(args),
            principal_compare=args.principal_compare,
        )
    )
    return 0


def _bench_principal(args: argparse.Namespace) -> Principal | None:
    """The principal ``--principal*`` name, parsed as the gateway parses its headers."""
    from services.common import (  # noqa: PLC0415
        ATTRIBUTES_HEADER,
        GROUPS_HEADER,
        PRINCIPAL_HEADER,
        TandemError,
        parse_principal,
    )

    if args.principal is None:
        if args.principal_compare or args.principal_groups or args.principal_attributes:
            raise SystemExit("--principal-* options need --principal ID")
        return None
    from urllib.parse import quote  # noqa: PLC0415

    headers = [(PRINCIPAL_HEADER, quote(args.principal, safe=""))]
    if args.principal_groups:
        groups = ",".join(quote(g.strip(), safe="") for g in args.principal_groups.split(","))
        headers.append((GROUPS_HEADER, groups))
    if args.principal_attributes:
        headers.append((ATTRIBUTES_HEADER, args.principal_attributes))
    try:
        return parse_principal(headers)
    except TandemError as exc:
        raise SystemExit(f"--principal: {exc.message}") from None


def _bench_drill(args: argparse.Namespace) -> int:
    from services.bench.drill import DrillSettings  # noqa: PLC0415
    from services.bench.drill import main as drill  # noqa: PLC0415

    if args.postgres:
        return _bench_pg_drill(args)
    settings = DrillSettings(
        data_dir=args.data_dir or Path(".tandem/bench-drill"),
        out=args.out or Path("bench-results/drill.json"),
        rps=args.rps,
        rounds=args.rounds,
    )
    if args.attach is None:
        if args.container:
            raise SystemExit("--container needs --attach (the stack the containers belong to)")
        results = drill(settings)
    else:
        import os  # noqa: PLC0415
        import shlex  # noqa: PLC0415

        from services.bench.drill import attached  # noqa: PLC0415

        key = args.api_key or os.environ.get("TANDEM_API_KEY", "")
        if not key:
            raise SystemExit("--attach needs --api-key (or TANDEM_API_KEY)")
        containers = {}
        for item in args.container:
            service, sep, name = item.partition("=")
            if not sep or not name:
                raise SystemExit(f"--container wants SERVICE=NAME, not {item!r}")
            containers[service] = name
        try:
            results = attached(settings, args.attach, key, containers, shlex.split(args.runtime))
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    return 0 if results["target_met"] else 1


def _bench_pg_drill(args: argparse.Namespace) -> int:
    from services.bench.pg_drill import PgDrillSettings  # noqa: PLC0415
    from services.bench.pg_drill import main as pg_drill  # noqa: PLC0415

    if args.attach is not None or args.container:
        raise SystemExit("--postgres starts its own stack (tandem run --pg-standby): no --attach")
    settings = PgDrillSettings(
        data_dir=args.data_dir or Path(".tandem/bench-pg-drill"),
        out=args.out or Path("bench-results/pg-drill.json"),
        rps=args.rps,
        rounds=args.rounds,
    )
    return 0 if pg_drill(settings)["target_met"] else 1


def _bench_hops(args: argparse.Namespace) -> int:
    from services.bench.hops import HopsSettings  # noqa: PLC0415
    from services.bench.hops import main as bench_hops  # noqa: PLC0415

    if args.hops < 1:
        raise SystemExit("--hops must be at least 1")
    bench_hops(
        HopsSettings(
            out=args.out,
            hops=args.hops,
            concurrency=args.concurrency,
            duration_s=args.duration,
            reply_bytes=args.reply_bytes,
            rate=args.rate,
        )
    )
    return 0


def _bench_replicas(args: argparse.Namespace) -> int:
    from services.bench.replicas import main as bench_replicas  # noqa: PLC0415

    results = bench_replicas(
        args.out,
        chunks=args.chunks,
        searches=args.searches,
        concurrency=args.concurrency,
        rounds=args.rounds,
    )
    return 0 if results["meets_target"] else 1


def _eval_retrieval(args: argparse.Namespace) -> int:
    from services.bench.retrieval_eval import main as eval_retrieval  # noqa: PLC0415

    eval_retrieval(args.dataset, args.out, datasets=args.datasets, baselines=args.baselines)
    return 0


def _eval_sql(args: argparse.Namespace) -> int:
    if args.compare:
        from services.bench import sql_dataset as eval_dataset  # noqa: PLC0415

        reports = {path.stem: json.loads(path.read_text()) for path in args.compare}
        print(eval_dataset.side_by_side(reports))
        return 0
    if args.memory:
        from services.bench import sql_memory as eval_memory  # noqa: PLC0415

        dataset = args.dataset or Path("../shared/datasets/sql")
        report = eval_memory.main(
            dataset,
            args.out or eval_memory.DEFAULT_OUT.with_stem(f"sql_memory_eval-{dataset.name}"),
            verbose=args.verbose,
        )
        return 0 if eval_memory.meets_targets(report) else 1
    if args.dataset is not None:
        from services.bench import sql_dataset as eval_dataset  # noqa: PLC0415

        report = eval_dataset.main(
            args.dataset,
            args.out or eval_dataset.DEFAULT_OUT,
            verbose=args.verbose,
            options=eval_dataset.LoadOptions(
                analyze=args.analyze,
                drop_keys=args.drop_keys,
                wide=args.wide,
                engine=args.engine,
            ),
            meanings=not args.no_meanings,
            half=args.half,
        )
        return 0 if report["gold_errors"] == 0 else 1
    from services.bench import sql_golden as golden_eval  # noqa: PLC0415

    golden_eval.main(args.out or golden_eval.DEFAULT_OUT, args.golden)
    return 0
