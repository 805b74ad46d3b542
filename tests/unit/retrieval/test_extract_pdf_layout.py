"""PDF text as a reader sees it (issue 48 item 2), on real PDFs with known text.

The man pages under tests/fixtures/pdf were rendered by groff and the libtasn1 pages cut
from the Debian package's manual (tests/fixtures/pdf/README.md says how); the two files
made here are drawn by reportlab, line by line, the way report writers do. Each test
failed on the extractor before this change (pypdf's `extract_text()`), as recorded in
the branch's report.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from services.retrieval.extract import Extracted, extract

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pdf"


def read(name: str) -> Extracted:
    return extract((FIXTURES / name).read_bytes(), name)


def whole(got: Extracted) -> str:
    return "\n\n".join(section.text for section in got.sections)


def paragraphs(got: Extracted) -> list[str]:
    return [p for section in got.sections for p in section.text.split("\n\n")]


def entry(got: Extracted, term: str) -> str:
    """The paragraph that starts with a definition list's term."""
    found = [p for p in paragraphs(got) if p.split("\n", 1)[0] == term]
    assert len(found) == 1, f"{term!r} opens {len(found)} paragraphs"
    return found[0]


# -- words ------------------------------------------------------------------------------


def test_kerned_words_are_read_whole_and_neighbouring_words_apart():
    text = whole(read("bzip2.pdf"))
    assert "algorithm, and Huffman coding." in text
    assert "better than that achieved by more conventional LZ77/LZ78-based" in text
    assert "a list of file names to accompany the command-line flags" in text
    for glitch in ("Huf fman", "achie ved", "con ventional", "accompan y", "w arning"):
        assert glitch not in text


def test_option_names_in_a_bold_font_are_not_split_where_the_font_changes():
    text = whole(read("cp.pdf"))
    for option in ("-a, --archive", "--preserve=all", "-L, --dereference", "-R, -r, --recursive"):
        assert option in text


def test_minus_signs_in_option_names_read_as_ascii_hyphens():
    text = whole(read("bzip2-minus-signs-pages-2-3.pdf"))
    assert "\u2212" not in text
    assert "-q --quiet\nSuppress non-essential warning messages." in text
    assert "--repetitive-fast --repetitive-best" in text


# -- hyphenation ------------------------------------------------------------------------


def test_words_hyphenated_at_line_ends_are_joined():
    bzip2 = whole(read("bzip2.pdf"))
    assert "the PPM family of statistical compressors." in bzip2
    assert "has the same modification date, permissions" in bzip2
    assert "bzip2 complains that it cannot guess the name" in bzip2
    gpl = whole(read("gpl3-preamble-two-column.pdf"))
    assert "By contrast, the GNU General Public License is intended" in gpl
    assert "we are referring to freedom, not price" in gpl
    for broken in ("compres-", "modifica-", "con-\ntrast", "con- trast"):
        assert broken not in bzip2 + gpl


def _wrapped(lines: list[str]) -> bytes:
    """One column of justified-looking lines, each drawn by reportlab at the left margin."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    y = 780.0
    for line in lines:
        pdf.drawString(72, y, line)
        y -= 14
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_a_hyphen_the_document_writes_into_the_word_is_kept_at_a_line_end():
    data = _wrapped(
        [
            "The archive is mounted read-only so that nothing in it changes while it is read-",
            "only by the backup and the snapshot is taken in a state that is always consistent.",
            "Use --keep to keep the input files; compression never touches a file marked read-",
            "only, and a failed run is reported with the name of the file it stopped at, then it",
            "exits with status two.",
        ]
    )
    text = whole(extract(data, "mount.pdf"))
    assert "while it is read-only by the backup" in text
    assert "touches a file marked read-only, and a failed run" in text
    assert "readonly" not in text


# -- running headers and footers --------------------------------------------------------


def test_running_headers_and_page_numbers_are_dropped():
    got = read("bzip2.pdf")
    assert len(got.sections) == 5
    for section in got.sections:
        assert "General Commands Manual" not in section.text
        assert "bzip2(1)" not in section.text
        assert not any(line.strip().isdigit() for line in section.text.splitlines())
    assert got.sections[0].text.startswith("NAME\n\nbzip2, bunzip2 - a block-sorting file")


def test_running_chapter_titles_are_dropped_though_their_text_changes_by_chapter():
    got = read("libtasn1-pages-4-10.pdf")
    text = whole(got)
    assert "Chapter 2: ASN.1 structure handling" not in text
    assert "Chapter 3: Utilities" not in text
    # The chapters' own titles, in the body, stay.
    assert "2 ASN.1 structure handling" in text
    assert "3 Utilities" in text


def test_a_footer_of_the_man_page_source_and_date_is_dropped():
    text = whole(read("cp.pdf"))
    assert "GNU coreutils 9.1" not in text
    assert "September 2022" not in text
    assert "User Commands" not in text


# -- definition lists -------------------------------------------------------------------


def test_an_option_and_its_description_are_one_paragraph_apart_from_the_next_option():
    got = read("bzip2.pdf")
    keep = entry(got, "-k --keep")
    assert keep == (
        "-k --keep\nKeep (don\u2019t delete) input files during compression or decompression."
    )
    force = entry(got, "-f --force")
    assert "Force overwrite of output files." in force
    assert "This is how GNU gzip behaves." in force  # its second paragraph stays with it
    assert "--keep" not in force
    assert "-z --compress" not in entry(got, "-d --decompress")


def test_a_tag_and_its_text_on_one_line_are_one_entry():
    got = read("cp.pdf")
    assert entry(got, "-b") == "-b\nlike --backup but does not accept an argument"
    assert entry(got, "-a, --archive") == "-a, --archive\nsame as -dR --preserve=all"
    force = entry(got, "-f, --force")
    assert force.endswith("(this option is ignored when the -n option is also used)")


# -- columns ----------------------------------------------------------------------------

LEFT = [
    "bzip2 compresses files using the",
    "Burrows-Wheeler block sorting text",
    "compression algorithm, and Huffman",
    "coding. Compression is generally",
    "considerably better than that achieved",
    "by more conventional compressors.",
    "The command-line options are",
    "deliberately very similar to those of",
    "GNU gzip, but they are not identical.",
]
RIGHT = [
    "Copy SOURCE to DEST, or multiple",
    "SOURCE(s) to DIRECTORY. Mandatory",
    "arguments to long options are",
    "mandatory for short options too. If",
    "an existing destination file cannot be",
    "opened, remove it and try again. This",
    "option is ignored when the -n option",
    "is also used. Never follow symbolic",
    "links in SOURCE.",
]


def _two_columns() -> bytes:
    """A title across the page, then two columns drawn row by row (left line, right
    line), as many report writers emit them."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    pdf.setFont("Helvetica-Bold", 14)
    pdf.drawString(72, 790, "Two tools side by side: bzip2 and cp")
    pdf.setFont("Helvetica", 10)
    y = 760.0
    for left, right in zip(LEFT, RIGHT, strict=True):
        pdf.drawString(72, y, left)
        pdf.drawString(256, y, right)
        y -= 13
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_two_columns_are_read_column_by_column():
    text = whole(extract(_two_columns(), "side-by-side.pdf"))
    left = " ".join(LEFT)
    right = " ".join(RIGHT)
    flat = " ".join(text.split())
    assert flat.startswith("Two tools side by side: bzip2 and cp")
    assert left in flat
    assert right in flat
    assert flat.index(left) < flat.index(right)


