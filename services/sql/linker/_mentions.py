"""Mentions: every span of a question that names a table, a column, a stored value or a
number, found once for the whole question (a chart), each with how exactly it names it.

A span names a table when its words cover every part of the table's name (or of another
name its comment gives) and nothing else; a column when they cover the column's name
parts, possibly with words of its table in front ("stadium name"), or all but one part
that the table's name or the other parts make clear ("release year" for
``song_release_year``); a stored value when its text is a value the catalog indexed
(case aside; multi-word names like "Bank of Ohio" and names with an apostrophe
included); a quoted string is a value whose column the sentence must say.

Nothing here decides what a question means: the reader (``_clauses``) picks among the
mentions by where they stand in the sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.sql.catalog import TableInfo
from services.sql.linker._context import Meaning
from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.words import SHORT_FORMS, STOP_WORDS, Tok, cover, stem, word_match

# Name parts a table's name may carry that people never say: a lookup table's prefix,
# a generic last word ("model_list", "course_arrange" is no such: it is said).
OPTIONAL_TABLE_PARTS = frozenset(
    {
        "ref",
        "tbl",
        "dim",
        "fact",
        "lu",
        "lkp",
        "list",
        "info",
        "information",
        "data",
        "detail",
        "details",
        "record",
        "records",
        "master",
        "lookup",
        "log",
    }
)
_LONGEST_SPAN = 6
# Function words: a span naming a table or a column never holds one ("final tables made"
# may: "table" and "made" are words of names).
FUNCTION_WORDS = frozenset(
    """
    a an the of in on at for to by with and or is are was were be been being do does did
    have has had that which who whom whose what how all each every from as than their its
    this these those there his her our your my any
    """.split()
)
# Below this a column mention rests on inflections and guesses together ("owns" for
# ``owner_id``: an agent noun, and a missing ``id``): not a mention at all.
_COLUMN_FLOOR = 0.7
_TOKEN = re.compile(
    r"(?P<quoted>(?<![\w'])'[^']+'(?![\w])|\"[^\"]+\")"
    r"|(?P<number>\d+(?:,\d{3})*(?:\.\d+)?)"
    r"|(?P<word>[A-Za-z][A-Za-z0-9_]*(?:[-'][A-Za-z]+)*)"
)

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:[-'][A-Za-z]+)*")


# The readers' one token type; the chart's tokens are read by ``question_tokens`` below
Token = Tok


def question_tokens(text: str) -> list[Token]:
    """The question's tokens: quoted strings whole, numbers (``30,000`` is one), words
    with their inner apostrophes and hyphens ("Anna's", "opt-in"); a possessive ``'s``
    is dropped from the word it ends ("singer's name" reads "singer name")."""
    found: list[Token] = []
    for m in _TOKEN.finditer(text):
        if m.group("quoted"):
            inner = m.group("quoted")[1:-1]
            found.append(Token(inner, inner.lower(), inner.lower(), m.start(), m.end(), True))
        elif m.group("number"):
            raw = m.group("number")
            found.append(
                Token(raw, raw, raw, m.start(), m.end(), number=float(raw.replace(",", "")))
            )
        else:
            raw = m.group("word")
            word = raw[:-2] if raw.lower().endswith("'s") else raw
            found.append(Token(raw, word.lower(), stem(word.lower()), m.start(), m.end()))
    return found


@dataclass(frozen=True)
class Mention:
    """A span ``[start, end)`` of tokens that names something; ``score`` is 1.0 for an
    exact naming, less for a partial one."""

    kind: str  # "table", "column", "value", "number"
    start: int
    end: int
    score: float
    table: TableInfo | None = None
    col: Col | None = None
    value: str = ""
    number: float | None = None
    # a column mention whose words include its table's name ("stadium name")
    with_table: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class Chart:
    """Every mention of one question, by the token it starts at."""

    tokens: list[Token]
    mentions: list[Mention] = field(default_factory=list)

    def starting(self, index: int, kind: str = "") -> list[Mention]:
        return [m for m in self.mentions if m.start == index and (not kind or m.kind == kind)]

    def covering(self, index: int, kind: str = "") -> list[Mention]:
        return [
            m for m in self.mentions if m.start <= index < m.end and (not kind or m.kind == kind)
        ]


class _Candidates:
    """The tables and columns a question's words can name at all, found once per
    question: a span is scored only against names one of its words touches (on a wide
    schema most names share no letters with a given word)."""

    def __init__(self, vocab: Vocabulary, words: set[str]) -> None:
        touched: set[str] = set()
        self.by_word: dict[str, set[int]] = {}  # positions of the columns each word touches
        for word in words:
            hit = _touched(vocab, word)
            touched |= hit
            key = ("columns touched", word)
            columns = vocab.word_memo.get(key)
            if not isinstance(columns, frozenset):
                columns = frozenset(
                    i for i, c in enumerate(vocab.columns) if _names_touched(vocab, c, hit)
                )
                vocab.remember(key, columns)
            self.by_word[word] = set(columns)
        self.tables = [
            t
            for t in vocab.catalog.tables
            if any(p in touched for name in vocab.table_names(t) for p in name)
        ]

    def columns_for(self, vocab: Vocabulary, words: list[str]) -> list[Col]:
        found: set[int] = set().union(*(self.by_word.get(w, set()) for w in words))
        return [vocab.columns[i] for i in sorted(found)]


def could_mention(vocab: Vocabulary, token: Token, meanings: Sequence[Meaning] = ()) -> bool:
    """Whether the word could be part of any mention: it touches a name part of the
    catalog, is a word of a stored value, or was linked by meaning."""
    if _touched(vocab, token.stem) or any(m.word == token.low for m in meanings):
        return True
    words = vocab.word_memo.get(("value words", ""))
    if not isinstance(words, frozenset):
        # each value's words as the question's tokens are cut, as well as by spaces:
        # "Pacific/Honolulu" is read as the words "Pacific" and "Honolulu"
        words = frozenset(
            w
            for value in vocab.names
            for w in (*value.split(), *(m.group(0).lower() for m in _WORD.finditer(value)))
        )
        vocab.remember(("value words", ""), words)
    return token.low in words or token.stem in words


def _names_touched(vocab: Vocabulary, col: Col, hit: set[str]) -> bool:
    return any(p in hit for p in vocab.column_words[col.key]) or any(
        p in hit for a in vocab.column_aliases[col.key] for p in a
    )


def _touched(vocab: Vocabulary, word: str) -> set[str]:
    """The name parts of the catalog ``word`` touches (remembered per vocabulary)."""
    key = ("touched", word)
    found = vocab.word_memo.get(key)
    if not isinstance(found, set):
        parts = vocab.word_memo.get(("parts", ""))
        if not isinstance(parts, frozenset):
            every = {p for parts in vocab.column_words.values() for p in parts}
            every |= {p for t in vocab.catalog.tables for name in vocab.table_names(t)
                      for p in name}  # fmt: skip
            every |= {p for aliases in vocab.column_aliases.values() for a in aliases for p in a}
            parts = frozenset(every)
            vocab.remember(("parts", ""), parts)
        found = {p for p in parts if _touches(word, p)}
        vocab.remember(key, found)
    return found


def _touches(word: str, part: str) -> bool:
    """Whether a word could cover any of a name part: the same word or a form of it, an
    abbreviation either way, or a piece of a concatenation ("nam" of ``fname``)."""
    return (
        word_match(word, part) > 0
        or (len(word) >= 3 and word[:3] in part)
        or (len(part) >= 2 and part in word)
        or any(short in part for short in SHORT_FORMS.get(word, ()))
    )


_NAMED_FLOOR = 0.95  # the same word, or its plural


def chart(vocab: Vocabulary, text: str, meanings: Sequence[Meaning] = ()) -> Chart:
    """The mentions of every span of ``text`` (at most six tokens long), and of each
    word linked by meaning (scored by its similarity)."""
    tokens = question_tokens(text)
    found = Chart(tokens)
    by_word = {m.word: m for m in meanings}
    for i, tok in enumerate(tokens):
        meaning = by_word.get(tok.low)
        table = vocab.catalog.table(meaning.table) if meaning else None
        if meaning is None or table is None:
            continue
        column = table.column(meaning.column) if meaning.column else None
        if column is not None:
            col = Col(table, column)
            found.mentions.append(Mention("column", i, i + 1, meaning.similarity, col=col))
        elif not meaning.column:
            found.mentions.append(Mention("table", i, i + 1, meaning.similarity, table=table))
    candidates = _Candidates(vocab, {t.stem for t in tokens if not t.quoted})
    for i, tok in enumerate(tokens):
        if tok.number is not None:
            found.mentions.append(Mention("number", i, i + 1, 1.0, number=tok.number))
        if tok.quoted:
            found.mentions.append(Mention("value", i, i + 1, 0.5, value=tok.text))
            for col, value in vocab.names.get(tok.low, []):
                found.mentions.append(Mention("value", i, i + 1, 1.0, col=col, value=value))
            continue
        for j in range(i + 1, min(len(tokens), i + _LONGEST_SPAN) + 1):
            span = tokens[i:j]
            if any(t.quoted for t in span):
                break
            found.mentions += _values(vocab, span, i, j, text)
            if j - i > 3 or any(t.number is not None or t.low in FUNCTION_WORDS for t in span):
                continue
            words = [t.stem for t in span]
            # a capitalised word inside the question names a thing ("live in California"):
            # a schema name only as itself, never by abbreviation or likeness ("cars")
            floor = _NAMED_FLOOR if any(k > 0 and t.text[:1].isupper() for k, t in
                                        enumerate(span, i)) else 0.0  # fmt: skip
            for table in candidates.tables:
                score = table_score(vocab, words, table)
                if score and score >= floor:
                    found.mentions.append(Mention("table", i, j, score, table=table))
            for col in candidates.columns_for(vocab, words):
                got = column_score(vocab, words, col)
                if got and got[0] >= max(_COLUMN_FLOOR, floor):
                    score, with_table = got
                    found.mentions.append(
                        Mention("column", i, j, score, col=col, with_table=with_table)
                    )
    found.mentions += _of_mentions(vocab, tokens)
    return found


def _of_mentions(vocab: Vocabulary, tokens: list[Token]) -> list[Mention]:
    """ "type of pet", "name of the singer": a column of the table named after "of",
    the column's words said before it (``pets.pettype``, ``singer.name``)."""
    found: list[Mention] = []
    for k, tok in enumerate(tokens):
        if tok.low != "of":
            continue
        for i in range(max(0, k - 3), k):
            head = tokens[i:k]
            if any(t.low in FUNCTION_WORDS or t.quoted or t.number is not None for t in head):
                continue
            j = k + 1
            while j < len(tokens) and tokens[j].low in ("the", "a", "an", "each", "every", "all"):
                j += 1
            for end in range(j + 1, min(len(tokens), j + 3) + 1):
                tail = tokens[j:end]
                if any(t.low in FUNCTION_WORDS or t.quoted or t.number is not None for t in tail):
                    break
                words = [t.stem for t in tail]
                for table in vocab.catalog.tables:
                    if not table_score(vocab, words, table):
                        continue
                    for column in table.columns:
                        col = Col(table, column)
                        got = column_score(vocab, [t.stem for t in head] + words, col)
                        if got and got[0] >= _COLUMN_FLOOR:
                            found.append(
                                Mention("column", i, end, got[0], col=col, with_table=True)
                            )
    return found


