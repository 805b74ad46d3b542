"""Reusing a confirmed question→SQL pair for a new question, offline.

A confirmed pair answers every question that asks the same thing with other values.
This module decides whether a new question is such a question, and adapts the stored
statement to it:

- **Literals** are read from both questions in order (quoted strings, ISO and written
  dates, numbers and number words, capitalised names). The question with its literals
  masked is its *template*: it is what gets embedded, so a value swap does not move the
  vector, and what the word-agreement check compares.
- **Agreement**: the two templates' content words must agree, or differ only where a
  lowercase word of the stored question is a value the stored statement compares
  ("female" → ``gender = 'Female'``). A difference the statement cannot explain means
  the questions ask different things.
- **Adaptation** parses the stored statement with sqlglot and replaces literal nodes —
  never text splicing: a string value (case style kept, ``LIKE`` wildcards kept), a
  number (``LIMIT 5``, ``> 1000``, ``INTERVAL '30 days'``), a date or a year (and the
  half-open bound one year on). A differing value the statement does not contain, or
  one old value that would need two new ones, refuses the adaptation.

The caller gates the result like any generated statement; nothing here executes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from services.sql.catalog import StoredValues
from services.sql.words import MONTHS, WRITTEN_DATE, lemma, undoubled, written_date
from services.sql.words import stem as word_stem

_NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_TIME_UNITS = frozenset(
    [
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "hour",
        "hours",
        "minute",
        "minutes",
    ]
)
# Words that open sentences or name things generically: capitalised, never values.
_NOT_NAMES = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "when",
        "where",
        "why",
        "return",
        "list",
        "show",
        "give",
        "find",
        "get",
        "count",
        "calculate",
        "compute",
        "for",
        "from",
        "in",
        "on",
        "of",
        "the",
        "a",
        "an",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "i",
        "we",
        "please",
        "tell",
        "select",
        "considering",
        "based",
        "only",
    ]
)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "in",
        "on",
        "at",
        "to",
        "by",
        "with",
        "from",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "do",
        "does",
        "did",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "many",
        "much",
        "when",
        "where",
        "why",
        "that",
        "this",
        "these",
        "those",
        "their",
        "its",
        "it",
        "as",
        "per",
        "each",
        "all",
        "any",
        "there",
        "return",
        "list",
        "show",
        "give",
        "find",
        "get",
        "tell",
        "me",
        "us",
        "please",
        "number",
        "count",
        "total",
        "their",
        "them",
        "they",
        "than",
        "then",
        "also",
        "only",
        "just",
        "including",
        "inclusive",
        "i",
        "we",
        "our",
        "your",
        "you",
        "s",
    ]
)
_TOKEN = re.compile(
    r"""'(?P<sq>[^']*)'|"(?P<dq>[^"]*)"|(?P<iso>\d{4}-\d{2}-\d{2})"""
    r"""|(?P<num>\d+(?:\.\d+)?)|(?P<word>[A-Za-z][A-Za-z0-9_\-]*)"""
)


@dataclass(frozen=True)
class Literal:
    """One value named in a question: its kind (``text``, ``number``, ``date``), its
    normalised value, and the word after it (``days`` in "30 days")."""

    kind: str
    value: str
    unit: str = ""


@dataclass(frozen=True)
class Reading:
    """A question read for reuse: its literals in order, and its template as tokens
    (literals masked, lowercase)."""

    literals: tuple[Literal, ...]
    tokens: tuple[str, ...]
    # Text values said as owners ("Kyle's friends"): whose the rest is, a role the same
    # value in another position ("who have Kyle as a friend") does not have.
    owners: frozenset[str] = frozenset()

    @property
    def template(self) -> str:
        return " ".join(self.tokens)


_MASK = {"text": "value", "number": "number", "date": "date"}


