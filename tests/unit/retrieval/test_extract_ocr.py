"""Scans and images (issue 48 item 3): OCR by the real ``tesseract`` program on real files.

Every file is made here: a page of the GNU Libtasn1 manual set at 300 dpi by Pillow (the
way a scanner sees it), packed as an image-only PDF, a PNG, a JPEG and a two-page TIFF;
an unreadable scan is the same page blurred. Before this change each of these was refused
("no text layer, OCR not available"; "is a PNG image, not a document with text").
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import psutil
import pytest
from PIL import Image

from services.common import SettingsError
from services.retrieval._files import ocr_options
from services.retrieval._settings import RetrievalSettings
from services.retrieval.extract import (
    Extracted,
    ExtractLimits,
    Kind,
    OcrOptions,
    Reason,
    Unextractable,
    extract,
)
from tests.documents import (
    LIBTASN1_PAGE,
    image_bytes,
    image_only_pdf,
    pdf_pages,
    scanned_page,
    scanned_pdf,
    tiff_pages,
)

pytestmark = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="no tesseract: `make ocr` (part of `make setup`, as root) installs it",
)

KNOWN = ("ASN.1 syntax", "The parser is case sensitive.", "pkix.asn file distributed")


def ocr(**changes: object) -> ExtractLimits:
    return ExtractLimits(ocr=OcrOptions(**changes))  # type: ignore[arg-type]


def refusal(data: bytes, name: str, limits: ExtractLimits | None = None) -> Unextractable:
    with pytest.raises(Unextractable) as caught:
        extract(data, name, limits=limits or ExtractLimits())
    return caught.value


def located(got: Extracted) -> dict[str, str]:
    return {s.locator: s.text for s in got.sections}


def test_a_scanned_pdf_page_is_read_and_only_the_pages_without_text_go_to_ocr() -> None:
    data = scanned_pdf([["Cover page with a text layer."], scanned_page(LIBTASN1_PAGE)])
    got = extract(data, "manual.pdf")
    pages = located(got)
    assert list(pages) == ["page 1", "page 2"]
    assert pages["page 1"] == "Cover page with a text layer."  # the text layer, as it is
    for words in KNOWN:
        assert words in pages["page 2"]
    (note,) = got.notes
    assert note.startswith("read by OCR (mean word confidence, 0-100): page 2: ")
    assert int(note.rsplit(": ", 1)[1]) >= 90


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_an_image_is_read_and_cited_as_the_image(fmt: str) -> None:
    got = extract(image_bytes(scanned_page(LIBTASN1_PAGE), fmt), f"scan.{fmt.lower()}")
    assert got.kind is Kind(fmt)
    (section,) = got.sections
    assert section.locator == "image"
    for words in KNOWN:
        assert words in section.text
    assert got.notes[0].startswith("read by OCR")


def test_a_two_page_tiff_is_two_pages() -> None:
    first, second = LIBTASN1_PAGE[:2], LIBTASN1_PAGE[2:]
    got = extract(tiff_pages([scanned_page(first), scanned_page(second)]), "stack.tif")
    pages = located(got)
    assert got.kind is Kind.TIFF and list(pages) == ["page 1", "page 2"]
    assert "case sensitive" in pages["page 1"] and "case sensitive" not in pages["page 2"]
    assert "pkix.asn" in pages["page 2"] and "pkix.asn" not in pages["page 1"]


def test_a_page_under_the_confidence_floor_is_reported_and_not_indexed() -> None:
    unreadable = scanned_page(LIBTASN1_PAGE, blur=5.0)
    got = extract(scanned_pdf([scanned_page(LIBTASN1_PAGE), unreadable]), "mixed.pdf")
    assert list(located(got)) == ["page 1"]
    low = [n for n in got.notes if n.startswith("not indexed, OCR confidence under")]
    assert len(low) == 1 and "the floor of 70 (RETRIEVAL_OCR_MIN_CONFIDENCE): page 2: " in low[0]
    # A lower floor lets the same page in: the floor, not the reader, left it out.
    kept = extract(scanned_pdf([unreadable]), "blurred.pdf", limits=ocr(min_confidence=0))
    assert list(located(kept)) == ["page 1"]


def test_an_image_with_no_readable_text_is_refused_and_says_why() -> None:
    error = refusal(image_bytes(scanned_page(LIBTASN1_PAGE, blur=5.0), "PNG"), "blur.png")
    assert error.reason is Reason.NO_TEXT_LAYER
    assert error.message.startswith("is a PNG image in which OCR found no text to index")
    assert "RETRIEVAL_OCR_MIN_CONFIDENCE" in error.message


def test_a_page_past_its_timeout_is_reported_and_the_other_pages_are_kept() -> None:
    data = scanned_pdf([["Cover page with a text layer."], scanned_page(LIBTASN1_PAGE)])
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    got = extract(data, "slow.pdf", limits=ocr(page_timeout_s=0.001))
    assert located(got) == {"page 1": "Cover page with a text layer."}
    assert got.notes == [
        "not indexed: page 2: OCR gave up after 0.001 s (RETRIEVAL_OCR_PAGE_TIMEOUT_S)"
    ]
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert not left, f"tesseract outlived its timeout: {left}"


def test_the_documents_ocr_time_budget_stops_further_pages_and_says_so() -> None:
    # Ten pages take 3 s or more (each tesseract loads its model: 0.3 s at the least).
    got = extract(
        scanned_pdf([scanned_page(LIBTASN1_PAGE)] * 10), "long.pdf", limits=ocr(budget_s=2.5)
    )
    assert "page 1" in located(got) and "page 10" not in located(got)
    (stopped,) = [n for n in got.notes if n.startswith("not read by OCR")]
    assert "10 (the document's OCR time ran out (RETRIEVAL_EXTRACT_TIMEOUT_S))" in stopped


def test_pages_past_the_ocr_page_limit_are_reported() -> None:
    got = extract(
        scanned_pdf([scanned_page(LIBTASN1_PAGE)] * 2), "two.pdf", limits=ocr(max_pages=1)
    )
    assert list(located(got)) == ["page 1"]
    assert "not read by OCR: page 2 (at most 1 pages (RETRIEVAL_OCR_MAX_PAGES))" in got.notes


def test_an_image_over_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    # 64 million pixels of white: a few KB of PNG, 64 MB (or 192 MB in RGB) decoded.
    data = image_bytes(Image.new("L", (8000, 8000), 255), "PNG")
    assert len(data) < 200_000
    started = time.monotonic()
    error = refusal(data, "huge.png")
    assert error.reason is Reason.TOO_LARGE
    assert "over the 40,000,000-pixel limit for OCR" in error.message
    assert time.monotonic() - started < 1.0


def test_a_memory_capped_tesseract_fails_its_page_not_the_service() -> None:
    data = scanned_pdf([["Cover page with a text layer."], scanned_page(LIBTASN1_PAGE * 12)])
    got = extract(data, "capped.pdf", limits=ocr(memory_mb=100))  # the page needs ~140 MiB
    assert list(located(got)) == ["page 1"]
    (failed,) = got.notes
    assert failed.startswith("not indexed: page 2: OCR "), failed


def test_a_page_without_text_or_image_is_named_without_running_ocr() -> None:
    got = extract(pdf_pages([["First page."], [], ["Third page."]]), "gap.pdf")
    assert list(located(got)) == ["page 1", "page 3"]
    assert got.notes == ["no text on page 2 (no text layer, no image)"]


def test_a_picture_without_words_is_refused_as_having_no_text() -> None:
    error = refusal(image_only_pdf(pages=2), "scan.pdf")
    assert error.reason is Reason.NO_TEXT_LAYER
    assert error.message.startswith("no text layer, OCR found no text on pages 1, 2")
    assert "2 pages" in error.message


# -- OCR off or not installed: the refusal says so, and how to enable it ----------------


def test_with_ocr_off_a_scan_is_refused_and_the_message_says_how_to_enable_it() -> None:
    off = ocr(enabled=False)
    error = refusal(scanned_pdf([scanned_page(LIBTASN1_PAGE)]), "scan.pdf", off)
    assert error.reason is Reason.NO_TEXT_LAYER
    assert error.message.startswith("no text layer, OCR is off (RETRIEVAL_OCR=off)")
    assert "tesseract-ocr" in error.message
    error = refusal(image_bytes(scanned_page(LIBTASN1_PAGE), "PNG"), "scan.png", off)
    assert error.reason is Reason.NO_TEXT_LAYER
    assert error.message.startswith("is a PNG image, whose text only OCR reads: OCR is off")


def test_without_the_tesseract_program_ocr_is_reported_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without tesseract
    data = scanned_pdf([["Cover page with a text layer."], scanned_page(LIBTASN1_PAGE)])
    got = extract(data, "scan.pdf")
    assert list(located(got)) == ["page 1"]
    (note,) = got.notes
    assert note.startswith("no text on page 2 (images only? OCR is not available (no tesseract")
    error = refusal(scanned_pdf([scanned_page(LIBTASN1_PAGE)]), "scan.pdf")
    assert error.message.startswith("no text layer, OCR is not available (no tesseract program)")
    assert "install Debian's tesseract-ocr and tesseract-ocr-eng" in error.message


def test_a_language_without_its_data_names_the_package_to_install() -> None:
    error = refusal(
        image_bytes(scanned_page(LIBTASN1_PAGE), "PNG"), "a.png", ocr(languages="eng+xyz")
    )
    assert error.reason is Reason.NO_TEXT_LAYER
    assert "OCR is not available for xyz (RETRIEVAL_OCR_LANGUAGES): install tesseract-ocr-xyz" in (
        error.message
    )


# -- settings -----------------------------------------------------------------------------


def test_ocr_settings_are_read_from_the_environment_and_reach_the_extractor() -> None:
    settings = RetrievalSettings.from_env(
        {
            "RETRIEVAL_OCR": "off",
            "RETRIEVAL_OCR_LANGUAGES": "eng+deu",
            "RETRIEVAL_OCR_PAGE_TIMEOUT_S": "5",
            "RETRIEVAL_OCR_MEMORY_MB": "256",
            "RETRIEVAL_OCR_MIN_CONFIDENCE": "55",
            "RETRIEVAL_OCR_MAX_PAGES": "7",
            "RETRIEVAL_EXTRACT_TIMEOUT_S": "100",
        }
    )
    assert ocr_options(settings) == OcrOptions(
        enabled=False,
        languages="eng+deu",
        page_timeout_s=5.0,
        memory_mb=256,
        min_confidence=55.0,
        max_pages=7,
        budget_s=85.0,
    )
    defaults = ocr_options(RetrievalSettings.from_env({}))
    assert (defaults.enabled, defaults.languages, defaults.min_confidence) == (True, "eng", 70)


@pytest.mark.parametrize("value", ["eng -c tessedit_write_images=1", "eng;deu", "../x"])
def test_ocr_languages_that_are_not_language_names_are_refused(value: str) -> None:
    with pytest.raises(SettingsError, match="RETRIEVAL_OCR_LANGUAGES"):
        RetrievalSettings.from_env({"RETRIEVAL_OCR_LANGUAGES": value})
