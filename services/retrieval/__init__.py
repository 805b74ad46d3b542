"""Retrieval service: redacting ingest and hybrid (pgvector + full-text, RRF) search."""

from __future__ import annotations

from services.retrieval._chunking import Chunk, chunk_text, embedding_text, normalise
from services.retrieval._documents import DocumentCatalog
from services.retrieval._embedding_client import EmbedderInfo, EmbeddingClient, EmbeddingError
from services.retrieval._extract_pool import ExtractionPool, ExtractionTimeout
from services.retrieval._ingest import Ingestor, derive_document_id
from services.retrieval._redact import (
    AllowList,
    Redacted,
    RedactionPolicy,
    Redactor,
    looks_like_secret_token,
)
from services.retrieval._repository import RetrievalRepository, SearchPlan, migrations
from services.retrieval._search import (
    FastembedReranker,
    Reranker,
    Searcher,
    blend,
    rerank_hits,
    rrf_score,
    search_plan,
)
from services.retrieval._server import (
    RetrievalDeps,
    create_server,
    open_database,
    prepare_store,
    ready,
)
from services.retrieval._settings import DEFAULT_PORT, RetrievalSettings, cpu_flags
from services.retrieval._types import (
    PERSONAL_KINDS,
    SECRET_KINDS,
    ContentType,
    Degradation,
    DegradationReason,
    DocumentAcl,
    DocumentInput,
    DocumentResult,
    ExclusionReason,
    Hit,
    IngestProgress,
    IngestRequest,
    IngestStage,
    IngestSummary,
    Outcome,
    RedactionKind,
    SearchMode,
    SearchQuery,
    SearchResult,
)

__all__ = [
    "DEFAULT_PORT",
    "PERSONAL_KINDS",
    "SECRET_KINDS",
    "AllowList",
    "Chunk",
    "ContentType",
    "Degradation",
    "DegradationReason",
    "DocumentAcl",
    "DocumentCatalog",
    "DocumentInput",
    "DocumentResult",
    "EmbedderInfo",
    "EmbeddingClient",
    "EmbeddingError",
    "ExclusionReason",
    "ExtractionPool",
    "ExtractionTimeout",
    "FastembedReranker",
    "Hit",
    "IngestProgress",
    "IngestRequest",
    "IngestStage",
    "IngestSummary",
    "Ingestor",
    "Outcome",
    "Redacted",
    "RedactionKind",
    "RedactionPolicy",
    "Redactor",
    "Reranker",
    "RetrievalDeps",
    "RetrievalRepository",
    "RetrievalSettings",
    "SearchMode",
    "SearchPlan",
    "SearchQuery",
    "SearchResult",
    "Searcher",
    "blend",
    "chunk_text",
    "cpu_flags",
    "create_server",
    "derive_document_id",
    "embedding_text",
    "looks_like_secret_token",
    "migrations",
    "normalise",
    "open_database",
    "prepare_store",
    "ready",
    "rerank_hits",
    "rrf_score",
    "search_plan",
]
