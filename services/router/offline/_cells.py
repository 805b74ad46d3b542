"""Cell answers: a question answered from a table gets the cell, labelled, in one line.

Extraction stores every table as a markdown table whose first column is the row's number
(``| row | protocol | number | aliases |``), and the chunker repeats that header in every
chunk of rows; so a passage's tables parse back into (column label, value) pairs here,
exactly. A question is read against them in two directions: its words that name a
column ("port", "number") pick the answer's column(s) by the header's labels; its other
words ("submission", "ospf") pick the row by its cells, weighted by how few rows they
match (a word in every row names none of them). The answer is the picked cells with
their labels and the row's own name, in one line, citing the row:

    submission — port 587/tcp (row 87)

Confidence comes before coverage: when no row stands out, when more than a few rows tie,
or when the picked cells are empty, nothing is answered here and the sentence picker
reads the passages as before. A wrong cell stated as fact is worse than no cell.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.common.llm import Passage
from services.router.offline._text import lowered_stems, opening_names, stem, synonyms

# The first column extraction writes: each row's number in its file or table.
ROW_LABEL = "row"
# Tied rows an answer may list ("587/tcp" and "587/udp" for the same service); more is
# a question that does not single out a row.
MAX_ROWS = 3
# The share of the row-naming words (by weight) the picked row must hold.
KEY_AT = 0.5
# A runner-up this close to the best row makes the pick a guess.
MARGIN = 0.15
# What a word found inside a cell (or as another form) counts, beside the cell itself.
INEXACT = 0.8
# Cells quoted when the question names no column (the row is the answer).
MAX_CELLS = 6
# A cell of at least this many words is prose (a constant's description): its row may
# answer by a sentence of it. Rows of values alone answer as cells or not at all.
PROSE_WORDS = 6
# What a question word no row holds weighs, as a share of a word that one row holds.
UNHELD = 0.25

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CITED_ROWS = re.compile(r"\(rows? (\d+)(?:, \d+)*\)\s*$")
_ROW_SPAN = re.compile(r"(?:,\s*)?\brows \d+-\d+$")


@dataclass(frozen=True)
class _Row:
    number: str  # empty for a table written without a row column
    cells: tuple[str, ...]


@dataclass(frozen=True)
class _Table:
    labels: tuple[str, ...]
    rows: tuple[_Row, ...]


def _split(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|").replace("\\\\", "\\") for c in _CELL_SPLIT.split(inner)]


@functools.lru_cache(maxsize=1024)
def tables(text: str) -> tuple[_Table, ...]:
    """The markdown tables in ``text``: a header line over a delimiter line, then the
    lines that start with ``|``. Remembered: the same passages recur across questions."""
    lines = text.split("\n")
    found: list[_Table] = []
    index = 0
    while index + 1 < len(lines):
        if not (lines[index].lstrip().startswith("|") and _DELIMITER.match(lines[index + 1])):
            index += 1
            continue
        labels = _split(lines[index])
        numbered = bool(labels) and labels[0].lower() == ROW_LABEL
        rows: list[_Row] = []
        index += 2
        while index < len(lines) and lines[index].lstrip().startswith("|"):
            cells = _split(lines[index])
            if numbered:
                number = cells[0] if cells and cells[0].isdigit() else ""
                rows.append(_Row(number, tuple(cells[1:])))
            else:
                rows.append(_Row("", tuple(cells)))
            index += 1
        found.append(_Table(tuple(labels[1:] if numbered else labels), tuple(rows)))
    return tuple(found)


@functools.lru_cache(maxsize=16384)
def _stems(text: str) -> frozenset[str]:
    return frozenset(s for _, s in lowered_stems(text))


def _exact(term: str, cell: str) -> bool:
    """The cell is the word itself, or starts with the number asked ("993/tcp")."""
    low = cell.lower()
    return low == term or (
        term[:1].isdigit() and re.match(rf"{re.escape(term)}\b", low) is not None
    )


def _matches(term: str, stems: frozenset[str]) -> bool:
    return stem(term) in stems or any(stem(s) in stems for s in synonyms(term))


@dataclass(frozen=True)
class _Candidate:
    score: float
    passage: Passage
    table: _Table
    row: _Row
    keys: tuple[int, ...]  # the cells that matched the row-naming words
    columns: tuple[int, ...]  # the cells the question names by their labels


def table_cells(
    terms: Sequence[str], passages: Sequence[Passage], names: frozenset[str] = frozenset()
) -> list[tuple[str, str, float]]:
    """The answer from the passages' tables, one line per picked row (at most
    ``MAX_ROWS``), each ``(text, passage id, confidence)``; empty when the tables do not
    single out a row with confidence (the caller then reads sentences). ``names``: the
    options and identifiers the question writes as code (``code_names``): a row whose
    cell opens with one is the row asked about (``_named``)."""
    terms = _compounds(list(dict.fromkeys(t.lower() for t in terms)), passages)
    parsed = [(p, t) for p in passages for t in tables(p.text)]
    if not terms or not parsed:
        return []
    rows = [(p, t, r) for p, t in parsed for r in t.rows]
    named = _named(terms, rows, names, passages[0].id)
    if named:
        lines = [_line(c, terms) for c in named]
        if all(lines):
            return [
                (line, c.passage.id, NAMED_CONFIDENCE)
                for line, c in zip(lines, named, strict=True)
                if line
            ]
    # Terms that name a column of some table: they pick columns, not rows.
    label_terms = {
        term
        for _, table in parsed
        for label in table.labels
        for term in terms
        if _matches(term, _stems(label))
    }
    row_terms = [t for t in terms if t not in label_terms]
    if not row_terms:
        return []
    matched_cells: list[dict[str, list[int]]] = []
    frequency: dict[str, int] = {}
    for _, _, row in rows:
        hits: dict[str, list[int]] = {}
        for at, cell in enumerate(row.cells):
            if not cell:
                continue
            stems = _stems(cell)
            for term in row_terms:
                if _matches(term, stems):
                    hits.setdefault(term, []).append(at)
        for term in hits:
            frequency[term] = frequency.get(term, 0) + 1
        matched_cells.append(hits)
    total = len(rows)
    # A rare word weighs more; a word no row holds weighs a quarter of what a word of one
    # row does: it lowers the confidence (the table may not be what was asked about)
    # without sinking it for the words a question wraps a lookup in ("uses", "two-letter").
    weights = {
        t: math.log(1 + total / frequency[t]) if t in frequency else UNHELD * math.log(1 + total)
        for t in row_terms
    }
    weight_sum = sum(weights.values())
    top_passage = passages[0].id if passages else ""
    candidates: list[_Candidate] = []
    for (passage, table, row), hits in zip(rows, matched_cells, strict=True):
        if not hits:
            continue
        # A cell that is the word itself ("submission") names its row more surely than
        # one that holds a form of it ("submissions", "Submission over TLS").
        exact = {t for t, ats in hits.items() if any(_exact(t, row.cells[a]) for a in ats)}
        score = sum(weights[t] * (1.0 if t in exact else INEXACT) for t in hits) / weight_sum
        keys = tuple(sorted({at for ats in hits.values() for at in ats}))
        # The row's name is its first matched cell; a column the question names is
        # answered even when the name's words recur in it ("aliases of vrrp": VRRP).
        columns = _asked_columns(terms, table, keys[0], hits)
        if not columns:
            # A question that names no column asks for the row itself ("what does -x
            # do"): its other cells, from the best passage only, and only when the row
            # stands out as any answer's row must (below).
            if passage.id != top_passage:
                continue
            columns = tuple(at for at in range(len(table.labels)) if at not in keys)
        candidates.append(_Candidate(score, passage, table, row, keys, columns))
    if not candidates:
        return []
    candidates.sort(key=lambda c: -c.score)
    best = candidates[0].score
    if best < KEY_AT:
        return []
    tied = [c for c in candidates if c.score >= best - 1e-9]
    runner_up = next((c.score for c in candidates if c.score < best - 1e-9), 0.0)
    if len(tied) > MAX_ROWS or runner_up > best - MARGIN:
        return []
    # Rows tied across tables (du's and df's "-h, --human-readable") are one answer from
    # the passage search ranked first (``candidates`` keep the passages' order), not a
    # line from each: a table answer stays one table's.
    tied = [c for c in tied if c.passage.id == tied[0].passage.id and c.table == tied[0].table]
    lines = [_line(c, row_terms) for c in tied]
    if any(line is None for line in lines):
        return []
    confidence = round(min(0.95, 0.5 + 0.45 * best), 3)
    return [(line, c.passage.id, confidence) for line, c in zip(lines, tied, strict=True) if line]


# How sure a row named by the question's own code name is: as sure as a cell answer gets.
NAMED_CONFIDENCE = 0.95


def _named(
    terms: Sequence[str],
    rows: Sequence[tuple[Passage, _Table, _Row]],
    names: frozenset[str],
    top: str,
) -> list[_Candidate]:
    """The rows a cell of which opens with a name the question writes ("-v", "F_OK"):
    a table of options or constants names each row by its first cell, and a question
    that writes that name asks about that row, whatever its other words share with the
    rows around it (the ``X_OK`` row that mentions ``F_OK`` in passing is not it).
    Those of the best passage (``top``), first table holding one, at most ``MAX_ROWS``; none
    when the question writes no name or no row there opens with one (a lower-ranked
    passage's "-v" may be another tool's, as for any row a question names no column of)."""
    if not names:
        return []
    found: list[_Candidate] = []
    for passage, table, row in rows:
        if passage.id != top:
            break
        key = next((at for at, cell in enumerate(row.cells) if names & opening_names(cell)), None)
        if key is None or (found and (passage.id, table) != (found[0].passage.id, found[0].table)):
            continue
        columns = _asked_columns(terms, table, key, {})
        if not columns:
            columns = tuple(at for at in range(len(table.labels)) if at != key)
        found.append(_Candidate(1.0, passage, table, row, (key,), columns))
    return found if len(found) <= MAX_ROWS else []


def _compounds(terms: list[str], passages: Sequence[Passage]) -> list[str]:
    """Two neighbouring question words that a table's label writes as one word ("time
    zone" for the column ``timezone``, "user name" for ``username``) become that word:
    they name the column, not two rows' stray words."""
    labels = {
        low
        for passage in passages
        for table in tables(passage.text)
        for label in table.labels
        for low, _ in lowered_stems(label)
    }
    out: list[str] = []
    at = 0
    while at < len(terms):
        joined = terms[at] + terms[at + 1] if at + 1 < len(terms) else ""
        if joined in labels:
            out.append(joined)
            at += 2
        else:
            out.append(terms[at])
            at += 1
    return out


