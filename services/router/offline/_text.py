"""Tokens, stems, stopwords, typo tolerance and a small business thesaurus.

The deterministic provider's rules all read text through these helpers, so a plural,
a capitalised word or a one-letter typo is treated the same way in every role.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(
    r"\d{4}-\d{2}-\d{2}"  # ISO date
    r"|\$?\d[\d,]*(?:\.\d+)?(?:[kmb]\b)?"  # number, optional $ and k/m/b suffix
    r"|[A-Za-z][A-Za-z0-9_]*(?:'[A-Za-z]+)?"  # word, optional 's / n't
)


def word_list(text: str) -> list[str]:
    """The whitespace-separated words of a literal word list."""
    return text.split()


STOPWORDS = frozenset(
    word_list(
        """
        a an the and or but if then else of to in on at by for from with without into onto
        about above below over under between among through during before after since until
        is are was were be been being am do does did done doing have has had having i me my
        mine we us our you your he him his she her it its they them their this that these
        those there here what which who whom whose when where why how can could would should
        shall will may might must please kindly just also too very some any all each every
        both either neither no not nor only own same so than such as up down out off again
        further once more most less least few fewer many much tell show give list find get
        let know see say s t don doesn didn isn aren wasn weren hasn haven hadn won't can't
        whats what's hows how's thanks thank hi hello hey
        """
    )
)

# Question scaffolding: words that carry no topic for search or grading.
FILLER = frozenset(
    word_list(
        """
        tell show give list find get let know see look display describe explain summarize
        summarise summary provide share want need like would could please kindly help me
        information info details detail data thing things stuff anything something
        everything question answer regarding re
        """
    )
)

# Groups of interchangeable business words; a member links to or expands to the others.
THESAURUS: tuple[tuple[str, ...], ...] = (
    ("company", "account", "customer", "client", "firm", "organization", "organisation"),
    ("opportunity", "deal", "opp", "pipeline"),
    ("contact", "person", "people", "stakeholder", "buyer"),
    ("activity", "interaction", "touchpoint", "engagement"),
    ("product", "item", "sku", "offering"),
    ("employee", "headcount", "staff", "workforce"),
    ("amount", "value", "worth"),
    ("revenue", "turnover", "income"),
    ("industry", "sector", "vertical"),
    ("stage", "status", "phase"),
    ("region", "territory", "geography"),
    ("owner", "rep", "salesperson", "seller", "owns"),
    ("score", "rating"),
    ("price", "cost", "pricing"),
    ("email", "mail"),
    ("phone", "telephone"),
    ("title", "position", "job"),
    ("note", "memo", "writeup"),
    ("churn", "attrition", "cancellation"),
    ("issue", "problem", "complaint", "concern", "objection"),
    ("policy", "guideline", "rule"),
    ("contract", "agreement"),
    ("discount", "rebate"),
    ("renewal", "renew"),
    ("meeting", "call"),
)


@dataclass(frozen=True)
class Token:
    """A word or number in a question, with its position and stem."""

    raw: str
    low: str
    stem: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Words and numbers of ``text`` in order; possessive ``'s`` is dropped."""
    tokens = []
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        if raw.lower().endswith("'s"):
            raw = raw[:-2]
        low = raw.lower()
        tokens.append(Token(raw, low, stem(low), match.start(), match.start() + len(raw)))
    return tokens


def lowered_stems(text: str) -> list[tuple[str, str]]:
    """``(token.low, token.stem)`` of each of ``tokenize(text)``'s tokens, without building
    them: the extractive synthesis reads only these two, for every retrieved sentence."""
    pairs = []
    for match in _TOKEN.finditer(text):
        low = match.group(0).lower()
        if low.endswith("'s"):
            low = low[:-2]
        pairs.append((low, stem(low)))
    return pairs


