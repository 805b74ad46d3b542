"""The words of questions and of names, the one place words are stemmed: stems and verb
forms, the words of a name (``sbTxDateTime`` -> sb, tx, date, time) and the prefix a
schema's names share, how a question word matches a name part (exactly, as an
inflection, or as an abbreviation), how words cover a name written as one run of
letters, and the grammar words that name nothing in a schema."""

from __future__ import annotations

import functools
import re
from collections.abc import Container, Sequence
from dataclasses import dataclass

# Words that carry no schema meaning in a question (function words and question verbs).
# Nouns that say "the kind of": "engine type", "payment kind", "product category" name the
# kind of the thing before them, which a column named for that thing may hold.
KIND_NOUNS = frozenset({"type", "kind", "category", "class", "sort", "variety"})
STOP_WORDS = frozenset(
    """
    a an the of in on at for to by per with and or is are was were be been being do does did
    have has had we our us you your i me my there their them they it its this that these
    those what which who whom whose how show list give find get tell all each every any from
    as into onto about across over under please return returned including include included
    respective respectively also both only just than then made along together value values
    table tables record records column columns row rows
    """.split()
)


_TOKEN = re.compile(r"'[^']+'|\"[^\"]+\"|[A-Za-z][A-Za-z0-9_]*|\d+(?:\.\d+)?")


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def name_words(name: str) -> list[str]:
    """``sbTxDateTime`` -> sb, tx, date, time; ``day100_pasi_score`` -> day, 100, pasi, score."""
    return [w.lower() for part in re.split(r"[_\W]+", name) for w in _CAMEL.findall(part)]


# How a name says its column counts or sums something: a first word ("num_semesters",
# "number_of_pets", "total_sales") or a last word ("pet_count", "order_qty").
_MEASURE_FIRST = frozenset(
    {"num", "number", "count", "total", "sum", "qty", "quantity", "amount", "avg"}
)
_MEASURE_LAST = frozenset({"count", "total", "sum", "qty", "quantity", "amount"})
# ... unless the last word names an identifier ("account_number", "order_num").
_REFERENCE_LAST = frozenset({"id", "code", "key", "no", "ref"})


def measure_name(name: str) -> bool:
    """Whether a column's name says it holds a count or sum ("num_semesters",
    "pet_count"): a measure, never a key another table's rows are found by. A name
    ending in a number word after a noun ("account_number", "order_num") names an
    identifier and is no measure."""
    words = name_words(name)
    if len(words) < 2 or words[-1] in _REFERENCE_LAST:
        return False
    if words[0] in _MEASURE_FIRST:
        return True
    return words[-1] in _MEASURE_LAST


def common_prefix(names: Sequence[str], *, minimum: int = 2) -> str:
    """The longest prefix every name shares, cut back to a word boundary when the names
    show one (camelCase or ``_``). Lower-case names show none, so there the prefix must
    be shared by at least three names and leave every name a remainder of 2+ letters."""
    if len(names) < 2:
        return ""
    first, last = min(names), max(names)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    prefix = first[:size]
    if any(n != n.lower() or "_" in n for n in names):
        while prefix and not all(
            len(n) > len(prefix)
            and (n[len(prefix)].isupper() or n[len(prefix)] == "_" or prefix.endswith("_"))
            for n in names
        ):
            prefix = prefix[:-1]
        return prefix
    if len(names) < 3 or len(prefix) < minimum:
        return ""
    while prefix and any(len(n) - len(prefix) < 2 for n in names):
        prefix = prefix[:-1]
    return prefix if len(prefix) >= minimum else ""


def stem(word: str) -> str:
    word = word.lower()
    if len(word) >= 7 and word.endswith("sis"):
        # a Greek noun's singular ("diagnosis", "analysis") stems as its plural
        # ("diagnoses" -> "diagnose"): one noun, whichever number is said
        return word[:-2] + "e"
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# English verbs whose past forms a suffix rule cannot undo ("deals won", "did we win").
_IRREGULAR = {
    "won": "win",
    "lost": "lose",
    "sold": "sell",
    "bought": "buy",
    "paid": "pay",
    "spent": "spend",
    "sent": "send",
    "held": "hold",
    "made": "make",
    "began": "begin",
    "begun": "begin",
    "ran": "run",
    "wrote": "write",
    "written": "write",
    "gave": "give",
    "given": "give",
    "took": "take",
    "taken": "take",
    "built": "build",
    "flew": "fly",
    "flown": "fly",
    "went": "go",
    "gone": "go",
    "drove": "drive",
    "driven": "drive",
    "grew": "grow",
    "grown": "grow",
    "chose": "choose",
    "chosen": "choose",
    "brought": "bring",
    "taught": "teach",
    "caught": "catch",
    "met": "meet",
    "born": "birth",  # a participle whose noun names the column: ``birth_year``
}


