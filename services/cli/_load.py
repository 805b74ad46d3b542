"""``tandem load`` (the ghz-compatible load driver) and ``tandem bench report``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.cli._main import Commands


def register(commands: Commands) -> None:
    load = commands.top.add_parser(
        "load",
        help="gRPC load test any RPC, ghz-style (summary or JSON report)",
        description="ghz's main options; a flag given here overrides the same key in --config.",
    )
    load.add_argument("host", nargs="?", help="target host:port (or 'host' in --config)")
    load.add_argument("--config", type=Path, help="a ghz JSON config file (infra/ghz/*.json)")
    load.add_argument("--call", help="package.Service.Method, e.g. tandem.v1.GatewayService.Search")
    load.add_argument("-d", "--data", help="call data as JSON (an array is used round-robin)")
    load.add_argument("-D", "--data-file", type=Path, help="file with the call data JSON")
    load.add_argument("-m", "--metadata", help='metadata JSON, e.g. {"authorization":"Bearer …"}')
    load.add_argument("-M", "--metadata-file", type=Path, help="file with the metadata JSON")
    load.add_argument("-c", "--concurrency", type=int, help="concurrent workers (default 50)")
    load.add_argument("-n", "--total", type=int, help="requests to send (default 200)")
    load.add_argument("-z", "--duration", help="run this long (10s, 1m); -n is then ignored")
    load.add_argument("--rps", "-q", dest="rps", type=float, help="rate limit, requests/s")
    load.add_argument("-t", "--timeout", help="deadline per call (default 20s; 0: none)")
    load.add_argument("--connect-timeout", help="initial connection timeout (default 10s)")
    load.add_argument("--connections", type=int, help="HTTP/2 connections (default 1)")
    load.add_argument("--insecure", action="store_true", default=None, help="plaintext")
    load.add_argument("--cacert", type=Path, help="trusted root certificates for TLS")
    load.add_argument("--skipFirst", dest="skip_first", type=int, help="leave out the first N")
    load.add_argument(
        "--count-errors", action="store_true", default=None, help="errors count in latencies"
    )
    load.add_argument("--name", help="a name for the run, kept in the report")
    load.add_argument("-O", "--format", choices=("summary", "json", "pretty"), default="summary")
    load.add_argument("-o", "--output", type=Path, help="write the report here, not stdout")
    load.set_defaults(handler=_load)

    report = commands.bench.add_parser(
        "report",
        help="every benchmark + gateway load at several concurrencies: JSON, charts, SUMMARY.md",
    )
    report.add_argument("--out", type=Path, default=Path("bench/results"))
    report.add_argument(
        "--gateway", default=None, help="gateway host:port (default: $TANDEM_GATEWAY or :50051)"
    )
    report.add_argument(
        "--api-key", default=None, help="gateway API key (default: $TANDEM_API_KEY)"
    )
    report.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=[1, 8, 16, 32],
        help="gateway load concurrency levels",
    )
    report.add_argument("--duration", type=float, default=10.0, help="seconds per load point")
    report.add_argument(
        "--skip-benches", action="store_true", help="only the gateway load and the report"
    )
    report.set_defaults(handler=_bench_report)


def _load_options(args: argparse.Namespace) -> Any:
    from services.load import (  # noqa: PLC0415  # noqa: PLC0415
        LoadConfigError,
        LoadOptions,
        from_ghz_config,
        parse_duration,
        parse_json_argument,
    )

    values: dict[str, Any] = from_ghz_config(args.config) if args.config else {}
    if args.host:
        values["host"] = args.host
    for name in (
        "call",
        "concurrency",
        "total",
        "rps",
        "connections",
        "insecure",
        "cacert",
        "skip_first",
        "count_errors",
        "name",
    ):
        value = getattr(args, name)
        if value is not None:
            values[name] = value
    if args.data is not None:
        values["data"] = parse_json_argument(args.data, "--data")
    if args.data_file is not None:
        values["data"] = parse_json_argument(args.data_file.read_text(), "--data-file")
    if args.metadata is not None:
        values["metadata"] = parse_json_argument(args.metadata, "--metadata")
    if args.metadata_file is not None:
        values["metadata"] = parse_json_argument(args.metadata_file.read_text(), "--metadata-file")
    if args.total is not None and args.duration is None:
        # -n on the command line wins over a duration from the config file.
        values.pop("duration_s", None)
    if args.duration is not None:
        values["duration_s"] = parse_duration(args.duration, "-z/--duration")
    if args.timeout is not None:
        values["timeout_s"] = parse_duration(args.timeout, "-t/--timeout")
    if args.connect_timeout is not None:
        values["connect_timeout_s"] = parse_duration(args.connect_timeout, "--connect-timeout")
    for required in ("host", "call"):
        if not values.get(required):
            raise LoadConfigError(f"give --{required} (or set '{required}' in --config)")
    return LoadOptions(**values)


def _load(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from services.load import (  # noqa: PLC0415
        LoadConfigError,
        TargetUnreachable,
        format_summary,
        run_load,
    )

    try:
        options = _load_options(args)
        report = asyncio.run(run_load(options))
    except (LoadConfigError, TargetUnreachable) as exc:
        print(f"tandem load: {exc}", file=sys.stderr)
        return 1
    if args.format == "summary":
        text = format_summary(report)
    else:
        text = json.dumps(report.to_json(), indent=2 if args.format == "pretty" else None)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    else:
        print(text)
    return 0


def bench_commands(out: Path) -> list[tuple[str, list[str]]]:
    """Every registered ``tandem bench`` target except the report, quick where it can be
    (read from the CLI's own command tree, built lazily)."""
    from services.cli._main import build_parser  # noqa: PLC0415 - the tree registers this module

    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bench = top.choices["bench"]
    sub = next(a for a in bench._actions if isinstance(a, argparse._SubParsersAction))
    commands = []
    for name, child in sub.choices.items():
        if name == "report":
            continue
        flags = {opt for action in child._actions for opt in action.option_strings}
        argv = ["bench", name]
        if "--quick" in flags:
            argv.append("--quick")
        if "--out" in flags:
            argv += ["--out", str(out / f"{name}.json")]
        commands.append((name, argv))
    return commands


def _bench_report(args: argparse.Namespace) -> int:
    from services.load.report import ReportSettings, run_report  # noqa: PLC0415

    settings = ReportSettings.from_args(
        out=args.out,
        gateway=args.gateway,
        api_key=args.api_key,
        concurrency=tuple(args.concurrency),
        duration_s=args.duration,
        run_benches=not args.skip_benches,
        benches=bench_commands(args.out) if not args.skip_benches else (),
    )
    return run_report(settings)
