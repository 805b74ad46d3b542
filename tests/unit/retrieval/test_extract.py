"""Server-side extraction: real files built here with the writer libraries, read back.

Every file is made in the test by the library that writes its format (reportlab and pypdf
for PDF, python-docx, python-pptx, openpyxl, Pillow for the PNG), so the extractor is
tested against what those programs really produce, not hand-written fixtures.
"""

from __future__ import annotations

import io
import random
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import docx
import openpyxl
import pytest
from PIL import Image
from pptx import Presentation
from pptx.util import Inches

from services.retrieval._settings import RetrievalSettings
from services.retrieval.extract import (
    Extracted,
    ExtractLimits,
    Kind,
    OcrOptions,
    Reason,
    Section,
    Unextractable,
    as_markdown,
    extract,
)
from tests.documents import (
    MIB,
    amplified_docx,
    deck,
    docx_bytes,
    encrypted,
    image_only_pdf,
    pdf_pages,
    policy_docx,
    workbook_bytes,
    zip_bomb,
)


def refusal(data: bytes, name: str, limits: ExtractLimits | None = None) -> Unextractable:
    with pytest.raises(Unextractable) as caught:
        if limits is None:
            extract(data, name)
        else:
            extract(data, name, limits=limits)
    return caught.value


# -- PDF -----------------------------------------------------------------------------------


THREE_PAGES = [
    ["Quarterly report", "Revenue grew in every region."],
    ["Risks", "Churn rose among small accounts."],
    ["Outlook", "We expect steady growth next year."],
]


def test_pdf_has_one_section_per_page_in_order_with_page_locators():
    got = extract(pdf_pages(THREE_PAGES, title="Q3 Board Report"), "q3.pdf")
    assert got.kind is Kind.PDF
    assert got.title == "Q3 Board Report"
    assert got.encoding is None
    assert [s.locator for s in got.sections] == ["page 1", "page 2", "page 3"]
    assert [s.text for s in got.sections] == [
        "Quarterly report\nRevenue grew in every region.",
        "Risks\nChurn rose among small accounts.",
        "Outlook\nWe expect steady growth next year.",
    ]
    assert all(s.heading == "" for s in got.sections)
    assert got.notes == []


def test_pdf_without_a_set_title_has_none_not_the_writers_placeholder():
    # reportlab writes "untitled" when no title was set.
    assert extract(pdf_pages([["Body text."]]), "a.pdf").title is None


def test_pdf_pages_without_text_are_skipped_and_named_in_a_note():
    got = extract(pdf_pages([["First page."], [], ["Third page."]]), "gap.pdf")
    assert [(s.locator, s.text) for s in got.sections] == [
        ("page 1", "First page."),
        ("page 3", "Third page."),
    ]
    assert got.notes == ["no text on page 2 (no text layer, no image)"]


def test_image_only_pdf_is_refused_as_having_no_text_layer_when_ocr_is_off():
    # With OCR on, tests/unit/retrieval/test_extract_ocr.py reads such pages.
    limits = ExtractLimits(ocr=OcrOptions(enabled=False))
    error = refusal(image_only_pdf(pages=2), "scan.pdf", limits)
    assert error.reason is Reason.NO_TEXT_LAYER
    assert error.message.startswith("no text layer, OCR is off (RETRIEVAL_OCR=off)")
    assert "2 pages" in error.message


def test_pdf_with_a_user_password_is_refused_as_encrypted():
    error = refusal(encrypted(pdf_pages(THREE_PAGES), user_password="s3cret"), "locked.pdf")
    assert error.reason is Reason.ENCRYPTED
    assert "password" in error.message


def test_pdf_encrypted_with_an_empty_user_password_is_extracted():
    got = extract(encrypted(pdf_pages(THREE_PAGES), user_password=""), "restricted.pdf")
    assert [s.locator for s in got.sections] == ["page 1", "page 2", "page 3"]
    assert got.sections[1].text == "Risks\nChurn rose among small accounts."


def test_corrupt_pdf_is_refused_as_corrupt():
    data = b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n1 0 obj << /Type /Catalog"
    error = refusal(data, "broken.pdf")
    assert error.reason is Reason.CORRUPT
    assert error.message.startswith("looks like a PDF but cannot be read")