def _asked_columns(
    terms: Sequence[str], table: _Table, name: int, hits: dict[str, list[int]]
) -> tuple[int, ...]:
    """The columns the question asks for: those its words name before the words that
    name the row ("the *bandwidth* of the Japan mirror": "mirror", after "Japan",
    says what Japan is, not which column to read); when none comes first, the first
    one named. Numbers go last in ``terms``, so "which protocol has number 89" asks
    for the protocol."""
    first_row_word = min((terms.index(t) for t in hits), default=len(terms))
    named: list[tuple[int, int]] = []  # (term position, column)
    for position, term in enumerate(terms):
        for at, label in enumerate(table.labels):
            if at != name and _matches(term, _stems(label)):
                named.append((position, at))
    before = [at for position, at in named if position < first_row_word]
    chosen = before or ([at for position, at in named if position == named[0][0]] if named else [])
    return tuple(dict.fromkeys(chosen))


def _line(candidate: _Candidate, terms: Sequence[str] = ()) -> str | None:
    """``name — label value, label value (row N)``: the row's name is its first matched
    cell, labelled unless it sits in the table's first column (a row's own name). A
    prose cell as the name is quoted by the words of it that hold the question's
    (``_excerpt``), and the line is kept to ``LINE_WORDS``: a long value is cut where
    a clause ends (``_clip``). One line, as a person reads a table answer."""
    table, row = candidate.table, candidate.row

    def cell(at: int) -> str:
        return row.cells[at] if at < len(row.cells) else ""

    def label(at: int) -> str:
        return table.labels[at] if at < len(table.labels) else f"column {at + 1}"

    values = [(label(at), cell(at)) for at in candidate.columns if cell(at)][:MAX_CELLS]
    if not values:
        return None  # the named cell is empty: nothing to state
    key = candidate.keys[0]
    own = _excerpt(cell(key), terms)
    name = own if key == 0 else f"{label(key)} {own}"
    where = f" (row {row.number})" if row.number else ""
    fixed = len(name.split()) + 1 + len(where.split())
    budget = max(LINE_WORDS - fixed - sum(len(lab.split()) for lab, _ in values), len(values))
    share = budget // len(values)
    stated = ", ".join(f"{lab} {_clip(value, share)}" for lab, value in values)
    return f"{name} — {stated}{where}"


