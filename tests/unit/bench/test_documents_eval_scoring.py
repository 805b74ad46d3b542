"""The real-documents eval's scoring on small fixed inputs: locators (pages, heading
paths, row ranges), the first citation, one-line table answers, per-format and per-half
figures, and nDCG over pages. No stack: the Answer messages are built here."""

from __future__ import annotations

import pytest

from services.bench.documents_eval import (
    DocQuestion,
    breakdown,
    exact_row,
    first_citation,
    one_line,
    parse_rows,
    place_ndcg,
    ranked_places,
    refused,
    same_locator,
    score,
    summarise,
)
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb


def _q(id: str = "q", fmt: str = "csv", kind: str = "cell", half: str = "study", *,
       locator: str = "row 37", answers: tuple[str, ...] = ("89",)) -> DocQuestion:  # fmt: skip
    return DocQuestion(id, "What protocol number is ospf?", answers, "protocols.csv",
                       locator, fmt, kind, half)  # fmt: skip


def _answer(text: str, *cites: tuple[int, str, str]) -> pb.Answer:
    return pb.Answer(
        text=text,
        outcome=pb.ANSWER_OUTCOME_ANSWERED,
        citations=[
            cpb.Citation(passage_id=n, document_id=doc, section=section)
            for n, doc, section in cites
        ],
    )


@pytest.mark.parametrize(
    ("locator", "parsed"),
    [
        ("rows 2-201", (None, 2, 201)),
        ("row 12", (None, 12, 12)),
        ("sheet zone1970, rows 202-313", ("zone1970", 202, 313)),
        ("sheet zone1970, row 294", ("zone1970", 294, 294)),
        ("rows 2\u2013201", (None, 2, 201)),  # an en dash
        ("sheet zone1970", None),
        ("page 3", None),
    ],
)
def test_row_locators_are_parsed(locator: str, parsed: object) -> None:
    assert parse_rows(locator) == parsed


@pytest.mark.parametrize(
    ("cited", "gold", "right"),
    [
        ("page 3", "page 3", True),
        ("page 13", "page 3", False),
        ("section OS# > os.EOL#", "section OS# > os.EOL#", True),
        ("section OS > os.EOL", "section OS# > os.EOL#", True),  # markdown drops the #
        ("slide 3 · Options (1 of 3)", "slide 3", True),
        ("slide 13 · Options", "slide 3", False),
        ("Guide > section Options", "section Options", True),
        ("section Options > More", "section Options", False),
        ("rows 2-201", "row 37", True),
        ("rows 202-250", "row 37", False),
        ("", "row 37", False),  # the whole file cited: not the row
        ("sheet zone1970, rows 202-313", "sheet zone1970, row 294", True),
        ("sheet other, rows 202-313", "sheet zone1970, row 294", False),
        ("sheet zone1970", "sheet zone1970, row 294", False),
        ("anything", "", False),
        # A row cited inside the gold section names that place more closely.
        ("section Description > Options, row 10", "section Description > Options", True),
        ("slide 4 · Options (2 of 3), row 3", "slide 4", True),
        ("section Description > Other, row 10", "section Description > Options", False),
        ("slide 14, row 3", "slide 4", False),
        # A row of another table is not the gold row, whatever its number.
        ("section Sizes, row 10", "section Options, row 10", False),
        ("section Options, rows 8-12", "section Options, row 10", True),
    ],
)
def test_a_locator_is_right_by_page_heading_path_or_row_range(
    cited: str, gold: str, right: bool
) -> None:
    assert same_locator(cited, gold) is right


def test_an_exact_row_is_the_gold_row_alone() -> None:
    assert exact_row("row 37", "row 37")
    assert exact_row("sheet zone1970, rows 294-294", "sheet zone1970, row 294")
    assert not exact_row("rows 2-201", "row 37")
    assert not exact_row("row 36", "row 37")
    assert not exact_row("page 1", "page 1")