def test_pdf_named_txt_is_read_as_pdf():
    got = extract(pdf_pages([["Content decides, not the name."]]), "notes.txt")
    assert got.kind is Kind.PDF
    assert got.sections == [Section("", "Content decides, not the name.", "page 1")]


def test_text_named_pdf_is_read_as_text():
    got = extract(b"Plain words in a file called report.pdf", "report.pdf")
    assert got.kind is Kind.TEXT
    assert got.sections == [Section("", "Plain words in a file called report.pdf", "")]
    assert got.encoding == "utf-8"


def test_pdf_over_the_character_limit_is_refused_naming_the_limit():
    error = refusal(pdf_pages(THREE_PAGES), "q3.pdf", ExtractLimits(max_chars=60))
    assert error.reason is Reason.TOO_LARGE
    assert "60 characters" in error.message


# -- DOCX ----------------------------------------------------------------------------------


def test_docx_headings_cut_sections_with_heading_paths_and_tables_become_rows():
    got = extract(policy_docx(), "policy.docx")
    assert got.kind is Kind.DOCX
    assert got.sections == [
        Section("", "Applies to every customer contract.", ""),
        Section(
            "Refunds",
            "Refunds are issued within 30 days.\n\n"
            "| row | Plan | Refund window | Approver |\n"
            "| --- | --- | --- | --- |\n"
            "| 2 | Basic | 14 days |  |\n"
            "| 3 | Pro | 30 days | CFO |",
            "section Refunds",
        ),
        Section(
            "Exceptions", "Custom deals follow their contract.", "section Refunds > Exceptions"
        ),
        Section("Discounts", "Discounts above 20% need approval.", "section Discounts"),
    ]
    # no core title: the first heading names the document
    assert got.title == "Refunds"


def test_docx_core_title_wins_over_headings():
    assert extract(policy_docx(core_title="Refund Policy 2025"), "p.docx").title == (
        "Refund Policy 2025"
    )


