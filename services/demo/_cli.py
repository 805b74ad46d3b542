"""``tandem demo …`` (and ``python -m services.demo …``): load, check, show or export the
demo documents.

The seed follows ``SQL_DEMO_SEED`` so the documents describe the same CRM the warehouse
was loaded with; the retrieval address follows ``RETRIEVAL_ADDR``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from services.common import Env, Trust, tls_directory
from services.demo._corpus import (
    COMPOUND_QUESTION,
    DEFAULT_ACCOUNTS,
    DemoCorpus,
    compound_answer,
    generate_documents,
)
from services.demo._loader import (
    LoadProgress,
    LoadReport,
    check_demo_documents,
    load_demo_documents,
)
from services.sql.demo.data import DEFAULT_SEED

DEFAULT_TENANT = "demo"


def _corpus(args: argparse.Namespace) -> DemoCorpus:
    return generate_documents(args.seed, accounts=args.accounts)


def _print_report(report: LoadReport, *, as_json: bool) -> None:
    if as_json:
        fields = {k: v for k, v in vars(report).items() if k != "outcomes"}
        print(json.dumps(fields, default=list, indent=2))
        return
    verb = "would write" if report.dry_run else "wrote"
    print(
        f"{report.documents} documents: {report.included} included, "
        f"{report.unchanged} unchanged, {report.excluded} excluded, {report.failed} failed; "
        f"{verb} {report.chunks_written if not report.dry_run else report.chunks_total} chunks "
        f"in {report.duration_s:.1f} s"
    )
    if report.redactions:
        print("redactions: " + ", ".join(f"{k}={v}" for k, v in report.redactions.items()))
    for document_id, reason in report.failures:
        print(f"failed: {document_id} ({reason})", file=sys.stderr)


def _progress(progress: LoadProgress) -> None:
    width = 30
    filled = width * progress.documents_done // max(progress.documents_total, 1)
    print(
        f"\r[{'#' * filled}{'.' * (width - filled)}] "
        f"{progress.documents_done}/{progress.documents_total} documents",
        end="" if progress.documents_done < progress.documents_total else "\n",
        file=sys.stderr,
        flush=True,
    )


def _trust() -> Trust:
    """As the gateway would: retrieval takes only mutual-TLS callers with a signed tenant,
    so this operator tool reads the certificates ``tandem run`` issued."""
    directory = tls_directory(os.environ)
    if directory is None:
        return Trust.plaintext()
    try:
        return Trust.load(directory, "gateway")
    except FileNotFoundError as exc:
        raise SystemExit(
            f"error: {exc}; `tandem run` issues the certificates on its first start "
            "(or set TANDEM_TLS_DIR to where yours are)"
        ) from None


def _load(args: argparse.Namespace) -> int:
    corpus = _corpus(args)
    report = asyncio.run(
        load_demo_documents(
            args.addr,
            args.tenant,
            documents=corpus.documents,
            on_progress=None if args.json else _progress,
            trust=_trust(),
        )
    )
    _print_report(report, as_json=args.json)
    return 1 if report.failed else 0


def _status(args: argparse.Namespace) -> int:
    corpus = _corpus(args)
    report = asyncio.run(
        check_demo_documents(args.addr, args.tenant, documents=corpus.documents, trust=_trust())
    )
    loaded = report.unchanged == report.documents
    if args.json:
        print(json.dumps({"loaded": loaded, "documents": report.documents, **report.outcomes}))
    else:
        state = "loaded" if loaded else "not loaded (or changed)"
        print(f"demo documents for tenant {args.tenant!r}: {state}")
        print(f"{report.unchanged} of {report.documents} stored unchanged")
    return 0 if loaded else 1


def _show(args: argparse.Namespace) -> int:
    corpus = _corpus(args)
    answer = compound_answer(corpus)
    summary: dict[str, Any] = {
        "seed": corpus.data.seed,
        "documents": len(corpus.documents),
        "by_kind": dict(corpus.counts),
        "characters": sum(len(d.text) for d in corpus.documents),
        "secret_documents": [d.document_id for d in corpus.documents if d.planted_secrets],
        "injection_documents": [d.document_id for d in corpus.documents if d.injections],
        "compound_question": COMPOUND_QUESTION,
        "top_accounts": [[name, str(amount)] for name, amount in answer.top],
        "mentioning": list(answer.mentioning),
        "not_mentioning": list(answer.not_mentioning),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"{summary['documents']} documents ({summary['characters']:,} characters), seed {args.seed}"
    )
    for kind, count in corpus.counts.items():
        print(f"  {kind:<16} {count}")
    print(f"\n{COMPOUND_QUESTION}")
    for name, amount in answer.top:
        mark = "mentions" if name in answer.mentioning else "does not mention"
        print(f"  {name:<24} open pipeline ${amount:>14,.2f}  {mark} a security review")
    return 0


def _write(args: argparse.Namespace) -> int:
    corpus = _corpus(args)
    out: Path = args.directory
    for doc in corpus.documents:
        path = out / doc.category / f"{doc.document_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc.text, encoding="utf-8")
    print(f"wrote {len(corpus.documents)} markdown files under {out}")
    return 0


def add_commands(demo: Any) -> None:
    """Attach ``load``, ``status``, ``show`` and ``write`` to the ``demo`` subparsers."""
    env = Env(os.environ)
    seed = env.get_int("SQL_DEMO_SEED", DEFAULT_SEED, minimum=0)
    addr = env.get_str("RETRIEVAL_ADDR", "127.0.0.1:50053")

    def common(parser: argparse.ArgumentParser, *, remote: bool) -> None:
        parser.add_argument("--seed", type=int, default=seed, help="CRM seed (SQL_DEMO_SEED)")
        parser.add_argument(
            "--accounts",
            type=int,
            default=DEFAULT_ACCOUNTS,
            help=f"accounts with a brief and call notes (default {DEFAULT_ACCOUNTS})",
        )
        parser.add_argument("--json", action="store_true", help="print JSON")
        if remote:
            parser.add_argument("--addr", default=addr, help="RetrievalService address")
            parser.add_argument("--tenant", default=DEFAULT_TENANT, help="a registered tenant")

    load = demo.add_parser("load", help="ingest the demo documents (unchanged ones are skipped)")
    common(load, remote=True)
    load.set_defaults(handler=_load)
    status = demo.add_parser("status", help="exit 0 when every demo document is loaded")
    common(status, remote=True)
    status.set_defaults(handler=_status)
    show = demo.add_parser("show", help="corpus counts and the compound question's answer")
    common(show, remote=False)
    show.set_defaults(handler=_show)
    write = demo.add_parser("write", help="write the documents as markdown files")
    common(write, remote=False)
    write.add_argument("directory", type=Path)
    write.set_defaults(handler=_write)


def main(argv: list[str] | None = None) -> int:
    """``python -m services.demo``."""
    parser = argparse.ArgumentParser(prog="python -m services.demo", description=__doc__)
    add_commands(parser.add_subparsers(dest="demo_command", required=True))
    args = parser.parse_args(argv)
    handler = args.handler
    code: int = handler(args)
    return code
