"""Extractive answers that stop at the answer: the unit quoted is the sentence, the option
line (an option with its description), the list item or the line of a listing, never its
neighbours; a lead-in ("… in the following range:") is stated with what it introduces,
and a heading or an introduction is not an answer about what follows it.

The option texts are pieces of real man pages (``tests/manpages.py``).
"""

from __future__ import annotations

import pytest

from services.common.llm import Passage
from services.router.offline._extractive import LEAD_WORDS, synthesize
from services.router.offline._text import split_sentences, split_units
from tests.manpages import BZIP2_OPTIONS, SED_OPTIONS


def _answer(question: str, text: str, title: str = "bzip2") -> str:
    answer = synthesize(question, (Passage("1", text, title, 1.0),), (), False)
    return " ".join(s.text for s in answer.sentences)


def test_an_option_line_is_one_unit_with_its_description() -> None:
    units = split_sentences(BZIP2_OPTIONS)
    assert "-k --keep Keep (don't delete) input files during compression or decompression." in (
        units
    )
    assert "-c --stdout Compress or decompress to standard output." in units
    # never two options in one unit
    assert all(sum(u.count(o) for o in ("--stdout", "--keep", "--small")) <= 1 for u in units)


def test_an_option_with_a_bracketed_default_is_still_described_by_the_next_paragraph() -> None:
    # valgrind's BBV manual (an HTML <dt> over its <dd>): the default in brackets is a note
    # on the option, not its description.
    text = (
        "BBV-specific command-line options are:\n\n"
        "--bb-out-file=<name> [default: bb.out.%p]\n\n"
        "This option selects the name of the basic block vector file.\n\n"
        "--pc-out-file=<name> [default: pc.out.%p]\n\n"
        "This option selects the name of the PC file."
    )
    assert split_sentences(text)[1:] == (
        "--bb-out-file=<name> [default: bb.out.%p] This option selects the name of the basic "
        "block vector file.",
        "--pc-out-file=<name> [default: pc.out.%p] This option selects the name of the PC file.",
    )


def test_an_option_named_alone_is_described_by_the_next_paragraph() -> None:
    units = split_sentences(SED_OPTIONS)
    assert units == (
        "-n, --quiet, --silent suppress automatic printing of pattern space",
        "--debug annotate program execution",
        "-i[SUFFIX], --in-place[=SUFFIX] edit files in place (makes backup if SUFFIX supplied)",
        "-z, --null-data separate lines by NUL characters",
    )


def test_an_option_run_into_the_previous_sentence_starts_its_own_unit() -> None:
    # as PDF text and chunk overlaps join them (sed(1), with the PDF's minus signs)
    text = (
        "-s, --separate consider files as separate rather than as a single stream. "
        "\u2212z, \u2212\u2212null-data separate lines by NUL characters."
    )
    units = split_units(text)
    assert [u.kind for u in units] == ["option", "option"]
    assert units[1].text.startswith("\u2212z, \u2212\u2212null-data")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Which option keeps the input files?",
            "-k --keep Keep (don't delete) input files during compression or decompression.",
        ),
        (
            "How do I reduce memory usage?",
            "-s --small Reduce memory usage, for compression, decompression and testing. Files "
            "are decompressed and tested using a modified algorithm which only requires 2.5 "
            "bytes per block byte.",
        ),
        (
            "Which option writes to standard output?",
            "-c --stdout Compress or decompress to standard output.",
        ),
    ],
)
def test_an_option_question_is_answered_by_that_option_line_only(
    question: str, expected: str
) -> None:
    assert _answer(question, BZIP2_OPTIONS) == expected


def test_a_sed_option_question_is_answered_by_its_line() -> None:
    answer = _answer("Which option edits files in place?", SED_OPTIONS, "sed")
    assert answer == (
        "-i[SUFFIX], --in-place[=SUFFIX] edit files in place (makes backup if SUFFIX supplied)."
    )


def test_list_items_never_share_a_unit() -> None:
    text = (
        "The archive may be compressed with one of:\n"
        "  * gzip, which writes files ending in .gz\n"
        "  * bzip2, which writes files ending in .bz2\n"
        "  1. xz, which writes files ending in .xz\n"
        "  2) zstd, which writes files\n"
        "     ending in .zst"
    )
    units = split_units(text)
    assert [u.kind for u in units] == ["sentence", "item", "item", "item", "item"]
    assert units[4].text == "zstd, which writes files ending in .zst"
    assert _answer("Which suffix do bzip2 files end in?", text, "formats") == (
        "bzip2, which writes files ending in .bz2."
    )


def test_each_line_of_a_listing_is_its_own_unit() -> None:
    # lines that break where the next word would still have fitted: a listing, not prose
    text = (
        "smtp      25/tcp   mail\n"
        "submission 587/tcp  message submission\n"
        "pop3      110/tcp  post office protocol version 3\n"
        "imap2     143/tcp  interactive mail access protocol v2"
    )
    assert [u.kind for u in split_units(text)] == ["line"] * 4
    assert _answer("Which port does message submission use?", text, "ports") == (
        "submission 587/tcp message submission."
    )


RANGES = (
    "Port numbers\n"
    "\n"
    "The port numbers are divided into three ranges. The Dynamic and/or Private Ports are "
    "those in the following range:\n"
    "\n"
    "49152 through 65535\n"
    "\n"
    "These ports are never assigned."
)


def test_a_lead_in_is_stated_with_the_range_it_introduces() -> None:
    assert _answer("Which range do the dynamic private ports use?", RANGES, "ports") == (
        "The Dynamic and/or Private Ports are those in the following range: 49152 through 65535."
    )


def test_a_lead_in_is_stated_with_its_items_bounded() -> None:
    text = "bzip2 accepts these block sizes:\n" + "\n".join(
        f"  - -{n} selects a block size of {n}00 k" for n in range(1, 10)
    )
    answer = _answer("Which block sizes does bzip2 accept?", text)
    assert answer.startswith("bzip2 accepts these block sizes: -1 selects a block size of 100 k;")
    assert "-6 selects" in answer and "-9 selects" not in answer  # bounded
    assert len(answer.split()) <= LEAD_WORDS


def test_a_later_unit_that_covers_the_question_beats_the_lead_in() -> None:
    text = (
        "The options below control how bzip2 compresses:\n"
        "\n"
        "-k --keep\n"
        "       Keep (don't delete) input files during compression or decompression.\n"
        "\n"
        "-s --small\n"
        "       Reduce memory usage, for compression, decompression and testing."
    )
    assert _answer("Which option keeps input files during compression?", text).startswith(
        "-k --keep"
    )


def test_a_heading_is_not_the_answer_to_a_question_about_its_section() -> None:
    text = (
        "Memory management in bzip2\n"
        "bzip2 compresses large files in blocks. Compression uses about 7600 k of memory "
        "at the largest block size."
    )
    assert _answer("How much memory does bzip2 compression use?", text) == (
        "Compression uses about 7600 k of memory at the largest block size."
    )
