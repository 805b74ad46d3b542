"""``tandem eval retrieval``: Recall@k, MRR@k and nDCG@k of HYBRID, DENSE and SPARSE.

Reads a dataset in BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``),
ingests the corpus into a scratch tenant named after it (``eval_tenant``) through the real
services (the embedding model served over gRPC in-process, the retrieval server on the
configured Postgres), runs every query in every mode, and prints the three modes side by
side (also per query type when queries carry ``metadata.type``). The scratch tenant is
deleted afterwards. The default dataset is the golden set shipped in
``services/retrieval/eval_data``.

Several datasets (``--datasets``) share one set of servers, each in its own scratch
tenant, and end with one nDCG table of every collection next to the reference runs of a
``BASELINES.md`` found beside them (bm25s, dense, RRF computed outside the product), so a
ranking change is judged on text nobody here wrote, not only on the golden set.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import re
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
from google.protobuf import struct_pb2

from services.common import (
    Database,
    DatabaseSettings,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    create_channel,
    resolve_url,
)
from services.embedding import Embedder, EmbeddingDeps, EmbeddingSettings, create_engine
from services.embedding import create_server as create_embedding_server
from services.embedding import ready as embedding_ready
from services.retrieval import RetrievalDeps, RetrievalSettings, create_server, prepare_store
from tandem.v1 import retrieval_service_pb2 as pb
from tandem.v1 import retrieval_service_pb2_grpc as pb_grpc

DEFAULT_DATASET = Path(__file__).parents[1] / "retrieval" / "eval_data"
MODES = {
    "hybrid": pb.SEARCH_MODE_HYBRID,
    "dense": pb.SEARCH_MODE_DENSE,
    "sparse": pb.SEARCH_MODE_SPARSE,
}
_BATCH = 128


@dataclass(frozen=True)
class Dataset:
    """A BEIR dataset: documents, queries and graded relevance judgements."""

    corpus: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def read_beir(path: Path, split: str = "test") -> Dataset:
    """Load ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (judged queries only)."""
    qrels: dict[str, dict[str, int]] = {}
    with (path / "qrels" / f"{split}.tsv").open(encoding="utf-8") as table:
        for row in csv.DictReader(table, delimiter="\t"):
            grade = int(row["score"])
            if grade > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = grade
    queries = [q for q in _jsonl(path / "queries.jsonl") if q["_id"] in qrels]
    return Dataset(_jsonl(path / "corpus.jsonl"), queries, qrels)


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for position, doc in enumerate(ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Graded nDCG with gain 2^rel - 1."""
    dcg = sum(
        (2 ** relevant.get(doc, 0) - 1) / math.log2(position + 1)
        for position, doc in enumerate(ranked[:k], start=1)
    )
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**grade - 1) / math.log2(position + 1) for position, grade in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


def _documents_in_order(hits: Iterable[pb.SearchHit]) -> list[str]:
    """Chunk hits collapsed to documents, first occurrence wins."""
    seen: dict[str, None] = {}
    for hit in hits:
        seen.setdefault(hit.document_id, None)
    return list(seen)


def _document_input(doc: Mapping[str, Any]) -> pb.DocumentInput:
    """A BEIR document as an ingest request. A title-only document (half of CACM) is sent
    with its title as the text: ingest refuses an empty text, and dropping the document
    would leave its judged queries unanswerable by every mode."""
    metadata = struct_pb2.Struct()
    if isinstance(doc.get("metadata"), dict):
        metadata.update(doc["metadata"])
    if isinstance(doc.get("content"), bytes):
        # A file for the service to extract (services.bench.formats), title and all.
        return pb.DocumentInput(
            document_id=str(doc["_id"]),
            content=doc["content"],
            file_name=str(doc.get("file_name", "")),
            metadata=metadata,
        )
    title, text = str(doc.get("title", "")), str(doc.get("text", ""))
    if not text.strip():
        title, text = "", title
    return pb.DocumentInput(document_id=str(doc["_id"]), title=title, text=text, metadata=metadata)


