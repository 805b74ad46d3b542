"""Rebuild the real-documents dev set's files from this machine's documentation packages.

``python -m services.bench.devsets.build_documents [--out DIR]`` writes
``DIR/corpus/`` (the files the questions are about) and ``DIR/ocr_reference/`` (the
text-layer original of the scanned pages, ingested only for the OCR comparison) from
Debian packages' own files; ``DIR`` defaults to ``services/bench/devsets/documents``.
Every derived file is made here, by the commands named in the dev set's README, so the
set can be checked and rebuilt rather than trusted. Needs ``groff`` (with its PDF
device), ``pdftoppm`` (poppler-utils), pypdf, python-docx, python-pptx, openpyxl and
Pillow; the source packages are listed in ``SOURCES``.

Byte-for-byte identical output is not promised (groff and the office writers stamp
creation times); the text, pages, rows and slides are.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docx
from openpyxl import Workbook
from PIL import Image
from pptx import Presentation
from pptx.util import Inches, Pt
from pypdf import PdfReader, PdfWriter

HERE = Path(__file__).parent / "documents"

# file in corpus/ (or ocr_reference/) -> (Debian package, source path)
SOURCES: dict[str, tuple[str, str]] = {
    "sort.pdf": ("coreutils", "/usr/share/man/man1/sort.1.gz"),
    "libtasn1-utilities.pdf": ("libtasn1-doc", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    "bbv-manual.html": ("valgrind", "/usr/share/doc/valgrind/html/bbv-manual.html"),
    "node-os.html": ("nodejs", "/usr/share/doc/nodejs/api/os.html"),
    "du-guide.docx": ("coreutils", "/usr/share/man/man1/du.1.gz"),
    "df-briefing.pptx": ("coreutils", "/usr/share/man/man1/df.1.gz"),
    "protocols.csv": ("netbase", "/etc/protocols"),
    "countries.csv": ("tzdata", "/usr/share/zoneinfo/iso3166.tab"),
    "timezones.xlsx": ("tzdata", "/usr/share/zoneinfo/zone1970.tab"),
    "mime-spec-scan.pdf": (
        "shared-mime-info",
        "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
    ),
    "mime-spec-pages.pdf": (
        "shared-mime-info",
        "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
    ),
}
# Pages (1-based, inclusive) cut from the source PDFs.
TASN1_PAGES = (4, 10)
SCAN_PAGES = (14, 16)
SCAN_DPI = 200
SCAN_JPEG_QUALITY = 60


def _run(*command: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(command, input=stdin, capture_output=True, check=True).stdout


def _man_source(path: str) -> bytes:
    return gzip.decompress(Path(path).read_bytes())


def cut_pdf(source: str, first: int, last: int) -> bytes:
    """Pages ``first``..``last`` of ``source`` as a new PDF (pypdf), text layer intact."""
    reader = PdfReader(source)
    writer = PdfWriter()
    for number in range(first, last + 1):
        writer.add_page(reader.pages[number - 1])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def man_pdf(source: str) -> bytes:
    """A man page typeset to PDF by groff's own PDF device: ``groff -man -Tpdf``."""
    return _run("groff", "-man", "-Tpdf", stdin=_man_source(source))


def scanned_pdf(source: str, first: int, last: int) -> bytes:
    """Pages rendered to grey images at ``SCAN_DPI`` by ``pdftoppm -r 200 -gray`` and
    packed as an image-only PDF (Pillow, JPEG at ``SCAN_JPEG_QUALITY``): no text layer,
    as a scanner would give."""
    with tempfile.TemporaryDirectory() as scratch:
        prefix = Path(scratch) / "page"
        _run("pdftoppm", "-r", str(SCAN_DPI), "-gray", "-f", str(first), "-l", str(last),
             source, str(prefix))  # fmt: skip
        images = [Image.open(p).convert("L") for p in sorted(Path(scratch).glob("page*.pgm"))]
        buffer = io.BytesIO()
        images[0].save(buffer, "PDF", resolution=float(SCAN_DPI), save_all=True,
                       append_images=images[1:], quality=SCAN_JPEG_QUALITY)  # fmt: skip
        return buffer.getvalue()


# ---- man pages as structured text (for the DOCX and the PPTX) --------------------------


@dataclass
class ManSection:
    """One top-level section of a man page: its paragraphs and its option entries."""

    name: str
    paragraphs: list[str] = field(default_factory=list)
    options: list[tuple[str, str]] = field(default_factory=list)


