"""Grading, query rewriting and extractive synthesis without a model (one module: all three
read questions against passages through the same coverage of stems).

Synthesis only ever copies sentences from passages or values from rows, each with its
citation id; when nothing covers the question it says the data does not contain the
answer. Nothing here can state a fact the evidence does not.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from services.common.llm import (
    Answer,
    AnswerSentence,
    Grade,
    MentionCheck,
    Passage,
    PassageGrade,
    Rewrite,
    RowSet,
)
from services.router.offline._cells import table_cells, without_tables
from services.router.offline._condition import question_case, sibling_case
from services.router.offline._negation import negated_stems, stated_negations, with_negatives
from services.router.offline._rows import state_rows
from services.router.offline._rules import search_query
from services.router.offline._text import (
    STOPWORDS,
    Unit,
    close_to_any,
    code_names,
    keywords,
    lowered_stems,
    split_sentences,
    split_units,
    stem,
    synonyms,
    tokenize,
    word_list,
)

NO_ANSWER = "The data does not contain the answer to this question."
PARTIAL_NOTE = "Some steps failed, so this answer rests on partial results."
# How a refusal names the question's words that no passage found holds (``unplaced_note``).
UNPLACED_NOTE = "The passages found do not mention "
# Before what the SQL service said when it declined a step's question: a refusal over data
# names the phrase it could not place, as one over documents names the words.
SQL_REFUSAL_NOTE = "Asked of the database"
RELEVANT_AT = 0.5
MAX_SENTENCES = 4

# Words that shape a question but are not what it is about.
_QUESTION_NOISE = frozenset(
    word_list(
        """
        good best fit fits look looks like lot lots key main top latest recent current
        important notable say said says mention mentioned mentions discuss discussed why
        does did do company's our their its write written use
        used using way ways kind kinds type types tell explain describe summarize summarise
        """
    )
)


_STOP_STEMS = frozenset(stem(w) for w in STOPWORDS)

# Sentences that address the reader as a model are instructions, never evidence.
_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget)\b.{0,40}\b(instructions?|rules|prompt|above|previous)\b"
    r"|\b(system prompt|you are now|you must now|act as|new instructions)\b"
    r"|<\s*/?\s*(system|assistant|user)\s*>|^\s*(system|assistant)\s*:",
    re.IGNORECASE,
)


# Noise as the question's own scaffold ("what kind of …", "which types") or inside a
# hyphenated name ("--exclude-type"); standing alone they are what the question asks
# about ("the type of each file system", "which content type").
_KIND_WORDS = r"way|ways|kind|kinds|type|types"
_KIND_SET = frozenset(_KIND_WORDS.split("|"))
_KIND_ASKED = re.compile(rf"(?<![\w-])(?<!what )(?<!which )({_KIND_WORDS})(?![\w-])", re.I)


def question_terms(question: str) -> list[str]:
    """The question's topic words (placeholders such as ``{{s1}}`` removed)."""
    text = re.sub(r"\{\{[^}]*\}\}", " ", question)
    words = keywords(text)
    if not _KIND_SET.intersection(words):
        return [k for k in words if k not in _QUESTION_NOISE]
    asked = {m.group(1).lower() for m in _KIND_ASKED.finditer(text)}
    return [k for k in words if k not in _QUESTION_NOISE or k in asked]


@dataclass(frozen=True)
class _Coverage:
    matched: tuple[str, ...]
    fraction: float