def _values(vocab: Vocabulary, span: list[Token], i: int, j: int, text: str) -> list[Mention]:
    """Stored values whose text is the span's (case and spacing aside) as written in the
    question, punctuation inside it kept ("Acme's Diner", "Bank of Ohio", "amc hornet
    sportabout (sw)"); a lower-case single word only when it is no function word."""
    written = re.sub(r"\s+", " ", text[span[0].start : span[-1].end]).lower()
    hits = vocab.names.get(written, []) or vocab.names.get(" ".join(t.low for t in span), [])
    if not hits and text[span[-1].end : span[-1].end + 1] == ".":
        # "United Air Lines Inc.": a stored value's closing period is the question's
        # full stop too, and the tokens leave it out
        hits = vocab.names.get(written + ".", [])
    if not hits and len(span) == 1 and span[0].stem != span[0].low:
        # "cats" for the stored 'cat': a plural of a lower-case stored word
        hits = [(c, v) for c, v in vocab.names.get(span[0].stem, []) if v.islower()]
    if not hits and len(span) > 1:
        hits = _plural_of_several(vocab, span, text)
    if not hits and len(span) == 1 and span[0].text.islower():
        hits = kind_noun(vocab, span[0])
    if not hits:
        return []
    if len(span) == 1:
        word = span[0].text
        if word.islower() and word.lower() in STOP_WORDS:
            return []
    exact = all(v == " ".join(t.text for t in span) for _, v in hits)
    score = 1.0 if exact or not span[0].text.islower() else 0.8
    return [Mention("value", i, j, score, col=col, value=value) for col, value in hits]


