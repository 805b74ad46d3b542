"""Images: PNG, JPEG and TIFF files, and the pictures of a PDF's pages without text.

Both are read by OCR (``_ocr``). A file's frames are its pages (a multi-page TIFF, the
usual output of a document scanner); a single image is cited as "image". A scanned
PDF page is the picture it holds: pypdf hands over the page's largest image as the
scanner stored it, so no PDF renderer is needed; its resolution is its pixel width over
the page's width.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image
from pypdf import PdfReader

from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    Kind,
    OcrOptions,
    Reason,
    Section,
    Unextractable,
)
from services.retrieval.extract._ocr import OcrUnavailable, PageFailed, PageImage, read_pages

_WHAT = {Kind.PNG: "a PNG image", Kind.JPEG: "a JPEG image", Kind.TIFF: "a TIFF image"}
# A resolution tag under this is a program's default (72, 96), not a scanner's.
_TRUSTED_DPI = 100
_PAGE = re.compile(r"page (\d+)")


@dataclass
class PdfOcr:
    """What OCR made of a PDF's pages without text: sections to merge, notes, and, when
    OCR could not run at all, why (for the refusal or the note on those pages)."""

    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unavailable: str = ""
    summary: str = ""


def _dpi(info: Mapping[Any, Any]) -> float | None:
    dpi = info.get("dpi")
    try:
        value = float(dpi[0]) if isinstance(dpi, tuple) else None
    except (TypeError, ValueError):
        return None
    return value if value and value >= _TRUSTED_DPI else None


def extract_image(data: bytes, kind: Kind, options: OcrOptions, budget: CharBudget) -> Extracted:
    """The text OCR reads in the image, one section per frame; refused as NO_TEXT_LAYER
    when OCR cannot run or finds nothing above the confidence floor (the message says
    which), TOO_LARGE past the pixel limit."""
    what = _WHAT[kind]
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise Unextractable(
            Reason.TOO_LARGE, f"is {what} over the {options.max_pixels:,}-pixel limit for OCR"
        ) from None
    frames = int(getattr(image, "n_frames", 1) or 1)

    def frame(index: int) -> PageImage:
        def load() -> tuple[Image.Image, float | None]:
            image.seek(index)
            return image, _dpi(image.info)

        return load

    def locator(number: int) -> str:
        return "image" if frames == 1 else f"page {number}"

    pages = ((i + 1, frame(i)) for i in range(frames))
    try:
        report = read_pages(pages, options, locator, budget.take)
    except OcrUnavailable as exc:
        message = f"is {what}, whose text only OCR reads: {exc}"
        raise Unextractable(Reason.NO_TEXT_LAYER, message) from None
    if not report.sections:
        if frames == 1 and report.failed and "pixel limit" in report.failed[0][1]:
            raise Unextractable(Reason.TOO_LARGE, f"is {what}: {report.failed[0][1]}")
        raise Unextractable(
            Reason.NO_TEXT_LAYER, f"is {what} in which OCR found no text to index: "
            f"{report.summary()}"
        )  # fmt: skip
    return Extracted(kind, None, report.sections, notes=report.notes())


def _page_image(page: Any, options: OcrOptions) -> PageImage:
    def load() -> tuple[Image.Image, float | None] | None:
        resources = page.get("/Resources")
        resources = resources.get_object() if resources is not None else {}
        xobjects = resources.get("/XObject")
        xobjects = xobjects.get_object() if xobjects is not None else {}
        best: tuple[int, str] | None = None
        for name, reference in xobjects.items():
            obj = reference.get_object()
            if obj.get("/Subtype") != "/Image":
                continue
            pixels = int(obj.get("/Width", 0)) * int(obj.get("/Height", 0))
            if best is None or pixels > best[0]:
                best = (pixels, str(name))
        if best is not None and best[0] > options.max_pixels:
            raise PageFailed(
                f"its image is {best[0]:,} pixels, over the {options.max_pixels:,}-pixel limit"
            )
        if best is not None:
            image = page.images[best[1]].image
        elif len(page.images):  # the picture is inside a form: the first one
            image = page.images[0].image
        else:
            return None
        if page.rotation % 360:
            image = image.rotate(-page.rotation, expand=True)
        width_in = float(page.mediabox.width) / 72
        rotated = page.rotation % 180 == 90
        if rotated:
            width_in = float(page.mediabox.height) / 72
        return image, (image.width / width_in if width_in > 0 else None)

    return load


def ocr_pdf_pages(
    reader: PdfReader, numbers: list[int], options: OcrOptions, budget: CharBudget
) -> PdfOcr:
    """OCR the pages ``numbers`` (1-based: the pages without a text layer)."""
    if not numbers:
        return PdfOcr()
    pages = ((n, _page_image(reader.pages[n - 1], options)) for n in numbers)
    try:
        report = read_pages(pages, options, lambda n: f"page {n}", budget.take)
    except OcrUnavailable as exc:
        return PdfOcr(unavailable=str(exc))
    return PdfOcr(report.sections, report.notes(), summary=report.summary())


def in_page_order(sections: list[Section]) -> list[Section]:
    """Sections of text layer and OCR merged by page number (stable within a page)."""

    def page(section: Section) -> int:
        found = _PAGE.match(section.locator)
        return int(found.group(1)) if found else 0

    return sorted(sections, key=page)