def irregular_past(word: str) -> bool:
    """Whether the word is a past form no suffix rule undoes ("flew", "built"): a verb,
    as a word ending in -ed is one."""
    return word.lower() in _IRREGULAR


_DO_SUPPORT = re.compile(r"\b(?:did|do|does)\s+(?:[\w'-]+\s+){1,4}?([a-z]{3,})\s*[?.]?\s*$", re.I)
# "did each carrier operate from EWR?": the verb ends its clause, a place or time follows
_DO_SUBJECT = re.compile(r"\b(?:did|do|does)\s+[\w'-]+\s+", re.I)
_PLACE_OR_TIME = r"(?:from|to|in|at|on|into|during|between|before|after|since|through|via|out of)"
_CLAUSE_VERB = re.compile(rf"(?<![\w'-])([a-z]{{3,}})\s+{_PLACE_OR_TIME}\b")
_AFTER_PLACE_OR_TIME = re.compile(rf"\b{_PLACE_OR_TIME}\s+(?:the\s+)?$", re.I)
# A base form after "did" never ends in a third-person or plural "s" ("customers");
# "ss" and "us" words ("process", "focus") are no plurals.
_PLURAL_END = re.compile(r"(?<!s)(?<!u)s$")


@functools.lru_cache(maxsize=1024)
def do_support_verb(question: str) -> str | None:
    """The verb of a question asked with "did"/"do"/"does" ("how many flights did
    JetBlue operate?"): its base form shows no suffix, yet it is the verb, relating rows as
    "operated" would. None when the question has none. It ends the question, or, when the
    question ends in a place or time ("… did each carrier operate from EWR?"), its clause:
    then it is the last lowercase word, no plural, before such a preposition, within four
    words of "did" (a subject may have a preposition of its own: "did customers from Spain
    buy in 2020")."""
    m = _DO_SUPPORT.search(question)
    if m and not _AFTER_PLACE_OR_TIME.search(question[: m.start(1)]):
        return m.group(1).lower()
    head = _DO_SUBJECT.search(question)
    if head is None:
        return None
    verbs = [
        v.group(1)
        for v in _CLAUSE_VERB.finditer(question, head.end())
        if not _PLURAL_END.search(v.group(1)) and len(question[head.end() : v.start()].split()) <= 3
    ]
    return verbs[-1] if verbs else (m.group(1).lower() if m else None)


# Verbs that ask whether a figure changed over time ("did delays fall in June?"): the
# answer compares a figure between two periods, a comparison no listing of the rows of
# one period makes, so such a verb is never excused as the verb that relates rows.
CHANGE_VERBS = frozenset(
    """
    fall rise increase decrease drop grow decline climb shrink improve worsen
    fell rose grew dropped increased decreased declined climbed shrank improved worsened
    """.split()
)


def stored_as_verb(verb: str, values: Container[str]) -> bool:
    """Whether a base verb ("close") is a state some column stores, as said or in its
    past form ('closed'): then it states a condition, it relates nothing."""
    return any(form in values for form in (verb, verb + "d", verb + "ed", *value_forms(verb)))


def value_forms(word: str) -> set[str]:
    """The forms a stored value may take when a question says it as another word class
    ("failed" for 'fail', "cancelled" for 'cancel', "dogs" for 'dog', "successful" for
    'success'): the word, its lemma, and without a past, plural or adjective ending; at
    least three letters each."""
    low = word.lower()
    forms = {low, lemma(low), low[:-1]}
    if low.endswith("ed"):
        forms.add(low[:-2])
    if low.endswith("ful"):
        forms.add(low[:-3])
    return {f for f in forms if len(f) > 2}


def lemma(word: str) -> str:
    """The stem, with irregular past forms read as their verb."""
    word = word.lower()
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    base = stem(word)
    if base.endswith("ing") and len(base) >= 6:
        return undoubled(base[:-3])  # "earning" -> earn, "running" -> run
    return base


def undoubled(root: str) -> str:
    """A root without the consonant an inflection doubled ("runn" -> run, "shipp" ->
    ship); "sell", "miss" and vowels are left alone."""
    return (
        root[:-1] if len(root) > 2 and root[-1] == root[-2] and root[-1] not in "aeiousl" else root
    )