def test_truncated_docx_is_refused_as_corrupt():
    data = policy_docx()
    error = refusal(data[: len(data) // 2], "policy.docx")
    assert error.reason is Reason.CORRUPT
    assert "ZIP" in error.message


def test_docx_without_text_is_refused_as_empty():
    error = refusal(docx_bytes(docx.Document()), "blank.docx")
    assert error.reason is Reason.EMPTY


# -- PPTX ----------------------------------------------------------------------------------


def test_pptx_has_one_section_per_slide_with_tables_and_speaker_notes():
    got = extract(deck(), "roadmap.pptx")
    assert got.kind is Kind.PPTX
    assert got.title == "Roadmap 2025"
    assert got.sections == [
        Section(
            "Roadmap 2025",
            "Ship search v2\nRetire the legacy API\n\nNotes: Stress the migration date.",
            "slide 1",
        ),
        Section(
            "Pricing",
            "| row | Tier | Price |\n| --- | --- | --- |\n| 2 | Basic | $10 |\n| 3 | Pro | $30 |",
            "slide 2",
        ),
    ]


# -- XLSX ----------------------------------------------------------------------------------


def test_xlsx_sheets_become_sections_of_header_value_rows():
    got = extract(workbook_bytes(order_rows=2), "sales.xlsx")
    assert got.kind is Kind.XLSX
    assert got.sections == [
        Section(
            "Regions",
            "| row | Region | Owner | Target |\n| --- | --- | --- | --- |\n"
            "| 2 | EMEA | Ana | 1200 |\n| 3 | APAC |  | 0.3 |",
            "sheet Regions",
        ),
        Section(
            "Orders",
            "| row | Order | Amount |\n| --- | --- | --- |\n| 2 | SO-1 | 10 |\n| 3 | SO-2 | 20 |",
            "sheet Orders",
        ),
    ]
    assert got.notes == []


def test_xlsx_sheet_over_the_row_cap_is_cut_with_a_note_and_row_locators():
    limits = ExtractLimits(max_rows_per_sheet=50, rows_per_section=20)
    got = extract(workbook_bytes(order_rows=120), "sales.xlsx", limits=limits)
    assert got.notes == ["sheet 'Orders' capped at 50 of 120 rows"]
    orders = [s for s in got.sections if s.heading == "Orders"]
    # the header is spreadsheet row 1, so data rows are numbered from 2
    assert [s.locator for s in orders] == [
        "sheet Orders, rows 2-21",
        "sheet Orders, rows 22-41",
        "sheet Orders, rows 42-51",
    ]
    # every section is a table under the repeated header, rows numbered as Excel shows them
    assert all(s.text.startswith("| row | Order | Amount |\n| --- | --- | --- |\n") for s in orders)
    lines = [line for s in orders for line in s.text.split("\n")[2:]]
    assert len(lines) == 50
    assert lines[0] == "| 2 | SO-1 | 10 |" and lines[-1] == "| 51 | SO-50 | 500 |"


def test_xlsx_row_cap_default_is_2000():
    got = extract(workbook_bytes(order_rows=2100), "big.xlsx")
    assert got.notes == ["sheet 'Orders' capped at 2000 of 2100 rows"]
    orders = [s for s in got.sections if s.heading == "Orders"]
    assert sum(s.text.count("\n") - 1 for s in orders) == 2000
    assert orders[-1].locator == "sheet Orders, rows 1802-2001"


# -- CSV -----------------------------------------------------------------------------------


def test_csv_delimiter_is_sniffed_and_rows_become_a_table_under_the_header():
    data = b"Name;City;Amount\nAna;Lisboa;12,50\nBo;;7\n"
    got = extract(data, "export.csv")
    assert got.kind is Kind.CSV
    assert got.encoding == "utf-8"
    assert got.sections == [
        Section(
            "",
            "| row | Name | City | Amount |\n| --- | --- | --- | --- |\n"
            "| 2 | Ana | Lisboa | 12,50 |\n| 3 | Bo |  | 7 |",
            "",
        )
    ]
    assert got.notes == ["semicolon-separated"]


# -- HTML ----------------------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html><head><title>Refund policy | Acme</title>
<style>p { color: red }</style><script>var tracking = "do not index";</script></head>
<body>
<header><a href="/">Acme home</a></header>
<nav><ul><li>Products</li><li>Pricing</li></ul></nav>
<main>
  <h1>Refund policy</h1>
  <p>Refunds are issued within <b>30</b> days.<br>Ask support first.
  <p>Contact billing for exceptions.
  <h2>Tiers</h2>
  <table><tr><th>Tier</th><th>Window</th></tr>
         <tr><td>Basic</td><td>14 days</td></tr><tr><td>Pro<td>30 days</table>
  <noscript>Enable JavaScript</noscript>
  <aside>Related: shipping policy</aside>
</main>
<footer>Copyright Acme</footer>
</body></html>
"""


def test_html_keeps_main_content_drops_chrome_and_cuts_sections_at_headings():
    got = extract(PAGE.encode(), "refunds.html")
    assert got.kind is Kind.HTML
    assert got.title == "Refund policy | Acme"
    assert got.encoding == "utf-8"
    assert got.sections == [
        Section(
            "Refund policy",
            "Refunds are issued within 30 days.\nAsk support first.\n\n"
            "Contact billing for exceptions.",
            "section Refund policy",
        ),
        Section(
            "Tiers",
            "| row | Tier | Window |\n| --- | --- | --- |\n"
            "| 2 | Basic | 14 days |\n| 3 | Pro | 30 days |",
            "section Refund policy > Tiers",
        ),
    ]
    text = " ".join(s.text for s in got.sections)
    for chrome in ("tracking", "color", "Acme home", "Products", "Copyright", "JavaScript",
                   "shipping"):  # fmt: skip
        assert chrome not in text


def test_html_without_main_reads_the_body_and_takes_the_title_from_h1():
    page = "<html><body><nav>Menu</nav><h1>Welcome</h1><div>Hello <i>there</i>.</div></body>"
    got = extract(page.encode(), "index.htm")
    assert got.title == "Welcome"
    assert got.sections == [Section("Welcome", "Hello there.", "section Welcome")]


def test_html_articles_keep_their_own_header_but_not_the_page_banner():
    page = (
        "<html><body><header><h1>Site name</h1></header>"
        "<article><header><h1>Release notes</h1></header><p>Faster search.</p>"
        "<footer>Posted by Ana</footer></article><aside>Ads</aside></body></html>"
    )
    got = extract(page.encode(), "post.html")
    assert got.title == "Release notes"
    assert got.sections == [Section("Release notes", "Faster search.", "section Release notes")]


def test_html_is_recognised_by_content_whatever_the_name():
    page = "\ufeff  <!doctype HTML><html><body><p>Saved as text</p></body></html>"
    got = extract(page.encode("utf-8"), "download.txt")
    assert got.kind is Kind.HTML
    assert got.sections == [Section("", "Saved as text", "")]


def test_html_declared_charset_is_used_when_utf8_fails():
    page = '<html><head><meta charset="iso-8859-7"></head><body><p>\u0393\u03b5\u03b9\u03ac'
    got = extract(page.encode("iso-8859-7"), "greek.html")
    assert got.encoding == "iso8859-7"
    assert got.sections[0].text == "\u0393\u03b5\u03b9\u03ac"


# -- ZIP safety and types ------------------------------------------------------------------


@dataclass
class ZipWork:
    """What extraction did to archive members: which it opened, how many bytes it
    inflated out of them. The real ``zipfile`` does the work; this only counts it."""

    opened: list[str] = field(default_factory=list)
    inflated: int = 0


# Past this many inflated bytes the count stops the read (a bomb that got through the
# guard would otherwise inflate hundreds of MiB before the test could say so).
_TRIPWIRE_BYTES = 8 * MIB


@pytest.fixture
def zip_work(monkeypatch: pytest.MonkeyPatch) -> Iterator[ZipWork]:
    work = ZipWork()
    real_open = zipfile.ZipFile.open
    real_read = zipfile.ZipExtFile.read
    real_read1 = zipfile.ZipExtFile.read1

    def opened(self: zipfile.ZipFile, name: Any, mode: Any = "r", *args: Any, **kw: Any) -> Any:
        if mode == "r":
            work.opened.append(name if isinstance(name, str) else name.filename)
        return real_open(self, name, mode, *args, **kw)

    def counted(data: bytes) -> bytes:
        work.inflated += len(data)
        if work.inflated > _TRIPWIRE_BYTES:
            raise MemoryError(f"tripwire: {work.inflated:,} bytes inflated")
        return data

    def read(self: zipfile.ZipExtFile, n: int | None = -1) -> bytes:
        return counted(real_read(self, n))

    def read1(self: zipfile.ZipExtFile, n: int) -> bytes:
        return counted(real_read1(self, n))

    monkeypatch.setattr(zipfile.ZipFile, "open", opened)
    monkeypatch.setattr(zipfile.ZipExtFile, "read", read)
    monkeypatch.setattr(zipfile.ZipExtFile, "read1", read1)
    yield work


def test_work_counting_sees_a_member_read(zip_work: ZipWork):
    # The control: reading a real DOCX opens its members and inflates their bytes.
    extract(policy_docx(), "policy.docx")
    assert "word/document.xml" in zip_work.opened
    assert zip_work.inflated > 0


def test_zip_bomb_disguised_as_docx_is_refused_before_inflating(zip_work: ZipWork):
    data = zip_bomb(300 * MIB)
    assert len(data) < 3 * MIB
    error = refusal(data, "contract.docx")
    assert error.reason is Reason.TOO_LARGE
    assert error.message.startswith("expands to more than 200 MiB uncompressed")
    assert "zip bomb guard" in error.message
    # Refused from the central directory alone: no member opened, not a byte inflated.
    assert zip_work.opened == []
    assert zip_work.inflated == 0


def test_zip_member_over_the_compression_ratio_is_refused(zip_work: ZipWork):
    error = refusal(zip_bomb(4 * MIB), "contract.docx")
    assert error.reason is Reason.TOO_LARGE
    assert "member 'word/document.xml' expands" in error.message
    assert "over the 200:1 compression-ratio limit" in error.message
    assert (zip_work.opened, zip_work.inflated) == ([], 0)


def test_zip_with_too_many_members_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for n in range(30):
            zf.writestr(f"part{n}.xml", "<x/>")
    error = refusal(buffer.getvalue(), "many.xlsx", ExtractLimits(max_zip_members=20))
    assert error.reason is Reason.TOO_LARGE
    assert "30 archive members, over the limit of 20" in error.message


def test_plain_zip_is_unsupported_and_named():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("readme.txt", "hello")
    error = refusal(buffer.getvalue(), "bundle.docx")
    assert error.reason is Reason.UNSUPPORTED_TYPE
    assert error.message.startswith("is a ZIP archive")


def test_gif_named_txt_is_unsupported_and_named():
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (0, 128, 255)).save(buffer, format="GIF")
    error = refusal(buffer.getvalue(), "notes.txt")
    assert error.reason is Reason.UNSUPPORTED_TYPE
    assert error.message == "is a GIF image, not a document with text"


def test_png_named_txt_is_read_as_the_image_it_is():
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (0, 128, 255)).save(buffer, format="PNG")
    limits = ExtractLimits(ocr=OcrOptions(enabled=False))
    error = refusal(buffer.getvalue(), "notes.txt", limits)
    assert error.reason is Reason.NO_TEXT_LAYER
    assert error.message.startswith("is a PNG image, whose text only OCR reads")


def test_legacy_office_file_is_unsupported_with_advice():
    error = refusal(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "old.doc")
    assert error.reason is Reason.UNSUPPORTED_TYPE
    assert "legacy Office file" in error.message and ".docx" in error.message


def test_input_over_the_size_limit_is_refused_naming_the_limit():
    error = refusal(b"a" * 2048, "big.txt", ExtractLimits(max_input_bytes=1024))
    assert error.reason is Reason.TOO_LARGE
    assert error.message == "is 2 KiB, over the 1 KiB limit for one file"


def test_default_character_limit_is_the_ingest_per_document_limit():
    assert ExtractLimits().max_chars == RetrievalSettings().max_document_chars == 1_000_000


@pytest.mark.parametrize("data", [b"", b"  \n\t "])
def test_empty_input_is_refused(data: bytes):
    assert refusal(data, "empty.txt").reason is Reason.EMPTY


# -- Text decoding -------------------------------------------------------------------------


def test_cp1252_text_is_decoded_and_reported():
    got = extract("Caf\u00e9 \u2014 \u201cquoted\u201d \u20ac5".encode("cp1252"), "menu.txt")
    assert got.encoding == "cp1252"
    assert got.sections[0].text == "Caf\u00e9 \u2014 \u201cquoted\u201d \u20ac5"


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("\ufeffR\u00e9sum\u00e9 of the meeting".encode("utf-16-le"), "utf-16"),
        ("R\u00e9sum\u00e9 of the meeting".encode("utf-16"), "utf-16"),
        ("R\u00e9sum\u00e9 of the meeting".encode("utf-16-le"), "utf-16-le"),
        ("R\u00e9sum\u00e9 of the meeting".encode("utf-16-be"), "utf-16-be"),
        ("R\u00e9sum\u00e9 of the meeting".encode("utf-8-sig"), "utf-8-sig"),
    ],
)
def test_utf16_and_bom_text_is_decoded_and_reported(data: bytes, encoding: str):
    got = extract(data, "minutes.txt")
    assert got.encoding == encoding
    assert got.sections == [Section("", "R\u00e9sum\u00e9 of the meeting", "")]


def test_nul_bytes_become_spaces_and_never_glue_words():
    got = extract(b"alpha\x00beta\x00\x00gamma delta", "log.txt")
    assert got.sections[0].text.split() == ["alpha", "beta", "gamma", "delta"]


def test_binary_data_of_unknown_type_is_undecodable():
    error = refusal(bytes(range(1, 32)) * 40 + b"\x81\x8d", "blob.txt")
    assert error.reason is Reason.UNDECODABLE


def test_markdown_is_one_section_left_to_the_chunker_with_its_title():
    text = "# Onboarding\n\nWelcome.\n\n## Accounts\n\nAsk IT.\n"
    got = extract(text.encode(), "guide.md")
    assert got.kind is Kind.MARKDOWN
    assert got.title == "Onboarding"
    assert got.sections == [Section("", text.strip(), "")]


def test_result_reports_its_character_count():
    got = extract(b"twelve chars", "a.txt")
    assert isinstance(got, Extracted) and got.char_count == 12


# -- Damaged files -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["pdf", "docx", "pptx", "xlsx", "html"])
def test_damaged_files_never_raise_anything_but_unextractable(kind: str):
    """Truncations, flipped bytes and cut-out spans of real files: each either extracts
    or is refused; no library exception (zlib.error, KeyError, PdfReadError...) leaks."""
    original = {
        "pdf": lambda: pdf_pages(THREE_PAGES, title="T"),
        "docx": policy_docx,
        "pptx": deck,
        "xlsx": lambda: workbook_bytes(order_rows=30),
        "html": PAGE.encode,
    }[kind]()
    rng = random.Random(kind)
    reasons = set()
    for _ in range(40):
        damaged = bytearray(original)
        operation = rng.choice(("truncate", "flip", "cut"))
        if operation == "truncate":
            damaged = damaged[: rng.randrange(1, len(damaged))]
        elif operation == "flip":
            for _ in range(rng.randint(1, 20)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        else:
            start = rng.randrange(len(damaged))
            del damaged[start : start + rng.randint(1, 500)]
        try:
            got = extract(bytes(damaged), f"file.{kind}")
        except Unextractable as error:
            reasons.add(error.reason)
            assert error.message
        else:
            assert got.sections and all(s.text for s in got.sections)
    if kind != "html":  # damaged markup is still markup
        assert Reason.CORRUPT in reasons


# -- The formats eval's renderers ----------------------------------------------------------


@pytest.mark.parametrize("form", ["pdf", "docx", "html"])
def test_formats_eval_round_trip_returns_the_original_text_and_title(form: str):
    """services.bench.formats renders a document to each form and extracts it back; a
    clean rendering must come back word for word (markup characters included)."""
    from services.bench.formats import round_trip, similarity

    text = " ".join(['Indexing & retrieval <of> "abstracts" in libraries.'] * 120)
    trip = round_trip({"_id": "7", "title": "Search <tools> & users", "text": text}, form)
    assert trip.refused is None
    assert trip.title == "Search <tools> & users"
    assert " ".join(trip.text.split()) == text
    assert similarity(text, trip.text) == 1.0
    if form == "pdf":
        # Rendered over many wrapped lines; read back as the one paragraph it is, with a
        # space (not nothing, not a newline) where each line wrapped.
        assert trip.text.count("\n") < 3


@pytest.mark.parametrize("name", ["slides.pptx", "memo.docx", "sheet.xlsx"])
def test_an_office_name_on_something_not_a_zip_is_refused_as_corrupt(name: str):
    error = refusal(b"PK", name)
    assert error.reason is Reason.CORRUPT
    assert "is not a ZIP archive" in error.message


# -- limits enforced while streaming (issue 46) -----------------------------------------------


def test_an_amplified_docx_is_refused_at_the_paragraph_limit_while_streamed():
    # 150,000 tiny paragraphs in a 73 KB archive: 131 s of CPU when walked whole.
    data = amplified_docx(150_000)
    assert len(data) < 100_000
    started = time.process_time()
    error = refusal(data, "report.docx")
    assert error.reason is Reason.TOO_LARGE
    assert error.message == "has more than 100,000 paragraphs (the per-document limit)"
    assert time.process_time() - started < 3.0


def test_docx_xml_limits_name_the_limit_crossed():
    data = amplified_docx(2_000)
    assert refusal(data, "a.docx", ExtractLimits(max_xml_elements=1_000)).message == (
        "has more than 1,000 XML elements in its text"
    )
    assert refusal(data, "a.docx", ExtractLimits(max_chars=1_000)).message == (
        "extracted text exceeds 1,000 characters (the per-document limit)"
    )
    assert extract(data, "a.docx").char_count > 2_000  # within the defaults it is read


def test_the_character_budget_stops_at_the_block_that_crosses_it():
    # One section of many paragraphs (no headings): refused as the cap is passed, not
    # after the whole section was collected.
    page = "<html><body>" + "<p>word word word</p>" * 5_000 + "</body></html>"
    error = refusal(page.encode(), "a.html", ExtractLimits(max_chars=1_000))
    assert error.reason is Reason.TOO_LARGE


def test_html_elements_are_counted_as_the_page_is_parsed():
    page = "<html><body>" + "<b>x</b>" * 2_000 + "</body></html>"
    error = refusal(page.encode(), "a.html", ExtractLimits(max_xml_elements=1_000))
    assert (error.reason, error.message) == (Reason.TOO_LARGE, "has more than 1,000 HTML elements")


@pytest.mark.parametrize(
    "unit",
    ["</", "<!--x>", "<![CDATA[x>", "<a b='", "<a =", "<a/"],
)
def test_html_that_never_closes_is_read_in_linear_time(unit: str):
    # '</' * N took 1.3 s at 128 KiB and 18 s at 512 KiB in html.parser's recovery.
    page = "<html><body><p>text</p>" + unit * (512 * 1024 // len(unit))
    started = time.process_time()
    extracted = extract((page + ">").encode(), "page.html")
    assert time.process_time() - started < 2.0
    assert extracted.kind is Kind.HTML


def test_the_text_after_the_last_tag_is_kept_as_text():
    extracted = extract(b"<html><body><p>one</p>two &amp; </three", "a.html")
    assert "two & </three" in as_markdown(extracted)


def test_a_pdf_past_the_page_limit_is_refused_before_a_page_is_read():
    data = pdf_pages([["a"], ["b"], ["c"]])
    error = refusal(data, "a.pdf", ExtractLimits(max_pdf_pages=2))
    assert (error.reason, error.message) == (
        Reason.TOO_LARGE,
        "is a PDF of 3 pages, over the limit of 2",
    )


# -- tables as tables ------------------------------------------------------------------------


def _protocols_csv(header: bool) -> bytes:
    rows = [("ip", "0", "IP"), ("icmp", "1", "ICMP"), ("ospf", "89", "OSPFIGP")]
    lines = (["protocol,number,aliases"] if header else []) + [",".join(r) for r in rows]
    return ("\n".join(lines) + "\n").encode()


def test_a_header_over_typed_columns_labels_the_rows_which_keep_their_line_numbers():
    got = extract(_protocols_csv(header=True), "protocols.csv")
    assert got.sections[0].text.split("\n") == [
        "| row | protocol | number | aliases |",
        "| --- | --- | --- | --- |",
        "| 2 | ip | 0 | IP |",
        "| 3 | icmp | 1 | ICMP |",
        "| 4 | ospf | 89 | OSPFIGP |",
    ]


def test_a_table_without_a_header_gets_its_columns_named_by_position():
    # the first row holds a number: it is data, row 1, not a header
    got = extract(_protocols_csv(header=False), "protocols.csv")
    assert got.sections[0].text.split("\n")[:3] == [
        "| row | column 1 | column 2 | column 3 |",
        "| --- | --- | --- | --- |",
        "| 1 | ip | 0 | IP |",
    ]


def test_a_workbook_without_a_header_names_columns_by_letter():
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Ports"
    for row in (("smtp", 25), ("submission", 587), ("imaps", 993)):
        sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    got = extract(buffer.getvalue(), "ports.xlsx")
    assert got.sections == [
        Section(
            "Ports",
            "| row | column A | column B |\n| --- | --- | --- |\n"
            "| 1 | smtp | 25 |\n| 2 | submission | 587 |\n| 3 | imaps | 993 |",
            "sheet Ports",
        )
    ]


def test_a_label_that_recurs_in_its_column_is_data_not_a_header():
    data = b"alpha,red\nbeta,blue\nalpha,green\n"
    assert extract(data, "pairs.csv").sections[0].text.startswith("| row | column 1 | column 2 |")


def test_html_th_cells_are_the_header_and_a_pipe_in_a_cell_is_escaped():
    page = (
        b"<html><body><h1>Ports</h1><table>"
        b"<tr><td>Service</td><td>Port</td></tr>"  # a first row of td: the data decides
        b"<tr><td>smtp</td><td>25/tcp</td></tr></table>"
        b"<table><tr><th>1999</th><th>2000</th></tr>"  # th says header, numbers or not
        b"<tr><td>a|b</td><td>c</td></tr></table></body></html>"
    )
    got = extract(page, "ports.html")
    assert got.sections[0].text == (
        "| row | Service | Port |\n| --- | --- | --- |\n| 2 | smtp | 25/tcp |\n\n"
        "| row | 1999 | 2000 |\n| --- | --- | --- |\n| 2 | a\\|b | c |"
    )


def test_a_slide_table_with_its_header_row_flag_off_is_all_data():
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Codenames"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    table.first_row = False
    for r, values in enumerate([("buster", "bullseye"), ("bookworm", "trixie")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    buffer = io.BytesIO()
    presentation.save(buffer)
    got = extract(buffer.getvalue(), "codenames.pptx")
    assert got.sections[0].text == (
        "| row | column 1 | column 2 |\n| --- | --- | --- |\n"
        "| 1 | buster | bullseye |\n| 2 | bookworm | trixie |"
    )