async def _ingest(stub: pb_grpc.RetrievalServiceAsyncStub, tenant: str, corpus: list[Any]) -> int:
    failed = 0
    for start in range(0, len(corpus), _BATCH):
        request = pb.IngestDocumentsRequest(
            tenant_id=tenant, documents=[_document_input(d) for d in corpus[start : start + _BATCH]]
        )
        async for event in stub.IngestDocuments(request, timeout=3600):
            if event.HasField("summary"):
                failed += event.summary.documents_failed
    return failed


async def evaluate(
    stub: pb_grpc.RetrievalServiceAsyncStub, tenant: str, dataset: Dataset, k: int
) -> dict[str, Any]:
    """Run every query in every mode against an ingested tenant; metrics per mode and type."""
    per_query: dict[str, dict[str, dict[str, float]]] = {mode: {} for mode in MODES}
    latency_ms: dict[str, list[float]] = {mode: [] for mode in MODES}
    for query in dataset.queries:
        relevant = dataset.qrels[query["_id"]]
        for mode, value in MODES.items():
            started = time.perf_counter()
            reply = await stub.Search(
                pb.SearchRequest(tenant_id=tenant, query=query["text"], mode=value, top_k=3 * k),
                timeout=60,
            )
            latency_ms[mode].append((time.perf_counter() - started) * 1000)
            if reply.degraded:
                raise RuntimeError(f"search degraded: {reply.degradations[0].message}")
            ranked = _documents_in_order(reply.hits)
            per_query[mode][query["_id"]] = {
                "recall": recall_at_k(ranked, relevant, k),
                "mrr": mrr_at_k(ranked, relevant, k),
                "ndcg": ndcg_at_k(ranked, relevant, k),
            }
    types = sorted({str(q.get("metadata", {}).get("type", "all")) for q in dataset.queries})
    groups = {"all": [q["_id"] for q in dataset.queries]}
    if types != ["all"]:
        for kind in types:
            groups[kind] = [
                q["_id"] for q in dataset.queries if q.get("metadata", {}).get("type") == kind
            ]
    metrics = {
        group: {
            mode: {
                f"{name}@{k}": round(statistics.fmean(per_query[mode][q][name] for q in ids), 4)
                for name in ("recall", "mrr", "ndcg")
            }
            for mode in MODES
        }
        for group, ids in groups.items()
    }
    return {
        "k": k,
        "queries": len(dataset.queries),
        "documents": len(dataset.corpus),
        "metrics": metrics,
        "query_counts": {group: len(ids) for group, ids in groups.items()},
        "search_latency_p50_ms": {
            mode: round(statistics.median(values), 2) for mode, values in latency_ms.items()
        },
        "per_query_ndcg": {
            mode: {q: v["ndcg"] for q, v in values.items()} for mode, values in per_query.items()
        },
    }


async def _run(datasets: Sequence[tuple[str, Dataset]], k: int) -> dict[str, dict[str, Any]]:
    embedding_settings = EmbeddingSettings.from_env()
    settings = RetrievalSettings.from_env()
    # Test collections carry queries longer than the API's default cap (CISI: 2,083
    # characters); the eval measures ranking, so its own server admits them.
    longest = max((len(q["text"]) for _, d in datasets for q in d.queries), default=0)
    settings = replace(settings, max_query_chars=max(settings.max_query_chars, longest))
    db_settings = DatabaseSettings.from_env()
    telemetry = Telemetry(TelemetrySettings("eval-retrieval"))
    model = await asyncio.to_thread(Embedder.from_settings, embedding_settings)
    engine = create_engine(embedding_settings, model)
    embedding_server, servicer = await create_embedding_server(
        ServerSettings("embedding", port=0, grace_period_s=1.0), telemetry
    )
    await embedding_ready(embedding_server, servicer, EmbeddingDeps(engine))
    url = await asyncio.to_thread(resolve_url, db_settings)
    database = Database(url, min_size=1, max_size=4, timeout_s=db_settings.connect_timeout_s)
    await prepare_store(database, settings, embedded=db_settings.url is None)
    channel = create_channel(embedding_server.address)
    server, _ = await create_server(
        ServerSettings("retrieval", port=0, grace_period_s=1.0),
        telemetry,
        RetrievalDeps(settings, database, channel),
    )
    report: dict[str, dict[str, Any]] = {}
    try:
        async with create_channel(server.address) as client:
            stub = pb_grpc.RetrievalServiceStub(client)
            for name, dataset in datasets:
                report[name] = await _run_one(stub, url, eval_tenant(name), dataset, k)
                report[name]["model"] = model.name
        return report
    finally:
        await server.stop(0)
        await channel.close()
        await database.close()
        await embedding_server.stop(0)
        await engine.close()
        telemetry.shutdown()


