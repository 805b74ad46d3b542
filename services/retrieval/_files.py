"""Ingest step zero for uploaded files: the bytes of a document become its text.

A document may arrive as ``content`` (a PDF, a deck, a workbook, a web page…) instead of
``text``; extraction (``services.retrieval.extract``) runs here, in a worker process of
the ``ExtractionPool`` under a deadline and the tenant's share of the workers, and the
document continues through the pipeline as the markdown it renders
to, one heading per page, slide, sheet or section. A file that yields no text fails as
that one document, with the extractor's reason and message: the batch goes on.
"""

from __future__ import annotations

import dataclasses

import grpc
from opentelemetry import trace

from services.common import FieldViolation
from services.common.spans import CHARS, node_span
from services.retrieval._extract_pool import ExtractionPool, ExtractionTimeout
from services.retrieval._settings import RetrievalSettings
from services.retrieval._types import ContentType, DocumentError, DocumentInput, Extraction
from services.retrieval.extract import (
    ExtractLimits,
    Kind,
    OcrOptions,
    Unextractable,
    as_markdown,
)

_INVALID = grpc.StatusCode.INVALID_ARGUMENT.value[0]
_DEADLINE = grpc.StatusCode.DEADLINE_EXCEEDED.value[0]
_OCR_SHARE = 0.85


def _error(code: int, reason: str, field: str, message: str) -> DocumentError:
    return DocumentError(code, message, reason, (FieldViolation(field, message),))


def _stem(file_name: str) -> str:
    """A title from a file name when the file holds none ("q3-report.pdf" → "q3 report")."""
    stem = file_name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return stem.replace("_", " ").replace("-", " ").strip()


def ocr_options(settings: RetrievalSettings) -> OcrOptions:
    """OCR within the extraction deadline: it may use 85% of it, so a long scan keeps
    the pages read in time (the rest reported) instead of being killed whole."""
    return OcrOptions(
        enabled=settings.ocr,
        languages=settings.ocr_languages,
        page_timeout_s=settings.ocr_page_timeout_s,
        memory_mb=settings.ocr_memory_mb,
        min_confidence=settings.ocr_min_confidence,
        max_pages=settings.ocr_max_pages,
        budget_s=settings.extract_timeout_s * _OCR_SHARE,
    )


async def extract_content(
    index: int,
    doc: DocumentInput,
    *,
    tenant_id: str,
    pool: ExtractionPool,
    settings: RetrievalSettings,
    tracer: trace.Tracer,
) -> DocumentInput | DocumentError:
    """``doc`` with its ``content`` extracted into ``text`` (unchanged without content),
    or why it cannot be; one span per file with its type, size and outcome (never its
    name or text)."""
    if not doc.content:
        return doc
    with node_span(tracer, "retrieval.ingest.extract", {"tandem.bytes": len(doc.content)}) as span:
        result = await _extract(index, doc, tenant_id, pool, settings)
        if isinstance(result, DocumentError):
            span.set_attribute("tandem.extract.refused", result.reason)
        elif result.extraction is not None:
            span.set_attributes(
                {CHARS: len(result.text), "tandem.file.kind": result.extraction.detected_type}
            )
        return result


async def _extract(
    index: int,
    doc: DocumentInput,
    tenant_id: str,
    pool: ExtractionPool,
    settings: RetrievalSettings,
) -> DocumentInput | DocumentError:
    prefix = f"documents[{index}]"
    if doc.text:
        return _error(_INVALID, "INVALID_ARGUMENT", prefix, "set one of text and content, not both")
    limits = ExtractLimits(
        max_input_bytes=settings.max_file_bytes,
        max_chars=settings.max_document_chars,
        ocr=ocr_options(settings),
    )
    try:
        # Past the deadline the worker is killed before the document's error is reported.
        extracted = await pool.extract(
            tenant_id, doc.content, doc.file_name or doc.uri, limits, settings.extract_timeout_s
        )
    except Unextractable as exc:
        return _error(_INVALID, exc.reason.value, f"{prefix}.content", exc.message)
    except ExtractionTimeout:
        return _error(
            _DEADLINE,
            "EXTRACTION_TIMEOUT",
            f"{prefix}.content",
            f"extracting the text took longer than {settings.extract_timeout_s:g} s",
        )
    content_type = ContentType.PLAIN_TEXT if extracted.kind is Kind.TEXT else ContentType.MARKDOWN
    return dataclasses.replace(
        doc,
        text=as_markdown(extracted),
        content=b"",
        content_type=int(content_type),
        title=doc.title or extracted.title or _stem(doc.file_name),
        extraction=Extraction(
            extracted.kind.value, extracted.encoding or "", tuple(extracted.notes)
        ),
    )
