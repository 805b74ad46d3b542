"""Cell answers from tables, without a model: the cell with its row and column labels in
one line, citing the row; a question no row singles out is left to the sentences (and a
table row is never pasted as a "sentence")."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline import NO_ANSWER, cited_row
from services.router.offline._cells import table_cells, tables
from services.router.offline._extractive import synthesize

# Rows of /etc/services (netbase) as extraction writes a CSV of them.
SERVICES = Passage(
    "1",
    "| row | service | port | aliases | comment |\n"
    "| --- | --- | --- | --- | --- |\n"
    "| 23 | smtp | 25/tcp | mail |  |\n"
    "| 87 | submission | 587/tcp |  | Submission [RFC4409] |\n"
    "| 88 | submissions | 465/tcp | ssmtp smtps urd | Submission over TLS |\n"
    "| 90 | imaps | 993/tcp |  | IMAP over SSL |\n"
    "| 91 | pop3s | 995/tcp |  | POP-3 over SSL |",
    "services",
    0.9,
)
PROSE = Passage(
    "2",
    "Mail submission agents listen on a dedicated port. Postfix enables it in master.cf.",
    "Postfix notes",
    0.5,
)


def _answer(question: str, *passages: Passage) -> str:
    return " ".join(s.text for s in synthesize(question, passages, [], False).sentences)


def test_the_cell_is_stated_with_its_row_name_and_column_label_in_one_line():
    assert _answer("What port does submission use?", SERVICES, PROSE) == (
        "submission — port 587/tcp (row 87)"
    )
    assert _answer("What are the aliases of submissions?", SERVICES) == (
        "submissions — aliases ssmtp smtps urd (row 88)"
    )


def test_a_value_names_the_row_when_the_question_asks_the_other_way():
    assert _answer("Which service uses port 993?", SERVICES) == (
        "port 993/tcp — service imaps (row 90)"
    )


def test_a_question_no_row_answers_gets_no_cell_and_no_pasted_rows():
    answer = _answer("What port does gopher use?", SERVICES)
    assert answer == NO_ANSWER
    # with prose beside the table, the prose is read as before; no row is quoted
    answer = _answer("Which file enables the submission port in Postfix?", SERVICES, PROSE)
    assert "master.cf" in answer and "|" not in answer


def test_rows_tied_beyond_a_few_are_a_guess_and_are_not_answered():
    # "tcp" is in every row: it singles none out
    assert table_cells(["port", "tcp"], [SERVICES]) == []


def test_the_citation_finds_the_row_and_names_it_in_the_section():
    (line, passage_id, confidence) = table_cells(["port", "submission"], [SERVICES])[0]
    assert passage_id == "1" and confidence >= 0.9
    row = cited_row(SERVICES.text, line)
    assert row is not None
    assert (
        SERVICES.text[row.start : row.end]
        == "| 87 | submission | 587/tcp |  | Submission [RFC4409] |"
    )
    assert row.section("sheet Services, rows 2-201") == "sheet Services, row 87"
    assert row.section("") == "row 87"
    assert row.section("section Ports") == "section Ports, row 87"
    assert cited_row(SERVICES.text, "Postfix enables it in master.cf.") is None


def test_an_escaped_pipe_stays_inside_its_cell():
    (table,) = tables("| row | a | b |\n| --- | --- | --- |\n| 2 | x\\|y | z |")
    assert table.labels == ("a", "b") and table.rows[0].cells == ("x|y", "z")
    assert table.rows[0].number == "2"


def test_rows_tied_across_tables_answer_from_the_first_ranked_passage_only():
    # Two hosts' service tables both name "echo": one table's line, from the passage
    # search ranked first, not a line from each.
    def services(passage_id: str, port: str) -> Passage:
        return Passage(
            passage_id,
            "| row | service | port |\n| --- | --- | --- |\n"
            f"| 7 | echo | {port} |\n| 8 | discard | 9/tcp |",
            "services",
            0.8,
        )

    answer = _answer("What port does echo use?", services("1", "7/tcp"), services("2", "7/udp"))
    assert answer == "echo — port 7/tcp (row 7)"