def _abbreviates(short: str, word: str) -> bool:
    """``amt`` abbreviates amount, ``cust`` customer, ``dt`` date: same first letter, the
    short form's letters in order, and shorter than the word."""
    if len(short) < 2 or len(short) >= len(word) or short[0] != word[0] or short.isdigit():
        return False
    if word.startswith(short):
        return len(short) >= 3 or len(word) <= 5
    at = 0
    for ch in short:
        at = word.find(ch, at)
        if at < 0:
            return False
        at += 1
    return len(short) >= 2 and len(word) >= 4


# Short forms names use and the word a question says for each: general English, the
# same for every schema.
ABBREVIATIONS = {
    "no": "number",
    "num": "number",
    "nbr": "number",
    "cnt": "count",
    "qty": "quantity",
    "amt": "amount",
    "pct": "percent",
    "avg": "average",
    "dt": "date",
    "yr": "year",
    "desc": "description",
    "addr": "address",
    "tel": "telephone",
    "mgr": "manager",
    "dept": "department",
    "emp": "employee",
    "cust": "customer",
    "prod": "product",
    "acct": "account",
    "bal": "balance",
    "msg": "message",
    "qtr": "quarter",
    "dob": "birth",
    "ssn": "social",
    "descr": "description",
    "info": "information",
    "loc": "location",
    "stat": "status",
}
SHORT_FORMS: dict[str, list[str]] = {}
for _short, _word in ABBREVIATIONS.items():
    SHORT_FORMS.setdefault(_word, []).append(_short)


@functools.lru_cache(maxsize=65536)
def word_match(question_word: str, name_word: str) -> float:
    """How well a question word names a name part (1 the same word, 0 unrelated); pure,
    and called for every pair, so its answers are remembered."""
    if question_word == name_word:
        return 1.0
    if question_word in (name_word + "s", name_word + "es"):
        return 0.95  # a plural the stemmer leaves alone ("ids")
    if ABBREVIATIONS.get(name_word) == question_word:
        return 0.9
    if len(name_word) >= 3 and question_word in (
        name_word + "ed",
        name_word + "d",
        name_word + "ing",
        name_word + "es",
        name_word + "er",
    ):
        return 0.9
    if len(question_word) > 5 and question_word.endswith(("ing", "ed")):
        root = question_word[:-3] if question_word.endswith("ing") else question_word[:-2]
        if root and name_word.rstrip("e") == root.rstrip("e"):
            return 0.9
    if _abbreviates(name_word, question_word) and name_word not in STOP_WORDS:
        # (a name's grammar, the "at" of ``created_at``, abbreviates nothing: any word
        # with an "a" before a "t" would read it, "active", "amount")
        # a whole prefix of 4+ letters ("dest" for destination) says more than letters
        # picked in order ("dst"): the two must not tie when both are names in a schema
        if len(name_word) >= 4 and question_word.startswith(name_word):
            return 0.85
        return 0.8
    if len(question_word) >= 3 and name_word in (question_word + "er", question_word + "r"):
        return 0.8  # "owns" -> owner, "sells" -> seller
    if (
        len(name_word) >= 5
        and question_word.startswith(name_word[:-1])
        and len(question_word) <= len(name_word) + 3
    ):
        return 0.7
    return 0.0


def maybe_covers(words: Sequence[str], part: str) -> bool:
    """A cheap necessary condition for ``cover(words, part)`` to be non-zero."""
    return any(word_match(w, part) or (len(part) >= 6 and w[:3] in part) for w in words)


def cover(words: Sequence[str], part: str, *, partial: float = 0.6) -> tuple[float, set[int]]:
    """How much of one name part the words explain (0..1), and which words did; a
    concatenation counts when at least ``partial`` of its letters are covered."""
    share, which = _cover(tuple(words), part, partial)
    return share, set(which)


@functools.lru_cache(maxsize=65536)
def _cover(words: tuple[str, ...], part: str, partial: float) -> tuple[float, frozenset[int]]:
    share, which = _cover_once(words, part, partial)
    return share, frozenset(which)


@functools.lru_cache(maxsize=8192)
def _pieces(word: str) -> tuple[str, ...]:
    """What of a word may cover letters of a concatenated name, longest first: the word
    and its short forms, and their prefixes of 3+ letters (a 2-letter form only whole)."""
    forms = [word, *SHORT_FORMS.get(word, ())]
    sized = [(f[:n], n) for f in forms for n in range(len(f), 1, -1) if n >= 3 or n == len(f)]
    return tuple(piece for piece, _ in sorted(sized, key=lambda p: -p[1]))