# A table answer is read as one line: at most this many words, labels and row included.
LINE_WORDS = 30
# A prose cell naming the answer's row is quoted by at most this many of its words.
NAME_WORDS = 12
# Where a long value may be cut: after a clause's or sentence's end, before an aside.
_CLAUSE_END = re.compile(r"[;.](?=\s)|(?=\s\()")


def _excerpt(text: str, terms: Sequence[str]) -> str:
    """A cell that names the row, whole when short; a prose cell longer than
    ``NAME_WORDS`` by the run of that many words holding most of the question's
    ``terms`` (distinct, the first such run), "…" where it is cut: the row's name says which
    row, not everything the row says."""
    words = text.split()
    if len(words) <= NAME_WORDS:
        return text
    wanted = {stem(t) for t in terms} | {stem(s) for t in terms for s in synonyms(t)}
    held = [wanted & {s for _, s in lowered_stems(w)} for w in words]
    best = max(
        range(len(words) - NAME_WORDS + 1),
        key=lambda at: (len(set().union(*held[at : at + NAME_WORDS])), -at),
    )
    quoted = " ".join(words[best : best + NAME_WORDS])
    head = "… " if best > 0 else ""
    tail = " …" if best + NAME_WORDS < len(words) else ""
    return f"{head}{quoted}{tail}"