def _plural_of_several(vocab: Vocabulary, span: list[Token], text: str) -> list[tuple[Col, str]]:
    """Stored values of several words said in the plural: "sales representatives" for
    'Sales Representative' (a title, a category, a kind of several words). English makes
    a phrase plural on its last word only, so the span with its last word in the singular
    is looked up as any span is (case and spacing aside). Unlike a single word, capitals
    are no bar: a stored phrase of several words whose singular the question says whole
    is that value, whichever case the column stores it in."""
    last = span[-1]
    if last.stem == last.low or not last.low.endswith("s"):
        return []
    head = re.sub(r"\s+", " ", text[span[0].start : last.start]).lower()
    return list(vocab.names.get(head + last.stem, []))


def table_score(vocab: Vocabulary, words: list[str], table: TableInfo) -> float:
    """1.0 when the words name the table exactly (every part of a name covered, every
    word used), 0 otherwise; a lookup table's prefix ("ref_") may go unsaid."""
    best = 0.0
    for name in vocab.table_names(table):
        parts = [p for p in name if p not in OPTIONAL_TABLE_PARTS] or list(name)
        best = max(best, _exact(words, parts))
        if len(parts) >= 2 and best == 0:
            # "makers" for car_makers: the head noun alone, a little less surely
            best = 0.7 * _exact(words, parts[-1:])
    return best


