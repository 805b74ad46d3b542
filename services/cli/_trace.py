"""``tandem trace TRACE_ID``: one request's span tree from the local span store.

Services write their spans to ``$TANDEM_TRACE_DIR/<service>.jsonl`` when that variable
is set; this command gathers one trace from every file and
prints it as a tree: indentation by parent, duration, service, status, key attributes.
The trace id comes back to callers in the ``x-trace-id`` trailing metadata.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.cli._main import Commands

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
DEFAULT_DIR = Path(".tandem") / "traces"


def default_dir() -> Path:
    """``$TANDEM_TRACE_DIR``, else ``$TANDEM_DATA_DIR/traces``, else ``.tandem/traces``."""
    configured = os.environ.get("TANDEM_TRACE_DIR", "").strip()
    if configured:
        return Path(configured)
    data = os.environ.get("TANDEM_DATA_DIR", "").strip()
    return Path(data) / "traces" if data else DEFAULT_DIR


def register(commands: Commands) -> None:
    trace = commands.top.add_parser(
        "trace", help="print one request's span tree from the local span store"
    )
    trace.add_argument("trace_id", help="32 hex digits (the x-trace-id response trailer)")
    trace.add_argument(
        "--dir", type=Path, default=None, help="span store directory (default: $TANDEM_TRACE_DIR)"
    )
    trace.add_argument("--all", action="store_true", help="every attribute, not just key ones")
    trace.add_argument("--json", action="store_true", help="the spans as JSON lines")
    trace.set_defaults(handler=_trace)


def _trace(args: argparse.Namespace) -> int:
    from services.common import (  # noqa: PLC0415
        build_tree,
        load_trace,
        render_tree,
        store_files,
    )

    trace_id = args.trace_id.strip().lower()
    if not _TRACE_ID.fullmatch(trace_id):
        print("tandem trace: TRACE_ID must be 32 hex digits", file=sys.stderr)
        return 2
    directory: Path = args.dir or default_dir()
    if not store_files(directory):
        print(
            f"tandem trace: no span files in {directory} "
            "(start the services with TANDEM_TRACE_DIR set, or pass --dir)",
            file=sys.stderr,
        )
        return 1
    spans = load_trace(directory, trace_id)
    if not spans:
        print(f"tandem trace: trace {trace_id} not found in {directory}", file=sys.stderr)
        return 1
    if args.json:
        for span in spans:
            record = {k: v for k, v in vars(span).items() if k != "children"}
            print(json.dumps(record, separators=(",", ":"), default=str))
        return 0
    roots = build_tree(spans)
    services = sorted({s.service for s in spans})
    total_ms = (max(s.end_ns for s in spans) - min(s.start_ns for s in spans)) / 1e6
    print(
        f"trace {trace_id}: {len(spans)} spans, {len(services)} services "
        f"({', '.join(services)}), {total_ms:.1f} ms"
    )
    for line in render_tree(roots, all_attributes=args.all):
        print(line)
    return 0
