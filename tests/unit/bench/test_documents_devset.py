"""The real-documents dev set is well-formed, and every gold answer is where its locator
says: in the section the product's extraction gives that locator today, in the row of a
table as the file numbers it, on the page of the scan's text-layer original."""

from __future__ import annotations

import csv
import io
from collections import Counter
from functools import cache

import openpyxl
import pytest
from pypdf import PdfReader

from services.bench.answers import contains
from services.bench.documents_eval import (
    DEFAULT_DATASET,
    FLOORS,
    MIN_QUESTIONS,
    DevSet,
    DocQuestion,
    assign_halves,
    check_devset,
    format_counts,
    parse_rows,
    read_devset,
    same_locator,
)
from services.retrieval.extract import Extracted, extract

# The whole corpus, kept small in the repository.
MAX_CORPUS_BYTES = 1_500_000


@cache
def _devset() -> DevSet:
    return read_devset(DEFAULT_DATASET)


@cache
def _extracted(name: str) -> Extracted:
    path = DEFAULT_DATASET / "corpus" / name
    return extract(path.read_bytes(), name)


def test_the_dev_set_is_well_formed_and_meets_its_floors() -> None:
    devset = _devset()
    assert check_devset(devset) == []
    counts = format_counts(devset.questions)
    assert len(devset.questions) >= MIN_QUESTIONS
    assert all(counts[group] >= floor for group, floor in FLOORS.items()), counts
    assert {p.name for p in devset.files} >= {q.document for q in devset.questions}
    assert {q.id: q.half for q in devset.questions} == assign_halves(
        [(q.id, q.format) for q in devset.questions]
    )
    for fmt in {q.format for q in devset.questions}:
        halves = Counter(q.half for q in devset.questions if q.format == fmt)
        assert abs(halves["study"] - halves["blind"]) <= 1, (fmt, halves)
    size = sum(p.stat().st_size for p in (*devset.files, *devset.reference))
    assert size <= MAX_CORPUS_BYTES


def test_the_check_names_what_is_wrong() -> None:
    devset = _devset()
    broken = DocQuestion("x", "?", ("!",), "missing.pdf", "", "tiff", "prose", "later")
    problems = check_devset(
        DevSet(devset.root, devset.files, (broken,), devset.queries, devset.reference)
    )
    text = " ".join(problems)
    for expected in ("not in corpus/", "format 'tiff'", "half 'later'", "no locator",
                     "empty once normalised", "fewer than 48"):  # fmt: skip
        assert expected in text


def _gold_text(q: DocQuestion) -> str:
    devset = _devset()
    path = devset.root / "corpus" / q.document
    if q.format == "scan":
        page = int(q.locator.removeprefix("page "))
        return PdfReader(devset.reference[0]).pages[page - 1].extract_text()
    if q.format in ("csv", "xlsx"):
        found = parse_rows(q.locator)
        assert found is not None
        sheet, row, _ = found
        if q.format == "csv":
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
        else:
            book = openpyxl.load_workbook(path, read_only=True)
            grid = book[sheet] if sheet else book.worksheets[0]
            rows = [[str(v or "") for v in r] for r in grid.iter_rows(values_only=True)]
        return " ".join(rows[row - 1])
    sections = [s for s in _extracted(q.document).sections if same_locator(s.locator, q.locator)]
    assert sections, f"{q.id}: extraction gives no section {q.locator!r}"
    return " ".join(s.text for s in sections)


@pytest.mark.parametrize("question", _devset().questions, ids=lambda q: q.id)
def test_each_gold_answer_is_at_its_locator(question: DocQuestion) -> None:
    assert contains(_gold_text(question), question.answers), question.id


def test_the_scan_has_no_text_layer_and_its_original_has_the_same_pages() -> None:
    devset = _devset()
    scan = next(p for p in devset.files if p.name == "mime-spec-scan.pdf")
    pages = PdfReader(scan).pages
    assert all(not page.extract_text().strip() for page in pages)
    assert len(PdfReader(devset.reference[0]).pages) == len(pages)
