"""Which table row answers, on real text (issue 48): a question that names no column is
answered by the row that stands out in the best passage, its other cells in one line;
two question words that a label writes as one word name that column.

Pieces are copied from the real-documents dev set's files (df(1) as slides, tzdata's
tables), asked in other words than its questions."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline import NO_ANSWER
from services.router.offline._extractive import synthesize

# df(1)'s description as the slide deck holds it.
DF_DESCRIPTION = Passage(
    "1",
    "This manual page documents the GNU version of df. df displays the amount of space "
    "available on the file system containing each file name argument. If no file name is "
    "given, the space available on all currently mounted file systems is shown.\n"
    "If an argument is the absolute file name of a device node containing a mounted file "
    "system, df shows the space available on that file system rather than on the file "
    "system containing the device node. This version of df cannot show the space "
    "available on unmounted file systems, because on most kinds of systems doing so "
    "requires very nonportable intimate knowledge of file system structures.",
    "df-briefing.pptx",
    0.1,
)


# df(1)'s options as a slide's table.
DF_OPTIONS = Passage(
    "1",
    "| row | Option | What it does |\n| --- | --- | --- |\n"
    "| 4 | --sync | invoke sync before getting usage info |\n"
    "| 5 | --total | elide all entries insignificant to available space, and produce a "
    "grand total |\n"
    "| 6 | -t, --type=TYPE | limit listing to file systems of type TYPE |\n"
    "| 7 | -T, --print-type | print file system type |\n"
    "| 8 | -x, --exclude-type=TYPE | limit listing to file systems not of type TYPE |\n"
    "| 9 | -v | (ignored) |",
    "df-briefing.pptx",
    0.13,
)

# tzdata: zone1970.tab as a sheet, iso3166.tab as a CSV.
ZONES = Passage(
    "1",
    "| row | countries | coordinates | timezone | comments |\n| --- | --- | --- | --- | --- |\n"
    "| 2 | AD | +4230+00131 | Europe/Andorra |  |\n"
    "| 195 | MZ,BI,BW,CD,MW,RW,ZM,ZW | -2558+03235 | Africa/Maputo | Central Africa Time |\n"
    "| 196 | NA | -2234+01706 | Africa/Windhoek |  |\n"
    "| 199 | NG,AO,BJ,CD,CF,CG,CM,GA,GQ,NE | +0627+00324 | Africa/Lagos | West Africa Time |\n"
    "| 200 | NI | +1209-08617 | America/Managua |  |\n"
    "| 201 | NP | +2743+08519 | Asia/Kathmandu |  |",
    "timezones.xlsx",
    0.14,
)
COUNTRIES = Passage(
    "2",
    "| row | code | country |\n| --- | --- | --- |\n"
    "| 2 | AD | Andorra |\n| 3 | AE | United Arab Emirates |\n| 4 | AF | Afghanistan |",
    "countries.csv",
    0.07,
)


def _answer(question: str, *passages: Passage) -> tuple[str, tuple[str, ...]]:
    answer = synthesize(question, passages, [], False)
    text = " ".join(s.text for s in answer.sentences)
    first = next((s.citations for s in answer.sentences if s.citations), ())
    return text, first


def test_a_row_question_naming_no_column_gets_the_row_s_other_cells() -> None:
    # "df" is in no row; the row stands out all the same, in the best passage.
    text, _ = _answer("What does df's --exclude-type do?", DF_OPTIONS)
    assert text == (
        "-x, --exclude-type=TYPE — What it does limit listing to file systems not of type "
        "TYPE (row 8)"
    )


def test_a_row_of_a_lower_ranked_passage_is_not_stated_for_a_question_naming_no_column() -> None:
    options = Passage("2", DF_OPTIONS.text, DF_OPTIONS.title, 0.09)
    text, _ = _answer("What does df's --exclude-type do?", DF_DESCRIPTION, options)
    assert "(row 8)" not in text


def test_a_code_no_other_row_holds_names_its_row_among_stray_matches() -> None:
    # "time" matches comments of other rows; the code is a whole cell of one row only.
    text, _ = _answer("Which time zone does the table give for NP?", ZONES)
    assert "Asia/Kathmandu" in text and "(row 201)" in text


def test_two_words_a_label_writes_as_one_name_its_column() -> None:
    # "time zone" is the sheet's "timezone" column; the country list also holds "AD".
    text, _ = _answer("Which time zone is given for Andorra (AD)?", ZONES, COUNTRIES)
    assert text == "AD — timezone Europe/Andorra (row 2)"


def test_two_rows_each_named_by_a_code_are_not_singled_out() -> None:
    # Two codes, two rows: no cell alone names the row asked for, and "time" matches
    # stray comments: nothing is stated as the answer.
    text, _ = _answer("Which time applies to NP and NI?", ZONES)
    assert text == NO_ANSWER