def _cover_once(words: Sequence[str], part: str, partial: float) -> tuple[float, set[int]]:
    best = 0.0
    which: set[int] = set()
    for i, w in enumerate(words):
        m = word_match(w, part)
        if m > best:
            best, which = m, {i}
    if best >= 0.8 or len(part) < 5:
        return best, which
    # a concatenation ("tickersymbol", "custcountry", "flightno", "fname"): cover its
    # letters with the words, their short forms or their 3+ letter prefixes, longest
    # first; a word's first letter may open the name ("fname": first name)
    covered = [False] * len(part)
    used: set[int] = set()
    for i, w in sorted(enumerate(words), key=lambda p: -len(p[1])):
        for piece in _pieces(w):
            at = part.find(piece)
            if at >= 0 and not any(covered[at : at + len(piece)]):
                for k in range(at, at + len(piece)):
                    covered[k] = True
                used.add(i)
                break
    if not covered[0]:
        opener = next((i for i, w in enumerate(words) if i not in used and w[:1] == part[0]), None)
        if opener is not None and all(covered[1:]):
            covered[0] = True
            used.add(opener)
    share = sum(covered) / len(part)
    if len(part) < 6 and share < 1.0:
        return best, which  # a short name is a concatenation only when wholly covered
    if share >= partial and share > best:
        return share, used
    return best, which


# The grammar of questions about data: verbs, quantifiers, ranking and time words that
# shape a query without naming anything in the schema.
GRAMMAR_WORDS = frozenset(
    """
    never ever without missing lacking next because since sell sells run runs ran worth came
    come comes expected expect does held hold holds happened amount amounts case insensitive
    insensitively sensitive exact partial match matched matching wildcard wildcards starts
    start begins begin beginning contains contain containing ends ending letter letters live
    lives living reside resides located work works belong belongs combination combinations
    pair pairs breakdown common frequent frequently popular number count counts total totals
    sum average avg mean maximum max minimum min highest lowest largest smallest most least
    top bottom first last best worst greatest fewest distinct unique different overall
    combined day days daily week weeks weekly month months monthly quarter quarters
    quarterly year years yearly annual today yesterday current previous past ago until
    before after between inclusive exclusive excluding including include calendar date dates
    time times period range end starting return returns show shows list lists give find get
    tell calculate compute display output want need know see like would could should can
    will may might must shall many much more less fewer greater higher lower larger smaller
    than equal equals over under above below exactly approximately about around within per
    each every respective respectively both either neither also only just even order ordered
    sort sorted rank ranked ranking ascending descending alphabetical alphabetically arrange
    name names id ids record
    records entry entries row rows value values detail details made make makes done do
    happen occur occurred exist exists existing based join joining joined using use used
    doing left right inner outer who what which where when why how whose whom there here
    those these that this not no none any all some other others another same such along
    together note refers refer means defined definition sold bought sent paid given taken
    earlier later showing older younger heavier lighter taller shorter longer cheaper
    oldest youngest heaviest lightest tallest shortest longest cheapest newest
    """.split()
)


# The words that say an aggregate of a measure, and its SQL function ("the total
# amount", "the average price", "the largest balance"): the measure reader's, the head
# reader's and the verifier's one table.
AGGREGATE_WORDS = {
    "total": "SUM",
    "sum": "SUM",
    "average": "AVG",
    "avg": "AVG",
    "mean": "AVG",
    "maximum": "MAX",
    "max": "MAX",
    "highest": "MAX",
    "largest": "MAX",
    "minimum": "MIN",
    "min": "MIN",
    "lowest": "MIN",
    "smallest": "MIN",
}
SOFT_WORDS = frozenset(
    """
    name id number total amount count average avg maximum max minimum min sum mean
    """.split()
)


@dataclass(frozen=True)
class Tok:
    """One word, number or quoted string of a question: what it says, where it stands.
    The one token type of the SQL readers: :func:`tokenize` makes the plain ones, the
    mention chart (``linker._mentions.question_tokens``) its own, which read numbers
    (``number``), inner hyphens and possessives, from the same question."""

    text: str
    low: str
    stem: str
    start: int
    end: int
    quoted: bool = False
    number: float | None = None


def tokenize(text: str) -> list[Tok]:
    toks = []
    for m in _TOKEN.finditer(text):
        raw = m.group()
        if raw[0] in "'\"":
            toks.append(
                Tok(raw[1:-1], raw[1:-1].lower(), raw[1:-1].lower(), m.start(), m.end(), True)
            )
        else:
            toks.append(Tok(raw, raw.lower(), stem(raw), m.start(), m.end()))
    return toks