def man_sections(source: str) -> list[ManSection]:
    """The man page as groff renders it for a terminal, without hyphenation or
    justification and on 300-column lines (``groff -man -Tutf8 -P-cbou -rHY=0 -dAD=l
    -rLL=300n``), so each paragraph is one line: a line at column 0 starts a section,
    a line at column 7 starting with "-" names an option (its text on the next line at
    column 14, on the same line when the tag is short), any other line at column 7 is a
    paragraph."""
    rendered = _run(
        "groff", "-man", "-Tutf8", "-P-cbou", "-rHY=0", "-dAD=l", "-rLL=300n",
        stdin=_man_source(source),
    ).decode("utf-8")  # fmt: skip
    sections: list[ManSection] = []
    for line in rendered.splitlines()[1:-1]:  # the running header and footer
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        text = " ".join(line.split())
        if indent == 0:
            sections.append(ManSection(text))
        elif indent >= 14 and sections[-1].options:
            name, before = sections[-1].options[-1]
            sections[-1].options[-1] = (name, f"{before} {text}".strip())
        elif text.startswith("-"):
            # A tag narrower than the indent shares its line with the text at column 14.
            if len(line) > 14 and line[13] == " " and line[14] != " ":
                sections[-1].options.append((line[7:13].strip(), " ".join(line[14:].split())))
            else:
                sections[-1].options.append((text, ""))
        else:
            sections[-1].paragraphs.append(text)
    return sections


def _section(sections: list[ManSection], name: str) -> ManSection:
    return next(s for s in sections if s.name == name)


def du_docx(source: str) -> bytes:
    """du(1) as a Word guide: a Title, Heading 1 per man section, the options as a
    two-column table (Option, Meaning) under Heading 2 "Options", the one-word aliases
    ("like --block-size=1K", "equivalent to ...") as a bulleted list under Heading 2
    "Shorthands", and the man page's paragraphs as body text, all in the page's order
    and words."""
    sections = man_sections(source)
    document = docx.Document()
    document.core_properties.title = "du: estimate file space usage"
    document.add_paragraph("du: estimate file space usage", style="Title")
    for section in sections:
        if section.name in ("AUTHOR", "COPYRIGHT"):
            continue
        document.add_heading(section.name.title(), level=1)
        if section.name == "DESCRIPTION":
            intro, rest = section.paragraphs[:2], section.paragraphs[2:]
            for text in intro:
                document.add_paragraph(text)
            full = [(n, d) for n, d in section.options if not _is_shorthand(d)]
            short = [(n, d) for n, d in section.options if _is_shorthand(d)]
            document.add_heading("Options", level=2)
            table = document.add_table(rows=1, cols=2)
            table.style = "Table Grid"
            table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Option", "Meaning"
            for name, meaning in full:
                cells = table.add_row().cells
                cells[0].text, cells[1].text = name, meaning
            document.add_heading("Shorthands", level=2)
            for name, meaning in short:
                document.add_paragraph(f"{name}: {meaning}", style="List Bullet")
            document.add_heading("Sizes and units", level=2)
            for text in rest:
                document.add_paragraph(text)
        else:
            for text in section.paragraphs:
                document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _is_shorthand(meaning: str) -> bool:
    return meaning.startswith(("like ", "equivalent to "))