def read(question: str, values: StoredValues | None = None) -> Reading:
    """The question's literals and template. With the database's stored ``values``, the
    words that name a stored value are one text literal whatever their case or shape
    (codes, apostrophes, small words inside a name), as the linker reads them."""
    text = WRITTEN_DATE.sub(_iso_date, question)
    if values is not None:
        text = _quoted_values(text, values)
    literals: list[Literal] = []
    tokens: list[str] = []
    owners: set[str] = set()
    matches = list(_TOKEN.finditer(text))
    sentence_start = True
    previous_name = False
    for index, match in enumerate(matches):
        following = matches[index + 1].group("word") if index + 1 < len(matches) else None
        unit = following.lower() if following and following.lower() in _TIME_UNITS else ""
        kind, value = _classify(match, sentence_start=sentence_start)
        if kind == "text" and values is not None and _names_schema(match, values):
            kind, value = "", value.lower()
        name = kind == "text" and match.group("word") is not None
        gap = text[matches[index - 1].end() : match.start()] if index else ""
        if name and previous_name and gap == " ":
            # Adjacent capitalised words are one name ("New York").
            literals[-1] = Literal("text", f"{literals[-1].value} {value}")
        elif kind == "text" and any(
            lit.kind == "text" and lit.value.lower() == value.lower() for lit in literals
        ):
            # "Who are Kyle's friends? … the high schoolers Kyle is friends with": a name
            # said again is the same value, not a second one
            tokens.append(_MASK[kind])
        elif kind:
            literals.append(Literal(kind, value, unit if kind == "number" else ""))
            tokens.append(_MASK[kind])
        else:
            tokens.append(value)
        previous_name = name
        if kind == "text" and re.match(r"['\u2019]s\b", text[match.end() :]):
            owners.add(literals[-1].value.lower())
        sentence_start = bool(re.search(r"[.?!;:]\s*$", text[match.end() : _next(matches, index)]))
    return Reading(tuple(literals), tuple(tokens), frozenset(owners))


def _names_schema(match: re.Match[str], values: StoredValues) -> bool:
    """A capitalised word that is a table or column name's word and no stored value
    ("Airline", "City"): the schema's word, as the linker reads it, not a literal."""
    word = match.group("word")
    return word is not None and word_stem(word) in values.names and not values.holders(word)


def roles_differ(stored: Reading, asked: Reading) -> bool:
    """Whether a value both questions name is an owner in one and not the other."""
    both = {lit.value.lower() for lit in stored.literals} & {
        lit.value.lower() for lit in asked.literals
    }
    return bool((stored.owners ^ asked.owners) & both)


_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"")


def _quoted_values(text: str, values: StoredValues) -> str:
    """``text`` with each stored value it names (outside quotes already there) quoted, so
    the tokenizer reads it as one literal."""
    quoted = [m.span() for m in _QUOTED.finditer(text)]
    out, last = [], 0
    for start, end in values.spans(text):
        if any(a <= start < b for a, b in quoted) or '"' in text[start:end]:
            continue
        out += [text[last:start], '"', text[start:end], '"']
        last = end
    return "".join([*out, text[last:]])


def _next(matches: Sequence[re.Match[str]], index: int) -> int:
    return matches[index + 1].start() if index + 1 < len(matches) else len(matches[-1].string)


def _iso_date(match: re.Match[str]) -> str:
    day = written_date(match)
    return match.group(0) if day is None else day.isoformat()


def _classify(match: re.Match[str], *, sentence_start: bool) -> tuple[str, str]:
    if match.group("sq") is not None or match.group("dq") is not None:
        return "text", (match.group("sq") if match.group("sq") is not None else match.group("dq"))
    if match.group("iso"):
        return "date", match.group("iso")
    if match.group("num"):
        return "number", match.group("num")
    word = match.group("word")
    if word.lower() in _NUMBER_WORDS:
        return "number", str(_NUMBER_WORDS[word.lower()])
    if (
        word[0].isupper()
        and not sentence_start
        and word.lower() not in _NOT_NAMES
        # Acronyms ("ASP", "IDs") name measures and columns, months name periods.
        and not (len(word) > 1 and word[:2].isupper())
        and word.lower() not in MONTHS
    ):
        return "text", word
    return "", word.lower()


# --- agreement --------------------------------------------------------------------------


def stem(word: str) -> str:
    """The stem content words are compared by: the verb of an inflected form, a regular
    past form too ("earned" and "earnings" both earn, "produced" and "produces" produc)."""
    base = lemma(word)
    if base.endswith("ed") and len(base) >= 6:
        return undoubled(base[:-2])
    if base.endswith("e") and len(base) >= 6:
        return base[:-1]
    return base