def _clip(value: str, budget: int) -> str:
    """``value`` within ``budget`` words: whole when it fits, else up to the last end of
    a clause inside the budget (a word boundary when none), "…" where it is cut. The
    "…" is a word of the line too: the cut keeps one word fewer."""
    words = value.split()
    if len(words) <= budget:
        return value
    kept = " ".join(words[: max(budget - 1, 1)])
    ends = [m.end() for m in _CLAUSE_END.finditer(kept + " ")]
    ends = [end for end in ends if len(kept) // 2 <= end < len(kept)]
    if ends:
        kept = kept[: ends[-1]]
    return kept.rstrip(" ;,:") + " …"


@functools.lru_cache(maxsize=1024)
def _prose(text: str) -> str:
    lines = text.split("\n")
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if (
            index + 1 < len(lines)
            and lines[index].lstrip().startswith("|")
            and _DELIMITER.match(lines[index + 1])
        ):
            labels = _split(lines[index])
            numbered = bool(labels) and labels[0].lower() == ROW_LABEL
            index += 2
            while index < len(lines) and lines[index].lstrip().startswith("|"):
                cells = _split(lines[index])
                if any(len(cell.split()) >= PROSE_WORDS for cell in cells):
                    kept += ["", _row_paragraph(labels, cells, numbered), ""]
                index += 1
            continue
        kept.append(lines[index])
        index += 1
    return "\n".join(kept)


def _row_paragraph(labels: Sequence[str], cells: Sequence[str], numbered: bool) -> str:
    """One row as a paragraph of its own: its name, then each other cell with its label
    (``PRIORITY_HIGH — description: … a nice value of -14 …``). Only a row with a prose
    cell (``PROSE_WORDS``) is offered this way: it may answer by a sentence of it, never
    glued to its neighbours; a row of values names nothing a sentence could."""
    if numbered:
        labels, cells = labels[1:], cells[1:]
    named = [(labels[at] if at < len(labels) else "", c) for at, c in enumerate(cells) if c]
    if not named:
        return ""
    (_, name), rest = named[0], named[1:]
    return " — ".join([name, "; ".join(f"{label}: {cell}" for label, cell in rest)]).rstrip(" —")


def without_tables(passages: Sequence[Passage]) -> list[Passage]:
    """``passages`` for the sentence picker: each table row with a prose cell as a
    paragraph of its own, the other rows taken out. A row is answered as cells
    (``table_cells``) or by a sentence of its own prose, never pasted with its neighbours
    (a chunk of rows has no sentence boundary, so the picker would quote all of them)."""
    return [
        p if "|" not in p.text else Passage(p.id, _prose(p.text), p.title, p.score)
        for p in passages
    ]


@dataclass(frozen=True)
class CitedRow:
    """The table row a cell answer cites: where its line lies in the passage, and the
    row's locator."""

    start: int
    end: int
    number: str

    def section(self, chunk_section: str) -> str:
        """The chunk's section with the row instead of the chunk's row span: "sheet
        Orders, rows 2-201" becomes "sheet Orders, row 87"."""
        base = _ROW_SPAN.sub("", chunk_section).rstrip(", ")
        return f"{base}, row {self.number}" if base else f"row {self.number}"


def cited_row(text: str, sentence: str) -> CitedRow | None:
    """The row a cell answer (``… (row N)``) cites in the passage ``text``, or None
    for any other sentence."""
    match = _CITED_ROWS.search(sentence)
    if match is None:
        return None
    number = match.group(1)
    line = re.search(rf"^\|\s*{number}\s*\|.*$", text, re.MULTILINE)
    if line is None:
        return None
    return CitedRow(line.start(), line.end(), number)
