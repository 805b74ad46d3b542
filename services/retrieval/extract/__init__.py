"""Server-side text extraction: the bytes of one uploaded file to sectioned text.

``extract(data, name)`` recognises PDF, DOCX, PPTX, XLSX, CSV, HTML, markdown, plain
text and PNG, JPEG and TIFF images by content (the name only breaks ties), and returns
an ``Extracted``: a title, the text in ``Section``s each with a locator a citation can
print ("page 3", "slide 4", "sheet Orders", "section Refunds"), the encoding of text
formats, and notes on anything left out. Files it cannot turn into text raise
``Unextractable`` with a ``Reason`` code (image-only PDF, encrypted, corrupt, over a
limit, unsupported type, undecodable, empty) and a message that names the type or limit
involved. Limits (input size, extracted characters, rows per sheet, ZIP expansion) are
in ``ExtractLimits``; how scanned pages and images are read by OCR (Tesseract) in its
``OcrOptions``.

``as_markdown`` renders an ``Extracted`` as the markdown the ingest pipeline chunks, one
heading per section labelled with its locator. Synchronous and CPU-bound by design: the
ingest runs it in a worker process under a deadline (``services.retrieval``'s
extraction pool).
"""

from __future__ import annotations

from services.retrieval.extract._extract import extract
from services.retrieval.extract._limits import (
    Extracted,
    ExtractLimits,
    Kind,
    OcrOptions,
    Reason,
    Section,
    Unextractable,
)
from services.retrieval.extract._markdown import AS_IS, as_markdown, label

__all__ = [
    "AS_IS",
    "ExtractLimits",
    "Extracted",
    "Kind",
    "OcrOptions",
    "Reason",
    "Section",
    "Unextractable",
    "as_markdown",
    "extract",
    "label",
]