def test_the_first_citation_is_the_one_the_text_names_first() -> None:
    answer = _answer("It is 89 [2], see also [1].", (1, "a", "x"), (2, "b", "y"))
    first = first_citation(answer.text, list(answer.citations))
    assert first is not None and first.document_id == "b"
    plain = _answer("89", (1, "a", "x"), (2, "b", "y"))
    first = first_citation(plain.text, list(plain.citations))
    assert first is not None and first.document_id == "a"
    assert first_citation("89", []) is None


def test_one_line_means_no_line_break_and_thirty_words_at_most() -> None:
    assert one_line("protocol: ospf; number: 89 [1]")
    assert not one_line("protocol: ip; number: 0\nprotocol: ospf; number: 89")
    assert one_line(" ".join(["w"] * 30) + " [1]")
    assert not one_line(" ".join(["w"] * 31))


def test_a_pasted_table_contains_the_gold_but_is_neither_one_line_nor_at_the_row() -> None:
    paste = "\n".join(f"protocol: p{i}; number: {i}" for i in range(80, 100))
    record = score(_q(), _answer(paste + " [1]", (1, "protocols.csv", "")))
    assert record["contains"] and not record["one_line"] and not record["right_locator"]
    cell = score(_q(), _answer("ospf: number 89 [1]", (1, "protocols.csv", "row 37")))
    assert cell["contains"] and cell["one_line"] and cell["right_locator"] and cell["exact_row"]
    block = score(_q(), _answer("ospf: number 89 [1]", (1, "protocols.csv", "rows 2-201")))
    assert block["right_locator"] and not block["exact_row"]
    other = score(_q(), _answer("89 [1]", (1, "countries.csv", "row 37")))
    assert not other["right_locator"]


def test_figures_per_format_and_half() -> None:
    questions = [
        _q("a", "csv", "cell", "study"),
        _q("b", "csv", "cell", "blind"),
        _q("c", "pdf", "prose", "study", locator="page 1", answers=("sorted",)),
        _q("d", "scan", "prose", "blind", locator="page 2", answers=("mime",)),
    ]
    records = [
        score(questions[0], _answer("89 [1]", (1, "protocols.csv", "rows 2-201"))),
        score(questions[1], _answer("a\nb 89 c d", (1, "protocols.csv", "rows 2-201"))),
        score(questions[2], _answer("not it at all [1]", (1, "sort.pdf", "page 1"))),
        refused(questions[3], "NOT_FOUND"),
    ]
    everything = summarise(questions, records)
    assert everything["questions"] == 4 and everything["answered"] == 3
    assert everything["correct"] == 2 and everything["refused"] == 1
    assert everything["precision"] == pytest.approx(2 / 3, abs=1e-4)
    assert everything["table_answers"] == 2 and everything["one_line_rate"] == 0.5
    assert everything["right_locator"] == 2  # the pdf answer cites the wrong document
    assert everything["median_words"] == 4
    assert everything["row_questions"] == 2 and everything["exact_row_rate"] == 0.0
    split = breakdown(questions, records)
    assert set(split["formats"]) == {"csv", "pdf", "scan"}
    assert split["formats"]["scan"]["refused"] == 1
    assert split["formats"]["scan"]["one_line_rate"] is None
    assert split["halves"]["study"]["all"]["questions"] == 2
    assert split["halves"]["blind"]["formats"]["csv"]["correct"] == 1


def test_ndcg_over_pages_counts_only_the_gold_page_of_the_gold_document() -> None:
    hits = [
        rpb.SearchHit(document_id="scan.pdf", section="page 1"),
        rpb.SearchHit(document_id="scan.pdf", section="page 1"),
        rpb.SearchHit(document_id="other.pdf", section="page 2"),
        rpb.SearchHit(document_id="scan.pdf", section="page 2"),
    ]
    places = ranked_places(hits)
    assert places == ["scan.pdf | page 1", "other.pdf | page 2", "scan.pdf | page 2"]
    assert place_ndcg(places, "scan.pdf", "page 1") == 1.0
    assert place_ndcg(places, "scan.pdf", "page 2") == pytest.approx(0.5)
    assert place_ndcg(places, "scan.pdf", "page 3") == 0.0
    assert place_ndcg([], "scan.pdf", "page 1") == 0.0
