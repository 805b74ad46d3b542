"""Real files of each format, built with the libraries that write them, for the tests.

Shared by the extractor's unit tests and the ingest tests through the gateway, so both read
what PDF, Word, PowerPoint and Excel writers really produce, not hand-made fixtures.
"""

from __future__ import annotations

import io
import os
import random
import zipfile
from collections.abc import Sequence

import docx
import openpyxl
from docx.document import Document as DocxDocument
from PIL import Image, ImageDraw, ImageFilter, ImageFont
from pptx import Presentation
from pptx.util import Inches
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

MIB = 1024 * 1024


def pdf_pages(pages: list[list[str]], title: str | None = None) -> bytes:
    """One PDF page per entry, each line drawn top to bottom in Helvetica."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    if title is not None:
        pdf.setTitle(title)
    for lines in pages:
        y = 780.0
        for line in lines:
            pdf.drawString(72, y, line)
            y -= 18
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def encrypted(data: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_bytes(document: DocxDocument) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def policy_docx(core_title: str = "") -> bytes:
    document = docx.Document()
    document.core_properties.title = core_title
    document.add_paragraph("Applies to every customer contract.")
    document.add_heading("Refunds", level=1)
    document.add_paragraph("Refunds are issued within 30 days.")
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows,
        [
            ("Plan", "Refund window", "Approver"),
            ("Basic", "14 days", ""),
            ("Pro", "30 days", "CFO"),
        ],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Exceptions", level=2)
    document.add_paragraph("Custom deals follow their contract.")
    document.add_heading("Discounts", level=1)
    document.add_paragraph("Discounts above 20% need approval.")
    return docx_bytes(document)


def deck() -> bytes:
    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Roadmap 2025"
    first.placeholders[1].text_frame.text = "Ship search v2\nRetire the legacy API"
    first.notes_slide.notes_text_frame.text = "Stress the migration date."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Pricing"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, values in enumerate([("Tier", "Price"), ("Basic", "$10"), ("Pro", "$30")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def workbook_bytes(order_rows: int) -> bytes:
    workbook = openpyxl.Workbook()
    regions = workbook.create_sheet("Regions", 0)
    workbook.remove(workbook["Sheet"])
    regions.append(["Region", "Owner", "Target"])
    regions.append(["EMEA", "Ana", 1200.0])
    regions.append(["APAC", None, 0.1 + 0.2])
    orders = workbook.create_sheet("Orders")
    orders.append(["Order", "Amount"])
    for number in range(1, order_rows + 1):
        orders.append([f"SO-{number}", number * 10])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def zip_bomb(member_bytes: int) -> bytes:
    """A ZIP whose word/document.xml inflates to ``member_bytes`` zeros, written in
    1 MiB pieces so neither the test nor the archive holds the payload in memory."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as member:
            piece = bytes(MIB)
            for _ in range(member_bytes // MIB):
                member.write(piece)
    return buffer.getvalue()


def image_only_pdf(pages: int) -> bytes:
    """A scan as it arrives: pages holding a picture and no text layer."""
    picture = Image.new("RGB", (200, 100), (200, 30, 30))
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    for _ in range(pages):
        pdf.drawImage(ImageReader(picture), 72, 500, width=200, height=100)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def padded_pdf(megabytes: int, text: str) -> bytes:
    """A real PDF past one gRPC message: a page of text and a page holding an image of
    random pixels (incompressible), as a scanned appendix makes a report big."""
    side = int((megabytes * MIB / 3) ** 0.5) + 1
    picture = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    pdf.drawString(72, 780, text)
    pdf.showPage()
    pdf.drawImage(ImageReader(picture), 72, 300, width=400, height=400)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def amplified_docx(paragraphs: int, seed: int = 46) -> bytes:
    """A small real DOCX whose ``word/document.xml`` is ``paragraphs`` tiny paragraphs of
    one short word each, drawn at random: cheap to send, costly to walk, and the
    draw keeps the compression ratio (about 100:1) under the zip bomb guard's 200:1."""
    rng = random.Random(seed)
    words = ("a", "the")
    with zipfile.ZipFile(io.BytesIO(docx_bytes(docx.Document()))) as template:
        parts = {name: template.read(name) for name in template.namelist()}
    body = "".join(
        f"<w:p><w:r><w:t>{rng.choice(words)}</w:t></w:r></w:p>" for _ in range(paragraphs)
    )
    document = parts["word/document.xml"].decode()
    head, _, rest = document.partition("<w:body>")
    parts["word/document.xml"] = f"{head}<w:body>{body}{rest}".encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def quadratic_html(size: int) -> bytes:
    """``size`` bytes of a page that Python's HTML parser once read in quadratic time:
    a paragraph, then ``</`` repeated (an end tag that never closes)."""
    head = b"<html><body><p>text</p>"
    return head + b"</" * ((size - len(head)) // 2)


# A real page: the opening of section 2.1 of the GNU Libtasn1 manual (libtasn1-doc's
# libtasn1.pdf, page 5), as set there; OCR must give these words back.
LIBTASN1_PAGE = [
    "2.1 ASN.1 syntax",
    "The parser is case sensitive. The comments begin with -- and end either",
    "with another --, or at the end of the respective line, whichever comes first.",
    "The C-style comments are not supported. For an example of the syntax,",
    "check the pkix.asn file distributed with the library.",
]
# Two more of its pages (section 3, "Utilities"): a TIFF's two sheets, a photo of one.
LIBTASN1_PARSER = [
    "3.1 Invoking asn1Parser",
    "asn1Parser reads a single file with ASN.1 definitions and generates a file",
    "with an array to use with libtasn1 functions.",
]
LIBTASN1_CODING = [
    "3.2 Invoking asn1Coding",
    "asn1Coding generates a DER encoding from a file with ASN.1 definitions",
    "and another one with assignments.",
]
SCAN_DPI = 300


def scanned_page(lines: list[str], *, blur: float = 0.0, width: int = 2480) -> Image.Image:
    """A page as a scanner at 300 dpi sees it: ``lines`` in 10-point type on white, grey.
    ``blur`` (a Gaussian radius in pixels: 5 leaves Tesseract's mean word confidence near
    25 of 100, against 96 unblurred) makes the scan an unreadable one. Pillow's own
    font: no font files needed."""
    font = ImageFont.load_default(size=42)
    image = Image.new("L", (width, 240 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((150, 150 + 70 * number), line, font=font, fill=0)
    return image.filter(ImageFilter.GaussianBlur(blur)) if blur else image


def image_bytes(image: Image.Image, fmt: str, **options: object) -> bytes:
    """``image`` written as PNG, JPEG or TIFF, tagged with the scan's 300 dpi."""
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, dpi=(SCAN_DPI, SCAN_DPI), **options)
    return buffer.getvalue()


def tiff_pages(pages: Sequence[Image.Image]) -> bytes:
    """A multi-page TIFF, as document scanners write a stack of sheets."""
    return image_bytes(pages[0], "TIFF", save_all=True, append_images=pages[1:])


def scanned_pdf(pages: Sequence[Image.Image | list[str]]) -> bytes:
    """A PDF of scanned pages (each an image, no text layer), as a scanner writes it; a
    list of lines instead is a page with a text layer (reportlab), for mixed files."""
    writer = PdfWriter()
    for page in pages:
        buffer = io.BytesIO()
        if isinstance(page, Image.Image):
            page.save(buffer, format="PDF", resolution=SCAN_DPI)
        else:
            buffer.write(pdf_pages([page]))
        writer.append(PdfReader(io.BytesIO(buffer.getvalue())))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
