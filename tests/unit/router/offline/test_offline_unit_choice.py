"""Which unit answers, on real text (issue 48's study-half causes, each as a mechanism):
a "which option" question is answered by an option line, a comparison's number is not a
count, a negated word is the text's one word ("unmounted"), a table row's name is the
context of its prose, an option or a code the question writes names its table row.

Pieces are copied from the real-documents dev set's files (libtasn1's manual, valgrind's
BBV chapter, Node's ``os`` page, df(1) as slides, tzdata's tables), with other wording
than its questions."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline import NO_ANSWER
from services.router.offline._extractive import synthesize

# libtasn1 manual, "3.1 Invoking asn1Parser", as extraction reads the PDF page.
ASN1PARSER = Passage(
    "1",
    "3.1 Invoking asn1Parser\n\n"
    "asn1Parser reads a single file with ASN.1 definitions and generates a file with an "
    "array to use with libtasn1 functions.\n\n"
    "Usage: asn1Parser [OPTION] FILE\nRead FILE with ASN.1 definitions and generate\n"
    "a C array that is used with libtasn1 functions.\n\n"
    "Mandatory arguments to long options are mandatory for short options too. "
    "-c, --check checks the syntax only\n"
    "-o, --output=FILE output file\n"
    "-n, --name=NAME array name\n"
    "-h, --help display this help and exit\n"
    "-v, --version output version information and exit",
    "libtasn1-utilities.pdf",
    0.14,
)

# valgrind's BBV chapter: "13.8. Performance" and a sentence of "13.5. Implementation".
BBV_PERFORMANCE = Passage(
    "1",
    "Using this program slows down execution by roughly a factor of 40 over native "
    "execution. This varies depending on the machine used and the benchmark being run.",
    "bbv-manual.html",
    0.14,
)
BBV_IMPLEMENTATION = Passage(
    "2",
    "This is slower (by approximately a factor of two) than a method that instruments at "
    "the basic block level, but there are some complications (especially with rep prefix "
    "detection) that make that method more difficult.",
    "bbv-manual.html",
    0.08,
)

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

# Node's os page: os.setPriority's prose, and the priority constants' table.
SET_PRIORITY = Passage(
    "1",
    "The priority input must be an integer between -20 (high priority) and 19 (low "
    "priority). Due to differences between Unix priority levels and Windows priority "
    "classes, priority is mapped to one of six priority constants in os.constants.priority. "
    "When retrieving a process priority level, this range mapping may cause the return "
    "value to be slightly different on Windows.",
    "node-os.html",
    0.093,
)
PRIORITY_CONSTANTS = Passage(
    "2",
    "| row | Constant | Description |\n| --- | --- | --- |\n"
    "| 6 | PRIORITY_HIGH | The process scheduling priority above PRIORITY_ABOVE_NORMAL and "
    "below PRIORITY_HIGHEST. This corresponds to HIGH_PRIORITY_CLASS on Windows, and a "
    "nice value of -14 on all other platforms. |\n"
    "| 7 | PRIORITY_HIGHEST | The highest process scheduling priority. This corresponds to "
    "REALTIME_PRIORITY_CLASS on Windows, and a nice value of -20 on all other platforms. |",
    "node-os.html",
    0.091,
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


def test_a_which_option_question_is_answered_by_an_option_line() -> None:
    # The introduction shares as many question words; the question asks for an option.
    text, _ = _answer("What asn1Parser option names the generated C array?", ASN1PARSER)
    assert text == "-n, --name=NAME array name."


def test_how_much_slower_than_is_a_comparison_not_a_count_of_slower_things() -> None:
    # "how much slower … than": the number is the slowdown ("slows down … factor of 40"),
    # not a count of something named "slower".
    text, cited = _answer(
        "How much slower than native execution is a program under BBV?",
        BBV_PERFORMANCE,
        BBV_IMPLEMENTATION,
    )
    assert "factor of 40" in text and cited == ("1",)


def test_a_negated_word_is_matched_by_the_text_s_one_word_for_it() -> None:
    text, _ = _answer("Does df show space on file systems that are not mounted?", DF_DESCRIPTION)
    assert "cannot show the space available on unmounted file systems" in text


def test_a_table_row_s_name_is_the_context_of_its_prose() -> None:
    # The row's sentence does not repeat "PRIORITY_HIGH"; its name is the row's first cell,
    # and the next row's sentence, about PRIORITY_HIGHEST, is not stated beside it.
    text, cited = _answer(
        "PRIORITY_HIGH maps to which nice value when not on Windows?",
        SET_PRIORITY,
        PRIORITY_CONSTANTS,
    )
    assert text == (
        "This corresponds to HIGH_PRIORITY_CLASS on Windows, and a nice value of -14 on all "
        "other platforms."
    )
    assert cited == ("2",)


def test_an_option_written_in_the_question_names_its_row() -> None:
    text, _ = _answer("What is df's -v option for?", DF_OPTIONS)
    assert text == "-v — What it does (ignored) (row 9)"
    # case matters: "-T" is another row than "-t"
    text, _ = _answer("What does the -T option of df do?", DF_OPTIONS)
    assert text == "-T, --print-type — What it does print file system type (row 7)"


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