@functools.lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing/-ed and a final e (close/closed/closing)."""
    w = word.lower()
    if len(w) <= 3 or not w.isalpha():
        return w
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch")):
        if w.endswith(suffix) and len(w) > len(suffix) + 1:
            w = w[: -len(suffix)] + replacement
            break
    else:
        if w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    for suffix, minimum in (("ing", 6), ("ed", 5)):
        if w.endswith(suffix) and len(w) >= minimum:
            w = w[: -len(suffix)]
            if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def is_content(token: Token) -> bool:
    """A token that carries topic: not a stopword, not filler, not punctuation-like."""
    return token.low not in STOPWORDS and token.low not in FILLER and len(token.low) > 1


def keywords(text: str) -> list[str]:
    """Content words of ``text`` in order of first appearance, lowercased, unique."""
    seen: dict[str, None] = {}
    for token in tokenize(text):
        if is_content(token) and not re.fullmatch(r"\$?[\d.,]+[kmb]?", token.low):
            seen.setdefault(token.low, None)
    return list(seen)


def similar(a: str, b: str, cutoff: float = 0.85) -> bool:
    """True when two words are one typo apart (compared on stems, length ≥ 4)."""
    sa, sb = stem(a), stem(b)
    if sa == sb:
        return True
    if min(len(sa), len(sb)) < 4:
        return False
    return difflib.SequenceMatcher(None, sa, sb).ratio() >= cutoff


def closest(word: str, vocabulary: list[str], cutoff: float = 0.85) -> str | None:
    """The vocabulary word (compared by stem) nearest to ``word``, if it is a near typo."""
    target = stem(word)
    if len(target) < 4:
        return None
    stems = {stem(v): v for v in vocabulary if len(stem(v)) >= 4}
    match = difflib.get_close_matches(target, list(stems), n=1, cutoff=cutoff)
    return stems[match[0]] if match else None


def has_close(word: str, vocabulary: Iterable[str], cutoff: float = 0.85) -> bool:
    """``closest(word, vocabulary, cutoff) is not None``, with each (stem, stem) verdict
    remembered: synthesis asks it of the same question and passage words again and again.

    ``get_close_matches`` finds a match exactly when some candidate's ``ratio()`` reaches
    the cutoff (its quick ratios are upper bounds), so the answer is the same.
    """
    return close_to_any(stem(word), {stem(v) for v in vocabulary}, cutoff)


def close_to_any(target: str, stems: Iterable[str], cutoff: float = 0.85) -> bool:
    """``has_close`` for a stemmed word and already stemmed vocabulary."""
    size = len(target)
    if size < 4:
        return False
    # The length bound of ``_near`` inline: most candidates end here, without a call.
    return any(
        _near(target, candidate, cutoff)
        for candidate in stems
        if len(candidate) >= 4 and 2 * min(size, len(candidate)) >= cutoff * (size + len(candidate))
    )


@functools.lru_cache(maxsize=65536)
def _near(target: str, candidate: str, cutoff: float) -> bool:
    # Lengths alone bound the ratio (2 * matches / total): most pairs end here, without
    # building a matcher. Then the order get_close_matches compares in, with its cheaper
    # upper bound first; the verdict is the same as ``ratio() >= cutoff``.
    shorter, total = min(len(target), len(candidate)), len(target) + len(candidate)
    if 2 * shorter < cutoff * total:
        return False
    matcher = difflib.SequenceMatcher(None, candidate, target)
    return matcher.quick_ratio() >= cutoff and matcher.ratio() >= cutoff


def synonyms(word: str) -> tuple[str, ...]:
    """Other members of every thesaurus group ``word`` belongs to (by stem)."""
    return _SYNONYMS.get(stem(word), ())


def _synonym_index() -> dict[str, tuple[str, ...]]:
    index: dict[str, dict[str, None]] = {}
    for group in THESAURUS:
        for member in group:
            found = index.setdefault(stem(member), {})
            for other in group:
                if stem(other) != stem(member):
                    found.setdefault(other, None)
    return {key: tuple(values) for key, values in index.items()}


_SYNONYMS = _synonym_index()


# Where a sentence may end: terminal punctuation, any closing quotes or brackets, space,
# then what can open a sentence.
_BOUNDARY = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
# Lines and bullets always separate.
_BREAKS = re.compile(r"\n\s*[-*\u2022]\s*|\n{2,}|\n(?=[A-Z#])")
# Words a full stop follows without ending the sentence: titles, initials' companions,
# and common abbreviations of English prose (not of any one corpus).
_ABBREVIATIONS = frozenset(
    word_list(
        """
        mr mrs ms dr st mt jr sr prof gen col lt capt sgt rev gov sen rep pres inc ltd co
        corp bros no nos vs etc e.g i.e cf al approx ca fig vol pp ed eds dept univ jan feb
        mar apr jun jul aug sep sept oct nov dec ft
        """
    )
)


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the full stop before ``end`` closes a sentence: not after an initial
    ("Kurt H. Smith"), an abbreviation ("St. George") or a dotted acronym ("U.S. Army")."""
    at = end
    while at > 0 and text[at - 1] in "\"'\u201d\u2019)]":
        at -= 1
    if at == 0 or text[at - 1] != ".":
        return True  # ! or ?
    start = at - 1
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    word = text[start : at - 1]
    if len(word) == 1 and word.isupper():
        return False
    if "." in word and all(len(part) == 1 for part in word.split(".") if part):
        return False  # U.S, e.g
    return word.lower() not in _ABBREVIATIONS


def _sentence_pieces(text: str) -> list[str]:
    pieces: list[str] = []
    for block in _BREAKS.split(text):
        begin = 0
        for match in _BOUNDARY.finditer(block):
            close = match.start() + len(match.group(0).rstrip())
            if _ends_sentence(block, close):
                pieces.append(block[begin:close])
                begin = match.end()
        pieces.append(block[begin:])
    return pieces


@functools.lru_cache(maxsize=1024)
def split_sentences(text: str) -> tuple[str, ...]:
    """Sentences and bullet lines of a passage, trimmed, empties dropped; initials,
    abbreviations, decimals and quotations stay inside their sentence. Remembered: the
    same passages come back for many questions, and every answer splits them."""
    out = []
    for piece in _sentence_pieces(text):
        cleaned = re.sub(r"\s+", " ", piece).strip(" -*\u2022#\t")
        if len(cleaned) >= 3:
            out.append(cleaned)
    return tuple(out)