def content_words(reading: Reading) -> set[str]:
    """The template's content words, crudely stemmed (masks and function words out)."""
    return {
        _SAME_MEASURE.get(t) or stem(t)
        for t in reading.tokens
        if t not in _STOP and t not in _MASK.values() and len(t) > 1
    }


def agreement(a: Reading, b: Reading) -> float:
    """Jaccard overlap of the two templates' content words (1.0 when both have none)."""
    left, right = content_words(a), content_words(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


_MEASURE_WORDS = {"sum": "sum", "total": "sum", "average": "avg", "avg": "avg", "mean": "avg",
                  "count": "count"}  # fmt: skip
# The words of one aggregate or end compare as one word ("mean" is "average", "the
# lowest age" the minimum); an end read this way is no measure of its own ("the highest
# total" ranks by a sum), but opposite ends ask different things (see ``opposite_ends``).
_SAME_MEASURE = {
    **{word: f"{kind}()" for word, kind in _MEASURE_WORDS.items() if word != "total"},
    **dict.fromkeys(("minimum", "min", "lowest", "smallest", "least", "fewest"), "min()"),
    **dict.fromkeys(("maximum", "max", "highest", "largest", "most", "greatest"), "max()"),
    # a comparison's direction, however said ("more than", "above", "older than")
    **dict.fromkeys(("more", "greater", "higher", "larger", "bigger", "above", "over",
                     "exceeding", "older", "heavier", "taller", "longer", "after", "later"),
                    "gt()"),
    **dict.fromkeys(("less", "fewer", "lower", "smaller", "below", "under", "younger",
                     "lighter", "shorter", "cheaper", "before", "earlier"), "lt()"),
}  # fmt: skip


def measures(reading: Reading) -> frozenset[str]:
    """The aggregates a question asks for, read from its words ("total amount" is a sum,
    "total number of" and "how many" a count, "average" an average): two questions that
    differ here ask for another measure, however alike the rest reads."""
    tokens = reading.tokens
    found: set[str] = set()
    for index, token in enumerate(tokens):
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        if (token == "how" and after == "many") or (token == "number" and after == "of"):
            found.add("count")
        elif token in _MEASURE_WORDS and not (token == "total" and after in ("number", "count")):
            found.add(_MEASURE_WORDS[token])
    return frozenset(found)


def opposite_ends(stored: Reading, asked: Reading) -> bool:
    """Whether one question asks for the low end or side where the other asks for the
    high one ("the minimum age" and "the highest age", "at least" and "at most", "more
    than" and "fewer than", "older" and "younger"): the same words otherwise, the
    opposite answer."""
    kept, wanted = content_words(stored), content_words(asked)
    return any(
        low in one - other and high in other - one
        for one, other in ((kept, wanted), (wanted, kept))
        for low, high in (("min()", "max()"), ("lt()", "gt()"))
    )


def names_schema(words: set[str], schema: set[str]) -> bool:
    """Whether any of ``words`` names a part of the schema: a name word, or (for a word
    of four letters or more) a piece of a name written without separators ("commission"
    in ``sbtxcommission``, "send" in ``sender_type``)."""
    return any(
        w in schema or any(r in part for r in _roots(w) for part in schema if len(part) > len(r))
        for w in words
    )


def _roots(word: str) -> set[str]:
    """A word without its inflection ("received" → "receiv", "sending" → "send"), four
    letters at least: what a name written without separators would contain."""
    roots = {word}
    for ending in ("ing", "ed", "es", "s", "e"):
        if word.endswith(ending):
            roots.add(word[: -len(ending)])
    return {r for r in roots if len(r) >= 4}


def other_kind(stored: Reading, asked: Reading, values: StoredValues) -> bool:
    """Whether a swapped value is stored only in other columns than the value it replaces
    (a status where a transaction type was): another question, not a value swap."""
    for old, new in zip(stored.literals, asked.literals, strict=False):
        if old.kind != "text" or new.kind != "text" or old.value == new.value:
            continue
        before = {(h.table.qualified, h.column) for h in values.holders(old.value)}
        after = {(h.table.qualified, h.column) for h in values.holders(new.value)}
        if before and after and not before & after:
            return True
    return False


# --- adaptation -------------------------------------------------------------------------


class NotAdaptable(Exception):
    """The stored statement cannot be adapted to the new question; ``why`` is a short
    code for spans and logs (never a value)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class Adapted:
    """The adapted statement, how many values changed, and whether the questions differ
    in words the statement does not explain (a paraphrase, not a value swap)."""

    sql: str
    substitutions: int
    paraphrase: bool
    # (before, after) for each value replaced, in the order they were substituted
    replaced: tuple[tuple[str, str], ...] = ()


def word_swaps(stored: Reading, asked: Reading) -> list[tuple[str, str]]:
    """Word-for-word replacements between the templates: the candidates for values the
    stored statement compares ("female" → "male", "us" → "sg")."""
    swaps: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=stored.tokens, b=asked.tokens, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        before, after = stored.tokens[i1:i2], asked.tokens[j1:j2]
        if tag == "replace" and len(before) == len(after):
            # Position by position: a function word can be a value too ("from the US").
            swaps += [(o, n) for o, n in zip(before, after, strict=True) if stem(o) != stem(n)]
    return swaps


def exchanges(stored: Reading, asked: Reading) -> list[tuple[str, str]]:
    """Words that traded places between two templates of one length ("from JFK to ORD" /
    "from ORD to JFK", "from X to Y" / "to X from Y"): every position that differs pairs
    with another holding the two words the other way round. A sequence diff reads such a
    trade as a deletion and an insertion, and the values' roles would be lost."""
    if len(stored.tokens) != len(asked.tokens):
        return []
    differing = [
        (old, new)
        for old, new in zip(stored.tokens, asked.tokens, strict=True)
        if stem(old) != stem(new)
    ]
    pairs = set(differing)
    if not differing or any((new, old) not in pairs for old, new in differing):
        return []
    return differing


def _differs_beyond(stored: Reading, asked: Reading, explained: set[tuple[str, str]]) -> bool:
    """Whether the templates differ in content words once the explained value swaps are
    undone: a value the statement compares is not a difference in meaning."""
    undone = dict(explained)
    tokens = tuple(undone.get(t, t) for t in stored.tokens)
    content = [t for t in tokens if t not in _STOP]
    wanted = [t for t in asked.tokens if t not in _STOP]
    return [stem(t) for t in content] != [stem(t) for t in wanted]


def adapt(stored_sql: str, stored: Reading, asked: Reading) -> Adapted:
    """``stored_sql`` with the asked question's values in place of the stored one's.

    Raises :class:`NotAdaptable` when the literals do not line up, a differing value is
    not in the statement, or one value would need two replacements.
    """
    if [lit.kind for lit in stored.literals] != [lit.kind for lit in asked.literals]:
        raise NotAdaptable("literal_shape")
    traded = exchanges(stored, asked)
    swaps = list(dict.fromkeys([*word_swaps(stored, asked), *traded]))
    if not swaps and all(
        o.value == n.value for o, n in zip(stored.literals, asked.literals, strict=True)
    ):
        # nothing to substitute (a reworded question): the statement as confirmed,
        # verbatim, without parsing it
        return Adapted(stored_sql, 0, paraphrase=_differs_beyond(stored, asked, set()))
    try:
        tree = sqlglot.parse_one(stored_sql, read="postgres")
    except sqlglot.errors.ParseError:
        raise NotAdaptable("parse") from None
    plan: dict[int, exp.Expression] = {}
    replaced: list[tuple[str, str]] = []
    for old, new in zip(stored.literals, asked.literals, strict=True):
        if old.value == new.value:
            continue
        if old.kind == "number" and old.unit != new.unit:
            raise NotAdaptable("unit")
        if not _replace(tree, old, new, plan):
            raise NotAdaptable("value_not_in_sql")
        replaced.append((old.value, new.value))
    explained: set[tuple[str, str]] = set()
    for old_word, new_word in swaps:
        if _replace(tree, Literal("text", old_word), Literal("text", new_word), plan):
            replaced.append((old_word, new_word))
            explained.add((old_word, new_word))
    if any(pair not in explained for pair in traded):
        # Words traded places that the statement does not hold as values: the roles of
        # the values changed ("to X from Y"), which reusing the statement would ignore.
        raise NotAdaptable("reordered")
    other = _differs_beyond(stored, asked, explained)
    if not plan:
        return Adapted(stored_sql, 0, paraphrase=other)
    for node_id, replacement in plan.items():
        node = _find(tree, node_id)
        node.replace(replacement)
    return Adapted(
        tree.sql(dialect="postgres"), len(replaced), paraphrase=other, replaced=tuple(replaced)
    )


def _find(tree: exp.Expr, node_id: int) -> exp.Expr:
    for node in tree.walk():
        if id(node) == node_id:
            return node
    raise NotAdaptable("internal")


def _replace(tree: exp.Expr, old: Literal, new: Literal, plan: dict[int, exp.Expression]) -> bool:
    """Plan the replacement of every literal node that holds ``old``; False when none
    does. A node already planned with another value is a conflict."""
    found = False
    for node in list(tree.find_all(exp.Literal)):
        replacement = _replacement(node, old, new)
        if replacement is None:
            continue
        previous = plan.get(id(node))
        if previous is not None and previous.sql() != replacement.sql():
            raise NotAdaptable("conflict")
        plan[id(node)] = replacement
        found = True
    return found


def _replacement(node: exp.Literal, old: Literal, new: Literal) -> exp.Expression | None:
    text = str(node.this)
    if isinstance(node.parent, exp.Interval) and re.fullmatch(r"\d+(?:\.\d+)?", text):
        # sqlglot reads INTERVAL '30 days' as the string '30' with a unit.
        if old.kind == "number" and old.unit and _same_number(text, old.value):
            return exp.Literal.string(new.value)
        return None
    if not node.is_string:
        if old.kind == "number" and new.kind == "number" and _same_number(text, old.value):
            if old.unit and not isinstance(node.parent, exp.Interval):
                return None
            return exp.Literal.number(new.value)
        return None
    if old.kind == "number":
        return _number_in_string(text, old, new)
    if old.kind == "date":
        if text.startswith(old.value):
            return exp.Literal.string(new.value + text[len(old.value) :])
        return None
    return _text_in_string(text, old.value, new.value)


def _same_number(text: str, value: str) -> bool:
    try:
        return float(text) == float(value)
    except ValueError:
        return False


def _number_in_string(text: str, old: Literal, new: Literal) -> exp.Expression | None:
    """An interval ('30 days'), a year inside a date ('2022-01-01', and '2023-01-01' as
    the half-open end of 2022), or a number word-for-word inside a string."""
    if old.unit:
        pattern = re.compile(rf"(?<![\d.]){re.escape(old.value)}(?![\d.])")
        if pattern.search(text) and re.search(r"[A-Za-z]", text):
            return exp.Literal.string(pattern.sub(new.value, text, count=1))
        return None
    if is_year(old.value) and is_year(new.value):
        year, shifted = int(old.value), int(new.value)
        for offset in (0, 1):
            prefix = f"{year + offset}-"
            if text.startswith(prefix) and re.match(r"^\d{4}-\d{2}-\d{2}", text):
                if offset == 1 and not text.startswith(f"{year + 1}-01-01"):
                    return None
                return exp.Literal.string(f"{shifted + offset}-" + text[len(prefix) :])
    return None


def is_year(value: str) -> bool:
    """A four-digit number a calendar year can be."""
    return value.isdigit() and len(value) == 4 and 1900 <= int(value) <= 2100


def _text_in_string(text: str, old: str, new: str) -> exp.Expression | None:
    if not old:
        return None
    if text.lower() == old.lower():
        return exp.Literal.string(_same_case(text, new))
    core = text.strip("%_")
    if core and core != text and core.lower() == old.lower():
        start = text.index(core)
        return exp.Literal.string(text[:start] + _same_case(core, new) + text[start + len(core) :])
    return None


def _same_case(model: str, value: str) -> str:
    if model.isupper():
        return value.upper()
    if model.islower():
        return value.lower()
    if model.istitle():
        return value.title() if value.islower() else value
    return value
