"""The document formats Tandem ingests, declared once.

The retrieval service's extractor recognises these (by content; the suffixes only break
ties between text formats), and the CLI walks folders for these suffixes and prints
this list in ``tandem ingest --help`` and in its "unsupported type" message: one table,
so the help, the README and what the server really reads cannot drift apart (they did:
the help said "markdown and text" long after PDF and Office files were served).
Kept free of imports so the CLI can read it without loading the extractors.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DocumentFormat:
    """One format: the name a report gives it, how a person calls it, its file suffixes,
    and whether the server extracts it from the file's bytes (else the client sends the
    decoded text)."""

    name: str
    label: str
    suffixes: tuple[str, ...]
    extracted: bool = True


DOCUMENT_FORMATS: tuple[DocumentFormat, ...] = (
    DocumentFormat("PDF", "PDF (scans read by OCR)", (".pdf",)),
    DocumentFormat("DOCX", "Word (.docx)", (".docx",)),
    DocumentFormat("PPTX", "PowerPoint (.pptx)", (".pptx",)),
    DocumentFormat("XLSX", "Excel (.xlsx)", (".xlsx",)),
    DocumentFormat("CSV", "CSV/TSV", (".csv", ".tsv")),
    DocumentFormat("HTML", "HTML", (".html", ".htm", ".xhtml")),
    DocumentFormat("PNG", "PNG", (".png",)),
    DocumentFormat("JPEG", "JPEG", (".jpg", ".jpeg")),
    DocumentFormat("TIFF", "TIFF images (read by OCR)", (".tif", ".tiff")),
    DocumentFormat("MARKDOWN", "markdown", (".md", ".markdown"), extracted=False),
    DocumentFormat("TEXT", "text", (".txt", ".text"), extracted=False),
)


def suffixes(*names: str) -> frozenset[str]:
    """The suffixes of the formats named (all formats when none is)."""
    return frozenset(
        s for f in DOCUMENT_FORMATS if not names or f.name in names for s in f.suffixes
    )


def extracted_suffixes() -> frozenset[str]:
    """Files a client sends as bytes for the server to extract."""
    return frozenset(s for f in DOCUMENT_FORMATS if f.extracted for s in f.suffixes)


def formats_phrase() -> str:
    """ "PDF (scans read by OCR), Word (.docx), …, markdown and text": for help texts."""
    labels = [f.label for f in DOCUMENT_FORMATS]
    return ", ".join(labels[:-1]) + " and " + labels[-1]
