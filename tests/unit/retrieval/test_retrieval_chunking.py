"""Normalisation and structure-aware chunking."""

from __future__ import annotations

import itertools

from services.retrieval import ContentType, chunk_text, embedding_text, normalise

MD = ContentType.MARKDOWN


def test_normalise_unifies_newlines_and_strips_invisible_and_control_characters():
    raw = "Cafe\u0301 \u200bplan\r\n\r\n\r\n\r\nnext\x07 line \t\n"
    assert normalise(raw) == "Café plan\n\nnext line"


def test_markdown_sections_keep_their_heading():
    text = normalise(
        "Preamble text.\n\n# Renewals\n\nIntro about renewals.\n\n## Pricing ##\n\n"
        "Discount tiers.\n\nSetext Heading\n--------------\n\nBody under setext."
    )
    chunks = chunk_text(text, MD)
    assert [(c.ordinal, c.section, c.text) for c in chunks] == [
        (0, "", "Preamble text."),
        (1, "Renewals", "Intro about renewals."),
        (2, "Pricing", "Discount tiers."),
        (3, "Setext Heading", "Body under setext."),
    ]


def test_fenced_code_is_one_block_and_its_hash_lines_are_not_headings():
    text = "# Setup\n\n```bash\n# install\npip install tandem\n```\n\nThen run it."
    chunks = chunk_text(text, MD)
    assert len(chunks) == 1 and chunks[0].section == "Setup"
    assert "# install" in chunks[0].text and chunks[0].text.endswith("Then run it.")


def test_markup_only_sections_produce_no_chunks():
    assert chunk_text("# Title\n\n---\n\n## Empty\n\n***", MD) == []


def test_plain_text_splits_on_paragraphs_only():
    chunks = chunk_text("# not a heading\n\nsecond paragraph", ContentType.PLAIN_TEXT)
    assert [(c.section, c.text) for c in chunks] == [("", "# not a heading\n\nsecond paragraph")]


def test_long_sections_are_cut_to_size_with_overlap_and_keep_their_section():
    sentences = " ".join(f"Sentence {i} is about seat counts and discounts." for i in range(60))
    chunks = chunk_text(f"# Pricing\n\n{sentences}", MD, chunk_chars=300, overlap_chars=60)
    assert len(chunks) > 5
    assert all(len(c.text) <= 300 and c.section == "Pricing" for c in chunks)
    for previous, current in itertools.pairwise(chunks):
        head = current.text.split(" Sentence ")[0]
        assert head and head in previous.text  # the overlap repeats the previous tail
    covered = " ".join(c.text for c in chunks)
    assert all(f"Sentence {i} " in covered for i in range(60))


def test_a_word_longer_than_a_chunk_is_hard_split():
    chunks = chunk_text("x" * 950, ContentType.PLAIN_TEXT, chunk_chars=400, overlap_chars=0)
    assert [len(c.text) for c in chunks] == [400, 400, 150]


def test_chunks_never_cross_sections():
    text = "# A\n\n" + "alpha " * 30 + "\n\n# B\n\n" + "beta " * 30
    chunks = chunk_text(text, MD, chunk_chars=1000)
    assert [(c.section, c.text.split()[0]) for c in chunks] == [("A", "alpha"), ("B", "beta")]


def test_embedding_text_carries_title_and_section_and_respects_the_limit():
    assert embedding_text("Guide", "Setup", "body", 100) == "Guide — Setup\nbody"
    assert embedding_text("", "", "body", 100) == "body"
    assert len(embedding_text("T", "S", "x" * 500, 100)) == 100


def _table(rows: int) -> str:
    lines = ["| row | protocol | number | aliases |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {n} | proto-{n} | {n * 7} | ALIAS-{n} long enough to matter |"
        for n in range(2, rows + 2)
    ]
    return "\n".join(lines)


def test_a_table_is_cut_between_rows_and_every_chunk_repeats_its_header():
    table = _table(40)
    text = f"## sheet Protocols\n\nThe protocols this host knows.\n\n{table}\n\nAfter the table."
    chunks = chunk_text(text, ContentType.MARKDOWN, chunk_chars=400, overlap_chars=120)
    rows = [c for c in chunks if "| --- |" in c.text]
    assert len(rows) > 3
    body = table.split("\n")[2:]
    seen: list[str] = []
    for chunk in rows:
        assert chunk.section == "sheet Protocols"
        assert len(chunk.text) <= 400
        lines = chunk.text.split("\n")
        at = lines.index("| row | protocol | number | aliases |")
        assert lines[at + 1] == "| --- | --- | --- | --- |"
        # every other line of a table chunk is a whole row, none cut, none repeated
        table_lines = [ln for ln in lines[at + 2 :] if ln.startswith("|")]
        assert all(ln in body for ln in table_lines), table_lines
        seen += table_lines
    assert seen == body
    # no overlap carries a piece of a row into the prose after the table
    last = chunks[-1].text
    assert last.endswith("After the table.") and "ALIAS" not in last.split("\n")[-1]


def test_a_small_table_stays_whole_beside_its_paragraph():
    table = _table(2)
    chunks = chunk_text(f"Intro line.\n\n{table}", ContentType.MARKDOWN, chunk_chars=1000)
    assert [c.text for c in chunks] == [f"Intro line.\n\n{table}"]
