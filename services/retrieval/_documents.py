"""Get, list and delete stored documents; page tokens are keyset cursors bound to a query."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from services.common import InvalidArgument, NotFound
from services.retrieval._acl import LOCKS_OUT_CALLER, readable_by_caller
from services.retrieval._repository import RetrievalRepository
from services.retrieval._types import DocumentAcl, DocumentPage, StoredChunk, StoredDocument
from services.retrieval._validation import acl_violations, check_document_id, check_tenant_id

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TOKEN_VERSION = 1


def _not_found(document_id: str) -> NotFound:
    # The one reply for a document that is missing and for one the caller's principal
    # may not read (row-level security hides it): same status, reason, message, metadata.
    return NotFound(
        "document not found for this tenant",
        reason="DOCUMENT_NOT_FOUND",
        metadata={"document_id": document_id},
    )


def _query_key(tenant_id: str, categories: Sequence[str]) -> str:
    """Binds a token to the tenant and filter it was issued for."""
    material = "\x1f".join([tenant_id, *sorted(set(categories))])
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def encode_page_token(
    tenant_id: str, categories: Sequence[str], update_time: datetime, document_id: str
) -> str:
    micros = (update_time - _EPOCH) // timedelta(microseconds=1)
    payload = {"v": _TOKEN_VERSION, "q": _query_key(tenant_id, categories), "t": micros}
    payload["d"] = document_id
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(
    token: str, tenant_id: str, categories: Sequence[str]
) -> tuple[datetime, str]:
    """The cursor in ``token``; INVALID_ARGUMENT (INVALID_PAGE_TOKEN) when it is malformed
    or was issued for another tenant or filter."""
    invalid = InvalidArgument.field(
        "page_token",
        "is malformed or was issued for a different tenant or filter",
        reason="INVALID_PAGE_TOKEN",
    )
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise invalid from None
    if not isinstance(payload, dict) or payload.get("v") != _TOKEN_VERSION:
        raise invalid
    micros, document_id = payload.get("t"), payload.get("d")
    if payload.get("q") != _query_key(tenant_id, categories):
        raise invalid
    if not isinstance(micros, int) or not isinstance(document_id, str) or not document_id:
        raise invalid
    try:
        return _EPOCH + timedelta(microseconds=micros), document_id
    except OverflowError:
        raise invalid from None


class DocumentCatalog:
    """GetDocument, ListDocuments, DeleteDocument and UpdateDocumentAcl over the
    repository; what the request's principal may see is the database's to decide."""

    def __init__(self, repository: RetrievalRepository) -> None:
        self._repository = repository

    async def get(
        self, tenant_id: str, document_id: str, *, include_chunks: bool
    ) -> tuple[StoredDocument, list[StoredChunk]]:
        check_tenant_id(tenant_id)
        check_document_id(document_id)
        found = await self._repository.get_document(
            tenant_id, document_id, include_chunks=include_chunks
        )
        if found is None:
            raise _not_found(document_id)
        return found

    async def delete(
        self, tenant_id: str, document_id: str, *, allow_missing: bool
    ) -> tuple[bool, int]:
        """(deleted, chunks deleted); NOT_FOUND unless ``allow_missing``."""
        check_tenant_id(tenant_id)
        check_document_id(document_id)
        deleted, chunks = await self._repository.delete_document(tenant_id, document_id)
        if not deleted and not allow_missing:
            raise _not_found(document_id)
        return deleted, chunks

    async def list(
        self, tenant_id: str, *, page_size: int, page_token: str, categories: Sequence[str]
    ) -> DocumentPage:
        check_tenant_id(tenant_id)
        if page_size < 0:
            raise InvalidArgument.field("page_size", "must not be negative")
        size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        after = decode_page_token(page_token, tenant_id, categories) if page_token else None
        rows = await self._repository.list_documents(
            tenant_id, categories=categories, after=after, limit=size + 1
        )
        page = rows[:size]
        token = ""
        if len(rows) > size:
            last = page[-1]
            token = encode_page_token(tenant_id, categories, last.update_time, last.document_id)
        return DocumentPage(tuple(page), token)

    async def update_acl(
        self,
        tenant_id: str,
        document_id: str,
        principals: Sequence[str],
        groups: Sequence[str],
        *,
        allow_missing: bool = False,
    ) -> tuple[DocumentAcl | None, int | None]:
        """(the ACL now in force, chunks covered — None when nothing was updated);
        NOT_FOUND when missing or unreadable, unless ``allow_missing``."""
        check_tenant_id(tenant_id)
        check_document_id(document_id)
        violations = acl_violations("acl", principals, groups)
        if violations:
            raise InvalidArgument(violations)
        acl = DocumentAcl.of(principals, groups)
        if not readable_by_caller(acl):
            raise InvalidArgument.field("acl", LOCKS_OUT_CALLER)
        chunks = await self._repository.update_acl(tenant_id, document_id, acl)
        if chunks is None and not allow_missing:
            raise _not_found(document_id)
        return acl, chunks