def _exact(words: list[str], parts: list[str]) -> float:
    """The mean coverage of ``parts`` when every part is covered (>= 0.8) and every word
    covers some part; 0 otherwise."""
    if not parts:
        return 0.0
    used: set[int] = set()
    shares = []
    for part in parts:
        share, which = cover(words, part)
        if share < 0.8:
            return 0.0
        shares.append(share)
        used |= which
    if len(used) != len(words):
        return 0.0
    return sum(shares) / len(shares)


def column_score(vocab: Vocabulary, words: list[str], col: Col) -> tuple[float, bool] | None:
    """How the words name the column: (score, whether words of its table were used), or
    None. Every word must cover a part of the column's name or of its table's name; the
    column's parts must all be covered, or all but one when the table names it
    ("name" for ``singer_name`` of ``singer``) or the rest says enough ("release year"
    for ``song_release_year``)."""
    best: tuple[float, bool] | None = None
    table_parts = [p for name in vocab.table_names(col.table) for p in name]
    for parts in (vocab.column_words[col.key], *vocab.column_aliases[col.key]):
        if not parts:
            continue
        got = _column_parts(vocab, words, list(parts), table_parts)
        if got is not None and (best is None or got[0] > best[0]):
            best = got
    return best


def _column_parts(
    vocab: Vocabulary, words: list[str], parts: list[str], table_parts: list[str]
) -> tuple[float, bool] | None:
    parts = [p for p in parts if p not in STOP_WORDS] or parts  # "num_of_staff"
    used: set[int] = set()
    uncovered: list[str] = []
    shares: list[float] = []
    for part in parts:
        share, which = cover(words, part)
        if share >= 0.8:
            used |= which
            shares.append(share)
        else:
            uncovered.append(part)
    if not used:
        return None
    exact = sum(shares) / len(shares)
    leftover = [i for i in range(len(words)) if i not in used]
    with_table = False
    # a word left over names the table ("stadium capacity"); a part another word of the
    # span already named only when said again as such ("type code of the template type"),
    # not in a form made from it: in "teachers teach" the verb is no second "teacher"
    named = {p for p in parts if p not in uncovered}
    for i in leftover:
        if not any(
            (m := word_match(words[i], p)) >= 0.8 and (p not in named or m >= 0.95)
            for p in table_parts
        ):
            return None
        with_table = True
    if not uncovered:
        return (exact, with_table)
    if all(p in table_parts for p in uncovered):
        return (0.85 * exact, with_table)  # "description" for template_type_description
    if len(uncovered) > 1:
        return None
    missing = uncovered[0]
    if missing in ("id", "no", "num", "code", "name"):
        return (0.85 * exact, with_table)
    weight = sum(vocab.weight(p) for p in parts if p != missing) / sum(
        vocab.weight(p) for p in parts
    )
    return (0.7 * exact, with_table) if len(parts) >= 3 and weight >= 0.5 else None


# The last words of a name that say its column stores a kind of row ("property_type_code",
# "room_category"): its values are nouns for the rows ("a house", "the apartments").
_KIND_WORDS = frozenset({"type", "kind", "category", "class", "genre"})


def kind_noun(vocab: Vocabulary, token: Token) -> list[tuple[Col, str]]:
    """A common noun, singular or plural, said in lower case, that is a one-word value
    stored capitalised in a column of kinds ("houses" -> ``property_type_code`` 'House'):
    the rows of that kind. Only where exactly one column stores it, a lookup table's copy
    of a code (the key another column references) aside: two columns of kinds holding it
    say two things the word could mean, and that is not guessed."""
    found: dict[tuple[str, str], tuple[Col, str]] = {}
    for form in dict.fromkeys((token.low, token.stem)):
        for col, value in vocab.names.get(form, []):
            if value.isalpha() and not value.islower() and _of_kinds(col):
                found.setdefault(col.key, (col, value))
    referenced = {
        (e.parent, e.parent_columns[0])
        for col, _ in found.values()
        for e in vocab.graph.edges_of(col.table.qualified)
        if e.child == col.table.qualified
        and e.child_columns == (col.column.name,)
        and len(e.parent_columns) == 1
    }
    left = [pair for key, pair in found.items() if key not in referenced]
    return left if len(left) == 1 else []


def _of_kinds(col: Col) -> bool:
    words = [w.lower() for w in re.split(r"[_\W]+", col.column.name) if w]
    return any(w in _KIND_WORDS for w in words)