# -- what stays -------------------------------------------------------------------------


def test_pages_keep_their_locators_and_extraction_stays_fast():
    data = (FIXTURES / "libtasn1-pages-4-10.pdf").read_bytes()
    started = time.process_time()
    got = extract(data, "libtasn1.pdf")
    per_page = (time.process_time() - started) / 7
    assert [s.locator for s in got.sections] == [f"page {n}" for n in range(1, 8)]
    assert per_page < 0.25  # ~0.03 s measured; the bound catches a pathological walk


def _nested_forms(levels: int, fan_out: int) -> bytes:
    """A page whose text sits in a form drawn `fan_out` times by a form drawn `fan_out`
    times ... `levels` deep: fan_out ** levels strings from a file of a few kilobytes."""
    from pypdf import PdfWriter
    from pypdf.generic import (
        ArrayObject,
        DecodedStreamObject,
        DictionaryObject,
        FloatObject,
        NameObject,
    )

    writer = PdfWriter()
    page = writer.add_blank_page(width=612, height=792)
    font = writer._add_object(  # pypdf has no public way to add a bare object
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )

    def form(content: bytes, resources: DictionaryObject) -> object:
        stream = DecodedStreamObject()
        stream.set_data(content)
        stream.update(
            {
                NameObject("/Type"): NameObject("/XObject"),
                NameObject("/Subtype"): NameObject("/Form"),
                NameObject("/BBox"): ArrayObject([FloatObject(v) for v in (0, 0, 612, 792)]),
                NameObject("/Resources"): resources,
            }
        )
        return writer._add_object(stream)

    inner = form(
        b"BT /F1 10 Tf 72 700 Td (Deep text) Tj ET",
        DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}),
    )
    for _ in range(levels):
        inner = form(
            b"q /X0 Do Q " * fan_out,
            DictionaryObject(
                {NameObject("/XObject"): DictionaryObject({NameObject("/X0"): inner})}
            ),
        )
    content = DecodedStreamObject()
    content.set_data(b"BT /F1 12 Tf 72 760 Td (Top text) Tj ET q /X0 Do Q")
    page[NameObject("/Contents")] = writer._add_object(content)
    page[NameObject("/Resources")] = DictionaryObject(
        {
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font}),
            NameObject("/XObject"): DictionaryObject({NameObject("/X0"): inner}),
        }
    )
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_forms_nested_to_multiply_the_work_are_walked_within_a_bound():
    data = _nested_forms(levels=5, fan_out=40)  # 40**5 = 102 million strings if followed
    assert len(data) < 20_000
    started = time.process_time()
    got = extract(data, "stamps.pdf")
    assert time.process_time() - started < 5
    assert got.sections[0].text == "Top text\n\nDeep text"  # drawn once per place


def test_a_table_with_a_wide_gap_between_its_columns_is_still_read_row_by_row():
    rows = [
        ("-c", "write on standard output"),
        ("-d", "decompress"),
        ("-f", "force overwrite"),
        ("-k", "keep input files"),
        ("-q", "suppress warnings"),
        ("-s", "use less memory"),
        ("-t", "test integrity"),
        ("-v", "be verbose"),
        ("-z", "force compression"),
    ]
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    y = 760.0
    for flag, meaning in rows:
        pdf.drawString(72, y, flag)
        pdf.drawString(320, y, meaning)
        y -= 14
    pdf.showPage()
    pdf.save()
    text = whole(extract(buffer.getvalue(), "flags.pdf"))
    for flag, meaning in rows:
        assert f"{flag}\n{meaning}" in text or f"{flag} {meaning}" in text
