"""Plain typed objects the retrieval logic works with; the servicer maps them to protobuf.

Enum values equal the protobuf numbers and names equal the protobuf value names without
their prefix, so conversion is by value in both directions.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.common import FieldViolation

JsonObject = dict[str, Any]


class RedactionKind(enum.IntEnum):
    """A kind of sensitive content; secrets are always redacted, personal data per policy."""

    HIGH_ENTROPY_TOKEN = 1
    API_KEY = 2
    PRIVATE_KEY = 3
    LABELED_SECRET = 4
    CONNECTION_STRING = 5
    EMAIL_ADDRESS = 20
    PHONE_NUMBER = 21
    CARD_NUMBER = 22
    NATIONAL_ID = 23
    BANK_ACCOUNT = 24
    IP_ADDRESS = 25


SECRET_KINDS = frozenset(k for k in RedactionKind if k < 20)
PERSONAL_KINDS = frozenset(k for k in RedactionKind if k >= 20)


class ContentType(enum.IntEnum):
    """The format of a document's text (UNSPECIFIED is read as PLAIN_TEXT)."""

    PLAIN_TEXT = 1
    MARKDOWN = 2


class SearchMode(enum.IntEnum):
    """The retrieval method (UNSPECIFIED is read as HYBRID)."""

    HYBRID = 1
    DENSE = 2
    SPARSE = 3


class Outcome(enum.IntEnum):
    """What happened to one document of an ingest."""

    INCLUDED = 1
    EXCLUDED = 2
    UNCHANGED = 3
    FAILED = 4


class ExclusionReason(enum.IntEnum):
    """Why a document was deliberately left out."""

    DUPLICATE_IN_BATCH = 1
    EMPTY_AFTER_REDACTION = 2
    NO_CHUNKS = 3


class IngestStage(enum.IntEnum):
    """The stage an ingest is in."""

    PREPARING = 1
    EMBEDDING = 2
    WRITING = 3


class DegradationReason(enum.IntEnum):
    """Why a search response is degraded (values of tandem.v1.DegradationReason)."""

    DATABASE_UNAVAILABLE = 1
    EMBEDDING_UNAVAILABLE = 2
    RERANKER_UNAVAILABLE = 3


@dataclass(frozen=True)
class DocumentAcl:
    """Who inside the tenant may read a document: these principals and the members of
    these groups. ``None`` in place of an ACL (or both lists empty) is the whole tenant.

    Sorted and without duplicates (``of``), so equal rights compare, fingerprint and
    store the same way."""

    principals: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @classmethod
    def of(cls, principals: Iterable[str] = (), groups: Iterable[str] = ()) -> DocumentAcl | None:
        """The ACL, or None when it names nobody (the whole tenant)."""
        acl = cls(tuple(sorted(set(principals))), tuple(sorted(set(groups))))
        return acl if acl.principals or acl.groups else None

    def allows(self, principal_id: str, groups: Iterable[str]) -> bool:
        return principal_id in self.principals or not set(self.groups).isdisjoint(groups)


@dataclass(frozen=True)
class Extraction:
    """What reading an uploaded file found: the type it was read as, the encoding of a
    text format, and what was left out or changed (for the ingest report)."""

    detected_type: str
    encoding: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocumentInput:
    """One document offered for ingest, as received (enum fields still raw numbers)."""

    document_id: str = ""
    title: str = ""
    uri: str = ""
    category: str = ""
    metadata: JsonObject | None = None
    text: str = ""
    content_type: int = 0
    # The raw file to extract on the server (instead of ``text``) and its name.
    content: bytes = b""
    file_name: str = ""
    # Set once ``content`` has been extracted into ``text``.
    extraction: Extraction | None = None
    # Who may read it, as sent (validated per document); empty = the whole tenant.
    acl_principals: tuple[str, ...] = ()
    acl_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class IngestRequest:
    """A batch to ingest; ``keep_kinds`` is None when the caller sent no policy."""

    tenant_id: str
    documents: tuple[DocumentInput, ...]
    dry_run: bool = False
    keep_kinds: tuple[int, ...] | None = None


@dataclass(frozen=True)
class DocumentError:
    """Why one document failed, shaped like a google.rpc.Status."""

    code: int
    message: str
    reason: str
    field_violations: tuple[FieldViolation, ...] = ()