async def evaluate_collections(
    datasets: Sequence[tuple[str, Dataset]], k: int = 10
) -> dict[str, dict[str, Any]]:
    """Evaluate datasets already in memory on one set of in-process servers, one report
    per name (``main`` reads them from folders). For a caller that derives a collection's
    text, such as ``services.bench.formats`` (the collection after a round trip through
    PDF, DOCX, HTML), to measure it beside the original by exactly this harness."""
    return await _run(datasets, k)


def eval_tenant(name: str) -> str:
    """The scratch tenant a dataset is evaluated in, named after the dataset.

    Not random: chunk ids derive from the tenant (``chunk_id_for``), and chunks that tie
    on their fused score are ordered by id, so a tenant drawn at random ranked tied chunks
    differently on every run and moved HYBRID's nDCG in the third decimal between runs of
    the same code. Named, two runs of one code give the same numbers, and a ranking change
    is judged on its own effect."""
    slug = re.sub(r"[^a-z0-9_]+", "-", name.lower()).strip("-_") or "dataset"
    return f"eval-{slug}"[:63]


async def _run_one(
    stub: pb_grpc.RetrievalServiceAsyncStub, url: str, tenant: str, dataset: Dataset, k: int
) -> dict[str, Any]:
    """Ingest one dataset into its scratch tenant, evaluate it, delete the tenant.

    The tenant's name is the same on every run, so the run holds an advisory lock on it
    (a second eval of the dataset on the same database waits) and first clears what an
    interrupted run left behind."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as lock:
        await lock.execute("SELECT pg_advisory_lock(hashtext(%s))", (tenant,))
        await lock.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant,))
        await lock.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (tenant,))
        try:
            started = time.perf_counter()
            failed = await _ingest(stub, tenant, dataset.corpus)
            ingest_s = time.perf_counter() - started
            results = await evaluate(stub, tenant, dataset, k)
            results["ingest_seconds"] = round(ingest_s, 2)
            results["documents_failed"] = failed
            return results
        finally:
            await lock.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant,))


_BASELINE_HEADING = re.compile(r"^##\s+(\S+)")
_BASELINE_ROW = re.compile(r"^\|\s*(bm25s|dense|RRF)\b[^|]*\|\s*\**([0-9.]+)\**\s*\|")


def read_baselines(path: Path) -> dict[str, dict[str, float]]:
    """nDCG of the reference runs per collection from a ``BASELINES.md``: under each
    ``## NAME`` heading, the first figure of the ``bm25s``, ``dense …`` and ``RRF …`` rows
    (keys ``bm25s``, ``dense``, ``rrf``; collections keyed by the lower-cased NAME)."""
    found: dict[str, dict[str, float]] = {}
    collection: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = _BASELINE_HEADING.match(line)
        if heading:
            collection = heading.group(1).lower()
            continue
        row = _BASELINE_ROW.match(line)
        if row and collection is not None:
            found.setdefault(collection, {})[row.group(1).lower()] = float(row.group(2))
    return found


def render_collections(
    reports: Mapping[str, Mapping[str, Any]], baselines: Mapping[str, Mapping[str, float]]
) -> str:
    """One row per collection: the reference runs' nDCG, the product's three modes, and
    HYBRID against the RRF reference and SPARSE against bm25s (blank without baselines)."""
    k = next(iter(reports.values()))["k"] if reports else 10
    header = (
        f"{'collection':<12} {'docs':>6} {'qs':>4} | {'bm25s':>6} {'dense':>6} {'RRF':>6} | "
        f"{'SPARSE':>6} {'DENSE':>6} {'HYBRID':>6} | {'H/RRF':>6} {'S/bm25s':>7}"
    )
    lines = [f"nDCG@{k} by collection (bm25s, dense, RRF: reference runs, BASELINES.md)", header]

    def cell(value: float | None, width: int = 6) -> str:
        return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"

    for name, report in reports.items():
        ours = {m: report["metrics"]["all"][m][f"ndcg@{k}"] for m in MODES}
        ref = baselines.get(name, {})
        ratio_h = ours["hybrid"] / ref["rrf"] if ref.get("rrf") else None
        ratio_s = ours["sparse"] / ref["bm25s"] if ref.get("bm25s") else None
        lines.append(
            f"{name:<12} {report['documents']:>6} {report['queries']:>4} | "
            f"{cell(ref.get('bm25s'))} {cell(ref.get('dense'))} {cell(ref.get('rrf'))} | "
            f"{cell(ours['sparse'])} {cell(ours['dense'])} {cell(ours['hybrid'])} | "
            f"{cell(ratio_h)} {cell(ratio_s, 7)}"
        )
    return "\n".join(lines)


def render(results: Mapping[str, Any]) -> str:
    """The side-by-side table: one block per query group, one row per mode."""
    k = results["k"]
    lines = [
        f"retrieval eval — {results['queries']} queries over {results['documents']} documents "
        f"(model {results.get('model', '?')})",
        "",
        f"{'queries':<12} {'mode':<7} {f'Recall@{k}':>10} {f'MRR@{k}':>8} {f'nDCG@{k}':>8}",
    ]
    for group, by_mode in results["metrics"].items():
        label = f"{group} ({results['query_counts'][group]})"
        for mode, values in by_mode.items():
            lines.append(
                f"{label:<12} {mode:<7} {values[f'recall@{k}']:>10.3f} "
                f"{values[f'mrr@{k}']:>8.3f} {values[f'ndcg@{k}']:>8.3f}"
            )
            label = ""
    latency = results["search_latency_p50_ms"]
    lines.append("")
    lines.append(
        "search p50 (gRPC, embed included): "
        + ", ".join(f"{mode} {value:.1f} ms" for mode, value in latency.items())
    )
    return "\n".join(lines)


def main(
    dataset: Path | None = None,
    out: Path = Path("bench-results/eval-retrieval.json"),
    k: int = 10,
    *,
    datasets: Sequence[Path] = (),
    baselines: Path | None = None,
) -> dict[str, Any]:
    """Run the eval on ``dataset`` (BEIR layout; default: the bundled golden set), print the
    table, write JSON to ``out``. With ``datasets``, run each of them, print each table and
    then the side-by-side nDCG table against ``baselines`` (default: any ``BASELINES.md``
    beside the datasets); the JSON then holds one report per collection."""
    if not datasets:
        data = read_beir(dataset or DEFAULT_DATASET)
        results = asyncio.run(_run([("dataset", data)], k))["dataset"]
        print(render(results))
        _write(out, results)
        return results
    named = [(_label(path), read_beir(path)) for path in datasets]
    reports = asyncio.run(_run(named, k))
    files = [baselines] if baselines else [p.resolve().parent / "BASELINES.md" for p in datasets]
    reference: dict[str, dict[str, float]] = {}
    for file in dict.fromkeys(files):
        if file.is_file():
            reference.update(read_baselines(file))
    for name, report in reports.items():
        print(f"== {name}")
        print(render(report))
        print()
    print(render_collections(reports, reference))
    combined: dict[str, Any] = {"collections": reports, "baselines": reference}
    _write(out, combined)
    return combined


def _label(path: Path) -> str:
    """A dataset's name in the tables: its folder's, or "golden" for the bundled set."""
    return "golden" if path.resolve() == DEFAULT_DATASET.resolve() else path.resolve().name


def _write(out: Path, results: Mapping[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