def df_pptx(source: str) -> bytes:
    """df(1) as a short briefing deck: a title slide, the description as bullets, the
    options as tables of eight rows per slide (Option, What it does), the units and the
    output fields as bullets; the SEE ALSO lines go into the last slide's speaker notes."""
    sections = man_sections(source)
    description = _section(sections, "DESCRIPTION")
    options = _section(sections, "OPTIONS")
    presentation = Presentation()
    title_layout, bullets_layout, title_only = (presentation.slide_layouts[i] for i in (0, 1, 5))

    slide = presentation.slides.add_slide(title_layout)
    slide.shapes.title.text = "df: report file system space usage"
    slide.placeholders[1].text = _section(sections, "NAME").paragraphs[0]

    def bullet_slide(title: str, items: list[str]) -> object:
        slide = presentation.slides.add_slide(bullets_layout)
        slide.shapes.title.text = title
        frame = slide.placeholders[1].text_frame
        frame.text = items[0]
        for item in items[1:]:
            frame.add_paragraph().text = item
        for paragraph in frame.paragraphs:
            for run in paragraph.runs:
                run.font.size = Pt(16)
        return slide

    bullet_slide("What df shows", description.paragraphs)
    rows = options.options
    for part, start in enumerate(range(0, len(rows), 8), start=1):
        slide = presentation.slides.add_slide(title_only)
        slide.shapes.title.text = f"Options ({part} of {(len(rows) + 7) // 8})"
        chunk = rows[start : start + 8]
        shape = slide.shapes.add_table(
            len(chunk) + 1, 2, Inches(0.5), Inches(1.6), Inches(9), Inches(0.4 * (len(chunk) + 1))
        )
        table = shape.table
        table.cell(0, 0).text, table.cell(0, 1).text = "Option", "What it does"
        for index, (name, meaning) in enumerate(chunk, start=1):
            table.cell(index, 0).text, table.cell(index, 1).text = name, meaning
    units = [p for p in options.paragraphs if "SIZE" in p or "Display values" in p]
    bullet_slide("Sizes and units", units)
    fields = [p for p in options.paragraphs if p.startswith("FIELD_LIST")]
    last = bullet_slide("Choosing the output columns", fields)
    see_also = " ".join(_section(sections, "SEE ALSO").paragraphs)
    last.notes_slide.notes_text_frame.text = see_also  # type: ignore[attr-defined]
    presentation.core_properties.title = "df: report file system space usage"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


# ---- tables -----------------------------------------------------------------------------


def _data_lines(path: str) -> Iterator[str]:
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield line


def protocols_rows(source: str) -> list[list[str]]:
    """/etc/protocols as (protocol, number, aliases, comment): whitespace-separated
    fields, the comment after "#"."""
    rows = [["protocol", "number", "aliases", "comment"]]
    for line in _data_lines(source):
        fields, _, comment = line.partition("#")
        name, number, *aliases = fields.split()
        rows.append([name, number, " ".join(aliases), comment.strip()])
    return rows


def tab_rows(source: str, header: list[str]) -> list[list[str]]:
    """A tzdata ``.tab`` file's tab-separated lines under ``header`` (short rows padded)."""
    rows = [header]
    for line in _data_lines(source):
        values = line.split("\t")
        rows.append(values + [""] * (len(header) - len(values)))
    return rows


def csv_bytes(rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


def xlsx_bytes(sheets: dict[str, list[list[str]]], title: str) -> bytes:
    workbook = Workbook()
    for index, (name, rows) in enumerate(sheets.items()):
        sheet = workbook.worksheets[0] if index == 0 else workbook.create_sheet()
        sheet.title = name
        for row in rows:
            sheet.append(row)
    workbook.properties.title = title
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def build(out: Path) -> dict[str, int]:
    """Write every file; returns their sizes in bytes by relative path."""
    corpus, reference = out / "corpus", out / "ocr_reference"
    for folder in (corpus, reference):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    src = {name: path for name, (_, path) in SOURCES.items()}
    files: dict[Path, bytes] = {
        corpus / "sort.pdf": man_pdf(src["sort.pdf"]),
        corpus / "libtasn1-utilities.pdf": cut_pdf(src["libtasn1-utilities.pdf"], *TASN1_PAGES),
        corpus / "mime-spec-scan.pdf": scanned_pdf(src["mime-spec-scan.pdf"], *SCAN_PAGES),
        reference / "mime-spec-pages.pdf": cut_pdf(src["mime-spec-pages.pdf"], *SCAN_PAGES),
        corpus / "du-guide.docx": du_docx(src["du-guide.docx"]),
        corpus / "df-briefing.pptx": df_pptx(src["df-briefing.pptx"]),
        corpus / "protocols.csv": csv_bytes(protocols_rows(src["protocols.csv"])),
        corpus / "countries.csv": csv_bytes(tab_rows(src["countries.csv"], ["code", "country"])),
        corpus / "timezones.xlsx": xlsx_bytes(
            {
                "zone1970": tab_rows(
                    src["timezones.xlsx"], ["countries", "coordinates", "timezone", "comments"]
                )
            },
            "Time zones (tzdata zone1970.tab)",
        ),
    }
    for name in ("bbv-manual.html", "node-os.html"):
        files[corpus / name] = Path(src[name]).read_bytes()
    for path, data in files.items():
        path.write_bytes(data)
    return {str(p.relative_to(out)): len(d) for p, d in sorted(files.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    sizes = build(args.out)
    for name, size in sizes.items():
        print(f"{size:>9,}  {name}")
    print(f"{sum(sizes.values()):>9,}  total")


if __name__ == "__main__":
    main()