@dataclass(frozen=True)
class RedactionFinding:
    """One span a dry run would redact: its kind, where it is and what it looks like (a
    personal value as written, since it is the caller's own; a secret only by its length,
    so a dry run pasted into a ticket leaks nothing)."""

    kind: RedactionKind
    field: str
    line: int
    preview: str


@dataclass(frozen=True)
class DocumentResult:
    """The manifest entry for one document."""

    index: int
    document_id: str
    uri: str
    outcome: Outcome
    exclusion_reason: ExclusionReason | None = None
    error: DocumentError | None = None
    replaced: bool = False
    chunk_count: int = 0
    char_count: int = 0
    redactions: Mapping[RedactionKind, int] = field(default_factory=dict)
    content_sha256: str = ""
    extraction: Extraction | None = None
    # Dry runs only: the first spans that would be redacted, in document order.
    redaction_findings: tuple[RedactionFinding, ...] = ()


@dataclass(frozen=True)
class IngestProgress:
    """How far an ingest has come."""

    stage: IngestStage
    documents_done: int
    documents_total: int
    chunks_embedded: int
    chunks_total: int
    elapsed_s: float


@dataclass(frozen=True)
class IngestSummary:
    """The final manifest of an ingest call."""

    dry_run: bool
    documents: tuple[DocumentResult, ...]
    chunks_written: int
    model_name: str
    duration_s: float

    def count(self, outcome: Outcome) -> int:
        return sum(1 for d in self.documents if d.outcome is outcome)

    @property
    def chunks_total(self) -> int:
        return sum(d.chunk_count for d in self.documents if d.outcome is Outcome.INCLUDED)

    @property
    def redactions(self) -> dict[RedactionKind, int]:
        totals: dict[RedactionKind, int] = {}
        for doc in self.documents:
            for kind, count in doc.redactions.items():
                totals[kind] = totals.get(kind, 0) + count
        return dict(sorted(totals.items()))


IngestEvent = IngestProgress | DocumentResult | IngestSummary


@dataclass(frozen=True)
class StoredDocument:
    """A stored document's record (its text lives in its chunks)."""

    document_id: str
    title: str
    uri: str
    category: str
    metadata: JsonObject
    content_type: ContentType
    content_sha256: str
    chunk_count: int
    char_count: int
    model_name: str
    redactions: Mapping[RedactionKind, int]
    create_time: datetime
    update_time: datetime
    # None: the whole tenant may read it.
    acl: DocumentAcl | None = None
    # ISO 639-1 code of the language it is written in; "" when not told.
    language: str = ""


@dataclass(frozen=True)
class StoredChunk:
    """One stored piece of a document."""

    chunk_id: str
    document_id: str
    ordinal: int
    section: str
    text: str


@dataclass(frozen=True)
class DocumentPage:
    """One page of a listing."""

    documents: tuple[StoredDocument, ...]
    next_page_token: str


@dataclass(frozen=True)
class SearchQuery:
    """A search as received (mode still a raw number; zeros mean defaults)."""

    tenant_id: str
    query: str
    mode: int = 0
    top_k: int = 0
    categories: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    metadata: JsonObject | None = None
    candidate_depth: int = 0
    ef_search: int = 0
    min_score: float = 0.0
    rerank: bool = False


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with its scores and ranks (ranks 1-based, 0 = not a candidate)."""

    chunk_id: str
    document_id: str
    title: str
    uri: str
    category: str
    section: str
    text: str
    ordinal: int
    metadata: JsonObject
    score: float
    fused_score: float = 0.0
    dense_rank: int = 0
    sparse_rank: int = 0
    dense_score: float = 0.0
    sparse_score: float = 0.0
    rerank_score: float | None = None


@dataclass(frozen=True)
class Degradation:
    """One cause of a degraded response; the message holds no private data."""

    reason: DegradationReason
    component: str
    message: str


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, what degraded, and the stage timings in seconds."""

    hits: tuple[Hit, ...]
    mode: SearchMode
    model_name: str = ""
    degradations: tuple[Degradation, ...] = ()
    reranked: bool = False
    timings: Mapping[str, float] = field(default_factory=dict)

    @property
    def degraded(self) -> bool:
        return bool(self.degradations)
