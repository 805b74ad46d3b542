"""A question's "not X" read against a text's "unX" / "nonX".

English negates a word two ways: with a separate "not" ("a file system that is not
mounted", "a string whose length is not zero") or with a prefix ("unmounted file
systems", "the length of STRING is nonzero"). A question usually takes the first form,
reference text the second, and a stem match sees only "mounted"/"zero" in both: the
question's word then holds the sentence saying the opposite ("the length of STRING is
zero") and misses the one saying what was asked. Here a question word that follows a
negation is also held by its prefixed negative, so the sentence stating the same
condition covers it. Only "un-" and "non-" count: "in-"/"im-"/"dis-" start too many
plain words ("index", "impact", "display") to be read as prefixes.

Holding the word is not yet saying what was asked: "-z STRING the length of STRING is
zero" and "-n STRING the length of STRING is nonzero" hold the same words, and the
first states the opposite. ``stated_negations`` tells which of the negated words a
text states negated itself (by prefix, or by a negation before it), so that the text
saying the question's condition ranks above the one saying its opposite.
"""

from __future__ import annotations

import re

from services.router.offline._text import STOPWORDS, lowered_stems, stem

_NEGATION = frozenset(("not", "no", "never", "cannot"))
# A text's own negation: the question's words, and "non" split from its word by a
# hyphen ("non-empty", "--no-clobber" reads "no clobber").
_TEXT_NEGATION = _NEGATION | {"non", "without"}
_PREFIXES = ("non", "un")
# Words that may stand between the negation and the word it negates ("not yet
# mounted", "does not exist"): stopwords only, at most this many.
_GAP = 2


def negated_stems(question: str) -> frozenset[str]:
    """The stems of the question's words that a "not" (or "n't", "no", "never")
    negates: the first content word after it, within two stopwords."""
    words = [low for low, _ in lowered_stems(question)]
    negated = set()
    for at, low in enumerate(words):
        if low not in _NEGATION and not low.endswith("n't"):
            continue
        for word in words[at + 1 : at + 2 + _GAP]:
            if word in STOPWORDS or word in _NEGATION:
                continue
            if re.fullmatch(r"[a-z]{4,}", word):
                negated.add(stem(word))
            break
    return frozenset(negated)


def with_negatives(stems: frozenset[str], negated: frozenset[str]) -> frozenset[str]:
    """``stems`` plus each of ``negated`` that a stem of the text negates by prefix:
    "unmount" holds "mount", "nonzero" holds "zero", "nonexistent" holds "exist" (the
    rest of the word starting with a stem of five letters or more)."""
    if not negated:
        return stems
    held = set()
    for word in stems:
        for prefix in _PREFIXES:
            if not word.startswith(prefix):
                continue
            rest = word[len(prefix) :]
            for target in negated:
                if rest == target or (len(target) >= 5 and rest.startswith(target)):
                    held.add(target)
    return stems | held if held else stems


def stated_negations(text: str, negated: frozenset[str]) -> frozenset[str]:
    """Which of ``negated`` ``text`` states negated, as the question does: by a prefixed
    negative ("nonzero", "unmounted") or by a negation before the word ("do not
    overwrite", "non-empty", "--no-create"), within two stopwords."""
    if not negated:
        return frozenset()
    words = lowered_stems(text)
    stated: set[str] = set()
    for at, (low, word) in enumerate(words):
        for prefix in _PREFIXES:
            if low.startswith(prefix) and low != prefix:
                rest = stem(low[len(prefix) :])
                stated.update(
                    t for t in negated if rest == t or (len(t) >= 5 and rest.startswith(t))
                )
        if word not in negated:
            continue
        # The words before it, nearest first: a negation, or stopwords up to one.
        for w, _ in reversed(words[max(0, at - 1 - _GAP) : at]):
            if w in _TEXT_NEGATION or w.endswith("n't"):
                stated.add(word)
                break
            if w not in STOPWORDS:
                break
    return frozenset(stated)
