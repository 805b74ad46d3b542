"""Loads the demo documents through the RetrievalService gRPC API.

Loading is idempotent because ingest is: an unchanged document (same content hash, same
model) comes back UNCHANGED and nothing is written, so a second load writes no chunk.
Whether the corpus is already there is answered by a dry run, which compares content
hashes with the stored copies and neither embeds nor writes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from google.protobuf import struct_pb2

from services.common import Trust, create_channel
from services.demo._corpus import DemoDocument, generate_documents
from tandem.v1 import retrieval_service_pb2 as pb
from tandem.v1 import retrieval_service_pb2_grpc as pb_grpc

DEFAULT_BATCH_SIZE = 64
DEFAULT_TIMEOUT_S = 300.0

if TYPE_CHECKING:
    # The async stub type exists only in the generated type stubs.
    Target: TypeAlias = str | pb_grpc.RetrievalServiceAsyncStub


@dataclass(frozen=True)
class LoadProgress:
    """Where a load stands: documents finished so far out of the total."""

    documents_done: int
    documents_total: int
    chunks_written: int


@dataclass(frozen=True)
class LoadReport:
    """What one load (or dry run) did, summed over its batches."""

    documents: int
    included: int
    unchanged: int
    excluded: int
    failed: int
    chunks_written: int
    chunks_total: int
    redactions: dict[str, int]
    failures: tuple[tuple[str, str], ...]
    model_name: str
    duration_s: float
    dry_run: bool = False
    outcomes: dict[str, str] = field(default_factory=dict)

    @property
    def wrote_nothing(self) -> bool:
        """True when no document was (or would be) written."""
        return self.included == 0 and self.chunks_written == 0


def to_document_input(doc: DemoDocument) -> pb.DocumentInput:
    """The retrieval contract's form of a demo document (markdown, with metadata)."""
    metadata = struct_pb2.Struct()
    metadata.update(dict(doc.metadata))
    return pb.DocumentInput(
        document_id=doc.document_id,
        title=doc.title,
        uri=doc.uri,
        category=doc.category,
        metadata=metadata,
        text=doc.text,
        content_type=pb.CONTENT_TYPE_MARKDOWN,
    )


@asynccontextmanager
async def _stub(
    target: Target, trust: Trust | None
) -> AsyncIterator[pb_grpc.RetrievalServiceAsyncStub]:
    if not isinstance(target, str):
        yield target
        return
    channel = create_channel(target, trust=trust, peer="retrieval")
    try:
        yield pb_grpc.RetrievalServiceStub(channel)
    finally:
        await channel.close()


async def _ingest(
    target: Target,
    tenant: str,
    documents: Sequence[DemoDocument] | None,
    *,
    dry_run: bool,
    batch_size: int,
    timeout_s: float,
    on_progress: Callable[[LoadProgress], None] | None,
    trust: Trust | None,
) -> LoadReport:
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    docs = list(documents if documents is not None else generate_documents().documents)
    started = time.perf_counter()
    outcomes: dict[str, str] = {}
    redactions: Counter[str] = Counter()
    failures: list[tuple[str, str]] = []
    totals: Counter[str] = Counter()
    model_name = ""
    chunks_written = 0
    if trust is not None:
        # Retrieval takes only the tenant the gateway's key signed (mutual TLS).
        trust.sign_for(tenant)
    async with _stub(target, trust) as stub:
        for start in range(0, len(docs), batch_size):
            batch = docs[start : start + batch_size]
            request = pb.IngestDocumentsRequest(
                tenant_id=tenant,
                documents=[to_document_input(d) for d in batch],
                dry_run=dry_run,
            )
            summary: pb.IngestSummary | None = None
            finished = 0
            async for event in stub.IngestDocuments(request, timeout=timeout_s):
                if event.HasField("summary"):
                    summary = event.summary
                elif event.HasField("document_finished") and on_progress is not None:
                    finished += 1
                    on_progress(LoadProgress(start + finished, len(docs), chunks_written))
            if summary is None:
                raise RuntimeError("ingest stream ended without a summary")
            model_name = summary.model_name or model_name
            totals["included"] += summary.documents_included
            totals["unchanged"] += summary.documents_unchanged
            totals["excluded"] += summary.documents_excluded
            totals["failed"] += summary.documents_failed
            totals["chunks_written"] += summary.chunks_written
            totals["chunks_total"] += summary.chunks_total
            for count in summary.redactions:
                redactions[pb.RedactionKind.Name(count.kind).removeprefix("REDACTION_KIND_")] += (
                    count.count
                )
            for result in summary.documents:
                outcome = pb.DocumentOutcome.Name(result.outcome).removeprefix("DOCUMENT_OUTCOME_")
                outcomes[result.document_id] = outcome
                if result.outcome == pb.DOCUMENT_OUTCOME_FAILED:
                    failures.append((result.document_id, result.error.reason or "FAILED"))
            chunks_written = totals["chunks_written"]
            if on_progress is not None:
                on_progress(LoadProgress(start + len(batch), len(docs), chunks_written))
    return LoadReport(
        documents=len(docs),
        included=totals["included"],
        unchanged=totals["unchanged"],
        excluded=totals["excluded"],
        failed=totals["failed"],
        chunks_written=totals["chunks_written"],
        chunks_total=totals["chunks_total"],
        redactions=dict(sorted(redactions.items())),
        failures=tuple(failures),
        model_name=model_name,
        duration_s=time.perf_counter() - started,
        dry_run=dry_run,
        outcomes=outcomes,
    )


async def load_demo_documents(
    target: Target,
    tenant: str,
    *,
    documents: Sequence[DemoDocument] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: Callable[[LoadProgress], None] | None = None,
    trust: Trust | None = None,
) -> LoadReport:
    """Ingest the demo documents (the default corpus unless ``documents`` is given) for
    ``tenant`` through a RetrievalService stub or address; unchanged documents are skipped
    by the service, so a repeated load writes nothing. The tenant must be registered."""
    return await _ingest(
        target,
        tenant,
        documents,
        dry_run=False,
        batch_size=batch_size,
        timeout_s=timeout_s,
        on_progress=on_progress,
        trust=trust,
    )


async def check_demo_documents(
    target: Target,
    tenant: str,
    *,
    documents: Sequence[DemoDocument] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    trust: Trust | None = None,
) -> LoadReport:
    """A dry-run load: which documents are stored unchanged and which would be written."""
    return await _ingest(
        target,
        tenant,
        documents,
        dry_run=True,
        batch_size=batch_size,
        timeout_s=timeout_s,
        on_progress=None,
        trust=trust,
    )


async def demo_documents_loaded(
    target: Target,
    tenant: str,
    *,
    documents: Sequence[DemoDocument] | None = None,
    trust: Trust | None = None,
) -> bool:
    """True when every demo document is already stored, unchanged, for ``tenant``."""
    report = await check_demo_documents(target, tenant, documents=documents, trust=trust)
    return report.unchanged == report.documents