@functools.lru_cache(maxsize=4096)
def _analyse(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of ``text``, and those of its words of four letters or more (the fuzzy
    match's vocabulary). No token spans a line break, so two lines joined analyse as the
    union of the two. Remembered, like the split: retrieved sentences recur."""
    pairs = lowered_stems(text)
    return frozenset(s for _, s in pairs), frozenset(s for low, s in pairs if len(low) >= 4)


def _coverage(terms: Sequence[str], text: str) -> _Coverage:
    if not terms:
        return _Coverage((), 0.0)
    return _covered(terms, *_analyse(text))


def _covered(
    terms: Sequence[str],
    stems: frozenset[str],
    word_stems: frozenset[str],
    typo: Callable[[str, frozenset[str]], bool] | None = None,
) -> _Coverage:
    """Which of ``terms`` the text of ``stems`` holds: the stem, a synonym, or (five
    letters or more) a one-typo variant; ``typo`` checks that last (remembered per text
    unless given)."""
    if not terms:
        return _Coverage((), 0.0)
    typo_of_any = typo or _typo_of_any
    matched = []
    for term in terms:
        if (
            stem(term) in stems
            or any(stem(s) in stems for s in synonyms(term))
            or (len(term) >= 5 and typo_of_any(stem(term), word_stems))
        ):
            matched.append(term)
    return _Coverage(tuple(matched), len(matched) / len(terms))


@functools.lru_cache(maxsize=16384)
def _typo_of_any(target: str, word_stems: frozenset[str]) -> bool:
    """Whether a stem of ``word_stems`` is one typo from ``target``. Remembered per text:
    the same question words meet the same retrieved sentences again and again."""
    return close_to_any(target, word_stems, cutoff=0.88)


def grade(question: str, passages: Sequence[Passage]) -> Grade:
    """Relevance from term coverage (75%) and the retrieval score relative to the best (25%)."""
    terms = question_terms(question)
    scores = [p.score for p in passages if p.score is not None and p.score > 0]
    best = max(scores) if scores else None
    grades: list[PassageGrade] = []
    covered: set[str] = set()
    for passage in passages:
        cov = _coverage(terms, f"{passage.title}\n{passage.text}")
        covered.update(cov.matched)
        if best and passage.score is not None:
            combined = 0.75 * cov.fraction + 0.25 * max(0.0, passage.score) / best
        else:
            combined = cov.fraction
        relevant = cov.fraction > 0 and combined >= RELEVANT_AT
        grades.append(PassageGrade(passage.id, relevant, round(combined, 3)))
    missing = tuple(t for t in terms if t not in covered)
    top = max((g.score for g in grades), default=0.0)
    return Grade(
        relevant=any(g.relevant for g in grades),
        score=top,
        passages=tuple(grades),
        missing_terms=missing,
    )


def rewrite(
    question: str,
    previous_queries: Sequence[str],
    missing_terms: Sequence[str],
    passages: Sequence[Passage] = (),
) -> Rewrite:
    """Keywords with the gaps first, plus synonyms and the words the best passages use
    beside the question's (the collection's own vocabulary for what was asked); each
    attempt widens, none repeats."""
    terms = question_terms(question) or keywords(question)
    missing = [m.lower() for m in missing_terms if m.strip()]
    ordered = [*[m for m in missing if m in terms], *[t for t in terms if t not in missing]]
    ordered += [m for m in missing if m not in ordered]
    attempt = len(previous_queries)
    # First try: one synonym for each gap. Later tries: up to three for every term.
    pool = (missing or terms) if attempt == 0 else [*missing, *terms]
    per_term, budget = (1, 4) if attempt == 0 else (3, 8)
    expansions: list[str] = []
    for term in pool:
        for synonym in synonyms(term)[:per_term]:
            if synonym not in ordered and synonym not in expansions:
                expansions.append(synonym)
    expansions = expansions[:budget]
    for word in feedback_words(question, passages):
        if word not in ordered and word not in expansions:
            expansions.append(word)
    seen = {_squash(q) for q in previous_queries}
    candidates = [
        " ".join([*ordered, *expansions]),
        search_query(question),
        " ".join(f'"{t}"' if " " in t else t for t in [*ordered, *expansions, question.strip()]),
    ]
    for query in candidates:
        if query.strip() and _squash(query) not in seen:
            return Rewrite(query.strip(), tuple(ordered), tuple(expansions))
    return Rewrite(candidates[0].strip() or question.strip(), tuple(ordered), tuple(expansions))


# Words taken from the best passages into a rewritten query.
FEEDBACK_WORDS = 4


def feedback_words(question: str, passages: Sequence[Passage]) -> list[str]:
    """The rarest words of the sentences that best match ``question`` that the question
    does not use: how the collection itself says what was asked ("troops" for "soldiers"),
    for a second search (pseudo-relevance feedback)."""
    if not passages:
        return []
    best = ranked_sentences(question, passages)[:2]
    if not best:
        return []
    asked, _ = _analyse(question)
    counts: dict[str, int] = {}
    for passage in passages:
        for word in set(keywords(passage.text)):
            counts[stem(word)] = counts.get(stem(word), 0) + 1
    words: dict[str, int] = {}
    for candidate in best:
        for word in keywords(candidate.text):
            if stem(word) in asked or stem(word) in _STOP_STEMS or len(word) < 4:
                continue
            words.setdefault(word, counts.get(stem(word), 0))
    return sorted(words, key=lambda w: (words[w], list(words).index(w)))[:FEEDBACK_WORDS]


# The most phrases a refusal names: the question's own words, not a list of them.
MAX_UNPLACED = 3


def unplaced(question: str, passages: Sequence[Passage]) -> tuple[str, ...]:
    """The question's topic phrases that none of ``passages`` holds, as the question
    writes them, in its order (neighbouring absent words are one phrase: "flux
    capacitor").

    A word counts as held when any passage or its title holds its stem, a synonym, a
    one-typo variant (the answer picker's own match), the word itself inside a longer
    one ("home" in "homedir") or, for "slower" or "natively", its base ("slows",
    "native"): a refusal may say a word is missing from what was found,
    never that a passage lacks a word it has."""
    absent = _absent(question_terms(question), passages)
    if not absent:
        return ()
    phrases: list[str] = []
    run: list[str] = []
    end = 0
    for token in [*tokenize(question), None]:
        # A phrase is absent words written side by side: any other word or a
        # punctuation mark between two ends it ("yaml, toml" is two).
        joined = token is not None and not question[end : token.start].strip()
        if run and not (token is not None and token.low in absent and joined):
            if " ".join(run) not in phrases:
                phrases.append(" ".join(run))
            run = []
        if token is not None:
            if token.low in absent:
                run.append(token.raw)
            end = token.end
    return tuple(phrases[:MAX_UNPLACED])


def _absent(terms: Sequence[str], passages: Sequence[Passage]) -> frozenset[str]:
    """The ``terms`` that none of ``passages`` holds, as ``unplaced`` reads "held"."""
    if not terms or not passages:
        return frozenset()
    held = "\n".join(f"{p.title}\n{p.text}" for p in passages)
    stems, word_stems = _analyse_once(held)
    found = set(_covered(terms, stems, word_stems, typo=_typo_once).matched)
    lowered = held.lower()
    return frozenset(
        t for t in terms if t not in found and not any(b in lowered for b in _bases(t))
    )


def unfounded(question: str, passages: Sequence[Passage], best: Candidate) -> bool:
    """Whether the passages lack more of the question's topic words than ``best``, the
    unit that would answer, says: "Which sort option sets the warp drive speed?" over
    sort(1) would be answered by the sentence that shares "sort" and "set" (the LC_ALL
    line), though nothing found mentions a warp drive or a speed. Such an answer is a
    confident guess, and a refusal that names the missing words says more.

    Counted, not weighted, and against the one unit: a question phrased in other words
    than its passage (one or two words of it absent, as in most paraphrased questions)
    keeps its answer whenever that unit says as many of its words as are missing. The
    unit's share is checked first: the passages are read again only when the unit says
    fewer than half of the question's words, which no complete answer does."""
    terms = question_terms(question)
    said = len(set(terms).intersection(best.matched))
    if not terms or 2 * said >= len(terms):
        return False
    return len(_absent(terms, passages)) > said


# A comparative, superlative or adverb and its base ("slower" is held by "slows down",
# "natively" by "native"): what a refusal must not call absent.
_DEGREE = re.compile(r"(?:i?er|i?est|i?ly)$")


def _bases(term: str) -> tuple[str, ...]:
    """``term`` and, for a comparative, superlative or adverb, its base (four letters or
    more): each is held when the passages' text holds it anywhere."""
    base = _DEGREE.sub("", term)
    return (term, base) if base != term and len(base) >= 4 else (term,)


def _analyse_once(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """``_analyse`` without remembering: the whole of a refusal's passages, read once."""
    pairs = lowered_stems(text)
    return frozenset(s for _, s in pairs), frozenset(s for low, s in pairs if len(low) >= 4)


def _typo_once(target: str, word_stems: frozenset[str]) -> bool:
    """``_typo_of_any`` not remembered: a refusal's text is read once, and a cache
    would keep its whole vocabulary alive."""
    return close_to_any(target, word_stems, cutoff=0.88)


def unplaced_note(question: str, passages: Sequence[Passage]) -> str | None:
    """The sentence a refusal adds when the passages found lack some of the question's
    words ('The passages found do not mention "flux capacitor".'): what to search for
    or upload, instead of a bare "no answer". None when they hold every word (the
    passages do not connect them, and no word can be named)."""
    phrases = unplaced(question, passages)
    if not phrases:
        return None
    quoted = [f'"{p}"' for p in phrases]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"{UNPLACED_NOTE}{listed}."


def sql_refusal_note(database: str, message: str) -> str:
    """The sentence a refusal adds when a SQL step was declined with a reason ('Asked of
    the database "shop": could not place 'quantity' — nearest: orders.quantity?')."""
    said = message.strip()
    named = f' "{database}"' if database else ""  # none: the SQL service's default
    return f"{SQL_REFUSAL_NOTE}{named}: {said if said.endswith(('?', '.')) else said + '.'}"


def framing(text: str) -> bool:
    """Whether ``text`` frames an answer rather than claims from evidence (no answer, a
    partial note, the words a refusal could not place): it needs no citation."""
    return text in (NO_ANSWER, PARTIAL_NOTE) or text.startswith((UNPLACED_NOTE, SQL_REFUSAL_NOTE))


def _squash(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def synthesize(
    question: str,
    passages: Sequence[Passage],
    rows: Sequence[RowSet],
    partial: bool,
    mention: MentionCheck | None = None,
) -> Answer:
    """Best supporting sentences and row values, each cited; else say the data lacks it.
    With ``mention``: which members of the set their passages show mentioning the topic."""
    sentences: list[AnswerSentence] = []
    confidences: list[float] = []
    for rowset in rows:
        stated = state_rows(rowset, question)
        sentences.extend(stated)
        confidences.extend(0.9 for _ in stated)
    if mention is not None and mention.members:
        checked = mention_sentences(mention, passages)
        sentences.extend(checked)
        confidences.extend(0.9 for _ in checked)
        picked = []
    else:
        # A table that singles out a row answers with its cells; else the sentences.
        picked = table_cells(
            _cell_terms(question), passages, defined_names(question)
        ) or _pick_sentences(question, without_tables(passages), passages)
    for text, citation, fraction in picked:
        sentences.append(AnswerSentence(text, (citation,)))
        confidences.append(fraction)
    if not sentences:
        return Answer((AnswerSentence(NO_ANSWER),), supported=False, confidence=0.0)
    confidence = sum(confidences) / len(confidences)
    if partial:
        sentences.append(AnswerSentence(PARTIAL_NOTE))
        confidence *= 0.6
    return Answer(tuple(sentences), supported=True, confidence=round(min(confidence, 1.0), 3))


# How a sentence is ranked: how much of the question it covers (IDF-weighted, 0..1), where
# search ranked its passage (the first passage holds the answer most often), and whether
# it holds the kind of thing the question asks for (a date for "when", a number for "how
# many", a name for "who") that the question itself does not.
RANK_WEIGHT = 0.2
CUE_WEIGHT = 0.25
PAIR_WEIGHT = 0.2
# The least weighted coverage a sentence needs to be stated at all.
SUPPORT_AT = 0.2
# A second sentence scores at least this share of the first's.
SECOND_AT = 0.65

_YEAR = r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\b\d{1,2}(?:st|nd|rd|th) century\b"
_MONTH = (
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December)\b"
)
_NUMBER = (
    r"\b\d[\d,.]*\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen)s?\b"
)
_NAME = r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+(?:[A-Z][a-z]+|[A-Z]\.))*"
# What a question asks for, by its wording: (question pattern, answer pattern).
_CUES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (
        re.compile(r"\b(?:when|what (?:year|date|century|decade|month|day))\b", re.I),
        re.compile(f"{_YEAR}|{_MONTH}"),
    ),
    (
        re.compile(
            r"\bhow (?:many|much|long|old|far|large|big|tall|high|often)\b"
            r"|\bwhat (?:percentage|percent|proportion|number|amount)\b",
            re.I,
        ),
        re.compile(f"{_NUMBER}|%", re.I),
    ),
    (re.compile(r"\b(?:who|whom|whose)\b", re.I), re.compile(_NAME)),
    (re.compile(r"\bwhere\b", re.I), re.compile(_NAME)),
)


def _pairs(terms: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Neighbouring topic words of the question, as stems ("improved response")."""
    stems = [stem(t) for t in terms]
    return tuple(itertools.pairwise(stems))


def _paired(pairs: Sequence[tuple[str, str]], sentence: str) -> float:
    """The share of ``pairs`` that ``sentence`` also says close together, in order."""
    if not pairs:
        return 0.0
    stems = [s for _, s in lowered_stems(sentence)]
    where: dict[str, list[int]] = {}
    for index, word in enumerate(stems):
        where.setdefault(word, []).append(index)
    near = 0
    for first, second in pairs:
        if any(0 < j - i <= 3 for i in where.get(first, ()) for j in where.get(second, ())):
            near += 1
    return near / len(pairs)


# "how many employees": a number answers it only beside what it counts.
_COUNTED = re.compile(r"\bhow (?:many|much) (?P<what>[a-z][\w-]*)", re.I)
# A second question inside the first ("…, and what did they raise?").
_SECOND_QUESTION = re.compile(r"(?:,|;|\band)\s+(?:what|who|which|when|where|why|how)\b", re.I)


def _counted(question: str) -> str | None:
    """The stem of what a "how many/much X" question counts, when it names it and asks
    nothing else (a compound question's other half is answered by other sentences)."""
    match = _COUNTED.search(question)
    if match is not None and _SECOND_QUESTION.search(question):
        return None
    if match is None or match.group("what").lower() in STOPWORDS:
        return None
    return stem(match.group("what").lower())


# A question that asks what something is or does, as a whole: "What does df's -v option
# do?", "What does the F_OK constant indicate?", "What is O_TRUNC?".
_DEFINITION = re.compile(
    r"^\s*what\s+(?:(?:does|do|did)\b.*\b(?:do|mean|indicate|signify|stand\s+for|control)"
    r"|(?:is|are)\s+(?:the\s+)?\S+(?:\s+(?:option|flag|constant|switch))?)\s*\??\s*$",
    re.I,
)


def defined_names(question: str) -> frozenset[str]:
    """The options and identifiers (``code_names``) a question asks the meaning of: its
    whole answer is the entry that name opens (a table row, an option line). Empty for
    a question that writes a name but asks something else of it ("Is the PATTERN given
    to du --exclude a regular expression?": the entry does not say)."""
    if _DEFINITION.match(question) is None:
        return frozenset()
    return code_names(question)


def _cue(question: str) -> re.Pattern[str] | None:
    """The pattern an answer to ``question`` holds, when its wording says (else None)."""
    for asks, answer in _CUES:
        if asks.search(question):
            return answer
    return None


def _holds_new(pattern: re.Pattern[str], sentence: str, question: str) -> bool:
    """``sentence`` holds a match of ``pattern`` that the question does not already say."""
    asked = question.lower()
    return any(m.group(0).lower() not in asked for m in pattern.finditer(sentence))


# A number the question writes: not the digits of a name ("ASN.1", "UTF-8", "x86"),
# which say which thing, not a number to find.
_NUMBER_TERM = re.compile(r"(?<![A-Za-z][.-])(?<!\w)(?:\d[\d,.]*\d|\d)\b")


def question_numbers(question: str) -> list[str]:
    """The numbers ``question`` writes ("protocol number 89", "hired in 1888")."""
    return _NUMBER_TERM.findall(question)


def _cell_terms(question: str) -> list[str]:
    """The question's topic words and numbers ("protocol number 89"): what names a
    table's row or column."""
    terms = question_terms(question)
    return terms + [n for n in question_numbers(question) if n not in terms]


def _pick_sentences(
    question: str, passages: Sequence[Passage], found: Sequence[Passage]
) -> list[tuple[str, str, float]]:
    """The unit that best answers ``question``, and a second sentence from the same
    document only when it scores close to the first (see ``_adds``); each cited. Nothing
    when no unit covers enough of the question, or when the passages ``found`` (tables
    included) lack more of its words than the best unit says (``unfounded``)."""
    ranked = ranked_sentences(question, passages)
    if not ranked or unfounded(question, found, ranked[0]):
        return []
    first = ranked[0]
    picked = [first]
    titles = {p.id: p.title for p in passages}
    second = next((c for c in ranked[1:] if _adds(c, first, titles)), None)
    if second is not None:
        picked.append(second)
    return [
        (c.text if c.text[-1] in ".!?" else c.text + ".", c.passage_id, c.fraction) for c in picked
    ]


def _adds(candidate: Candidate, first: Candidate, titles: Mapping[str, str]) -> bool:
    """Whether ``candidate`` is stated beside ``first``: when another sentence of the same
    document scores close to the first, the evidence does not single out one sentence,
    and the answer gives both rather than guess (never a sentence of another document:
    an answer reads as one source). An option, a list item or a line is an answer on its
    own: its neighbours describe other things, so none is added beside it."""
    return (
        first.kind == "sentence"
        and candidate.kind == "sentence"
        and titles.get(candidate.passage_id) == titles.get(first.passage_id)
        and candidate.score >= SECOND_AT * first.score
    )


@dataclass(frozen=True)
class Candidate:
    """A unit that could answer: its score, text, passage, the share of the question's
    words it covers (the answer's confidence), its kind (see ``Unit``) and the question's
    words and numbers it covers (with its passage's title)."""

    score: float
    text: str
    passage_id: str
    fraction: float
    kind: str = "sentence"
    matched: tuple[str, ...] = ()


def passage_units(passage: Passage) -> tuple[Unit, ...]:
    """The units of ``passage`` an answer may quote: the one place they are chosen (a
    sentence, an option with its description, a list item, a line of a listing)."""
    return split_units(passage.text)


# What a lead-in ("… are in the following range:") is stated with: the units it
# introduces, up to this many and about this many words.
LEAD_UNITS = 8
LEAD_WORDS = 60


def _introduced(units: Sequence[Unit], at: int) -> str:
    """The lead-in at ``at`` with what it introduces: the run of options, items or lines
    that follows it (bounded), or the one sentence after it. A lead-in states no answer
    of its own; the words after its colon are the answer."""
    lead = units[at]
    taken: list[Unit] = []
    words = len(lead.text.split())
    for unit in units[at + 1 : at + 1 + LEAD_UNITS]:
        if taken and (
            taken[0].kind == "sentence"
            or unit.kind != taken[0].kind
            or unit.block > taken[-1].block + 1
        ):
            break
        if unit.lead_in or (taken and words + len(unit.text.split()) > LEAD_WORDS):
            break
        taken.append(unit)
        words += len(unit.text.split())
    if not taken:
        return lead.text
    # Items are joined as a list is read aloud: each closed, the last by the sentence.
    said = [u.text if u.text[-1] in ".!?;," else u.text + ";" for u in taken]
    return " ".join([lead.text, *said]).rstrip(";")


def _heading(units: Sequence[Unit], at: int) -> bool:
    """Whether the unit at ``at`` is a heading of what follows it: short, unpunctuated,
    first of its paragraph, with more of the passage after it."""
    unit = units[at]
    return (
        unit.kind in ("sentence", "line")
        and unit.text[-1] not in ".!?:;,"
        and len(unit.text.split()) <= HEADING_WORDS
        and at + 1 < len(units)
        and (at == 0 or units[at - 1].block != unit.block)
    )


HEADING_WORDS = 12

# What a unit's kind says without words: an option line is about an option ("Which
# option keeps …" is answered by "-k --keep Keep …", which never says "option").
_KIND_STEMS = {"option": frozenset(stem(w) for w in ("option", "flag", "switch"))}


def _unit_analysis(unit: Unit) -> tuple[frozenset[str], frozenset[str]]:
    stems, word_stems = _analyse(unit.text)
    implied = _KIND_STEMS.get(unit.kind)
    return (stems | implied, word_stems | implied) if implied else (stems, word_stems)


def ranked_sentences(question: str, passages: Sequence[Passage]) -> list[Candidate]:
    """Every unit that covers enough of ``question``, best first."""
    terms = question_terms(question)
    if not terms:
        return []
    # Numbers and years name what is asked about ("hired in 1888") as sharply as words.
    terms += [n for n in question_numbers(question) if n not in terms]
    pairs = _pairs(terms)
    candidates: list[Candidate] = []
    document_frequency: dict[str, int] = {}
    split = [(p, passage_units(p)) for p in passages]
    total = sum(len(s) for _, s in split) or 1
    # Each unit and title analysed once: the frequencies, the filter and the scoring
    # below all read them (a title's line joins its unit's analysis by union).
    analysed = {unit.text: _unit_analysis(unit) for _, units in split for unit in units}
    # "not mounted" is held by "unmounted" (and "not zero" by "nonzero"): the sentence
    # stating the condition the question sets, not only the one stating its opposite.
    negated = negated_stems(question)
    if negated:
        analysed = {t: (with_negatives(s, negated), w) for t, (s, w) in analysed.items()}
    own = {text: _covered(terms, *analysis) for text, analysis in analysed.items()}
    for _, units in split:
        for unit in units:
            for term in set(own[unit.text].matched):
                document_frequency[term] = document_frequency.get(term, 0) + 1
    weights = {t: 1.0 + math.log((1 + total) / (1 + document_frequency.get(t, 0))) for t in terms}
    weight_sum = sum(weights.values())
    question_stems, _ = _analyse(question)
    cue = _cue(question)
    counted = _counted(question)
    case = question_case(question)
    for rank, (passage, units) in enumerate(split):
        title_stems, title_word_stems = _analyse(passage.title)
        for at, unit in enumerate(units):
            sentence = unit.text
            if not own[sentence].matched or _INSTRUCTION.search(sentence):
                continue
            # The passage title is context for each of its units ("Acme brief: …").
            stems, word_stems = analysed[sentence]
            # What the unit says beyond the question's own words: a heading or a
            # restatement that adds nothing (a word at most, for a heading) answers nothing.
            added = stems - question_stems - _STOP_STEMS
            if unit.lead_in and at + 1 < len(units):
                sentence = _introduced(units, at)
                if not (_analyse(sentence)[0] - question_stems - _STOP_STEMS):
                    continue
            elif not added or (len(added) < 2 and _heading(units, at)):
                continue
            if counted is not None and not _covered((counted,), stems, word_stems).matched:
                continue  # a number that counts something else is not the answer
            if sibling_case(case, unit.text):
                continue  # "On POSIX, …" says nothing of the question's "On Windows, …"
            cov = _covered(terms, title_stems | stems, title_word_stems | word_stems)
            weighted = sum(weights[t] for t in cov.matched) / weight_sum
            if weighted < SUPPORT_AT:
                continue
            typed = cue is not None and _holds_new(cue, sentence, question)
            # A unit that says a negated word negated, as the question does, holds the
            # question's "not" too: it counts that word once more ("nonzero" over "zero").
            said = stated_negations(unit.text, negated)
            if said:
                weighted += sum(weights[t] for t in cov.matched if stem(t) in said) / weight_sum
            score = (
                weighted
                + RANK_WEIGHT / (1 + rank)
                + (CUE_WEIGHT if typed else 0.0)
                + PAIR_WEIGHT * _paired(pairs, unit.text)
            )
            candidates.append(
                Candidate(score, sentence, passage.id, cov.fraction, unit.kind, cov.matched)
            )
    # Stable: equal scores keep the search's order.
    return sorted(candidates, key=lambda c: -c.score)


def topic_pattern(topic: str) -> re.Pattern[str]:
    """The topic's words in order, each as a word start ("security review" also matches
    "Security reviews"); a leading article is not required."""
    words = re.findall(r"\w+", topic.lower())
    if words and words[0] in ("a", "an", "the", "any") and len(words) > 1:
        words = words[1:]
    return re.compile(r"\b" + r"\w*[\s-]+".join(re.escape(w) for w in words) + r"\w*", re.I)


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def mention_sentences(check: MentionCheck, passages: Sequence[Passage]) -> list[AnswerSentence]:
    """Who does and who does not mention ``check.topic``: a member mentions it when one of
    its own passages contains the topic's words; the set itself is cited from its rows."""
    by_id = {p.id: p for p in passages}
    pattern = topic_pattern(check.topic)
    rows = (check.members[0].rows_id,)
    mentioning: list[tuple[str, Passage]] = []
    silent: list[str] = []
    unread: list[str] = []
    for member in check.members:
        own = [by_id[i] for i in member.passage_ids if i in by_id]
        hit = next((p for p in own if pattern.search(p.text)), None)
        if hit is not None:
            mentioning.append((member.name, hit))
        elif own:
            silent.append(member.name)
        else:
            unread.append(member.name)
    count = len(check.members)
    topic, documents = check.topic.strip(), check.documents.strip() or "documents"
    out: list[AnswerSentence] = []
    if mentioning:
        names = [n for n, _ in mentioning]
        verb = "mentions" if len(names) == 1 else "mention"
        out.append(
            AnswerSentence(
                f"Of these {count}, {_join(names)} {verb} {topic} in their {documents}.",
                tuple(dict.fromkeys(p.id for _, p in mentioning)),
            )
        )
    else:
        out.append(
            AnswerSentence(f"None of these {count} mention {topic} in their {documents}.", rows)
        )
    if silent and mentioning:
        verb = "does" if len(silent) == 1 else "do"
        out.append(
            AnswerSentence(
                f"{_join(silent)} {verb} not mention {topic} in the {documents} retrieved for "
                f"{'it' if len(silent) == 1 else 'them'}.",
                rows,
            )
        )
    if unread:
        out.append(AnswerSentence(f"No {documents} were found for {_join(unread)}.", rows))
    for _, passage in mentioning[:MAX_SENTENCES]:
        quote = next((q for q in split_sentences(passage.text) if pattern.search(q)), None)
        if quote is not None and not _INSTRUCTION.search(quote):
            out.append(AnswerSentence(quote if quote[-1] in ".!?" else quote + ".", (passage.id,)))
    return out
