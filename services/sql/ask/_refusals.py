"""Refusals that help: the linker's refusal of a phrase, said so a person can act on it.

The linker refuses with the phrase it could not place (``LinkError.phrase``). Said as
"nothing in the schema matches 'quantity'" that misleads when ``orders.quantity`` exists:
the linker found the name and could not read the question around it. So the phrase is
read again word by word against the catalog, and the refusal says one of:

- "could not place 'attendance' — nearest: stadium.average, concert.year?": the words
  that name nothing, each with the tables and columns nearest to it — by meaning through
  the question embedder where the service has one, then by spelling (an inflection, an
  abbreviation, part of a name written as one run of letters, a typo) and stored values;
- "found 'capacity' (stadium.capacity) but could not read the question around it": every
  word names a table, a column or a stored value;
- "could not read the question around 'In 1980'": only the grammar of questions is left.

It never says that a name is absent when a table or column of that name exists: a word
naming one (exactly, or as its plural, verb form or abbreviation) is said as found.
Refusals without a phrase (a join, a check of the statement) are said as they are.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.sql.linker import Col, LinkError, Vocabulary
from services.sql.words import (
    GRAMMAR_WORDS,
    SHORT_FORMS,
    STOP_WORDS,
    Tok,
    cover,
    lemma,
    stem,
    tokenize,
    word_match,
)

# word -> (qualified table, column or "", similarity): names close in meaning to a word.
Nearby = Mapping[str, Sequence[tuple[str, str, float]]]

_SHOWN = 3  # names offered per word
_WORDS = 2  # unplaced words named in one refusal
_QUOTED = 60  # characters of a phrase quoted
_NAMES = 0.9  # how well a word must match a name part to name it (inflections, abbreviations)
_NEAR = 0.5  # how well it must match to be offered as near
_TYPO = 0.8  # how alike in spelling a word and a name part must be to be offered
_RUN = 6  # words of a stored value looked for at once
# English words that name nothing but the linker's word lists leave out: said last.
_FUNCTION_WORDS = frozenset(
    {
        "but",
        "yet",
        "once",
        "well",
        "one",
        "ones",
        "among",
        "amongst",
        "either",
        "so",
        "if",
        "while",
        "whether",
        "though",
        "although",
        "else",
        "out",
        "up",
        "down",
        "off",
        "again",
        "still",
        "already",
        "per",
        "via",
        "such",
        "own",
    }
)


@dataclass(frozen=True)
class _Word:
    """A word of the refused phrase and what of the schema it names."""

    text: str
    low: str
    names: tuple[str, ...] = ()


class RefusalExplainer:
    """Explains the linker's refusals against one catalog's vocabulary."""

    def __init__(self, vocab: Vocabulary) -> None:
        self._vocab = vocab

    def unplaced(self, error: LinkError) -> tuple[str, ...]:
        """The words of the refused phrase that name nothing in the schema and could name
        something (what the embedder is asked about, for the names nearest in meaning)."""
        words = self._unplaced(self._words(error.phrase))[:_WORDS]
        return tuple(w.low for w in words if w.low not in _FUNCTION_WORDS)

    def explain(self, error: LinkError, nearby: Nearby | None = None) -> str:
        """The refusal, said from its phrase (see the module's docstring); ``nearby`` are
        the names close in meaning to its unplaced words, when an embedder found some."""
        if not error.phrase.strip():
            return str(error)
        words = self._words(error.phrase)
        unplaced = self._unplaced(words)
        if unplaced:
            said = []
            for word in unplaced[:_WORDS]:
                near = self._nearest(word, (nearby or {}).get(word.low, ()))
                if near:
                    said.append(f"{_q(word.text)} — nearest: {', '.join(near)}?")
                elif word.low in _FUNCTION_WORDS:  # it could name nothing: nothing to add
                    said.append(_q(word.text))
                else:
                    said.append(f"{_q(word.text)} (no table, column or stored value is near it)")
            return "could not place " + "; nor ".join(said)
        named = [w for w in words if w.names]
        if named:
            found = ", ".join(f"{_q(w.text)} ({', '.join(w.names)})" for w in named[:_SHOWN])
            them = "it" if len(named) == 1 else "them"
            return f"found {found} but could not read the question around {them}"
        return f"could not read the question around {_q(error.phrase.strip())}"

    # --- the phrase, word by word ------------------------------------------------------

    def _words(self, phrase: str) -> list[_Word]:
        tokens = tokenize(phrase)
        words: list[_Word] = []
        skip = 0
        for i, token in enumerate(tokens):
            if skip:
                skip -= 1
                continue
            run = self._stored_run(tokens, i)
            if run:
                size, value = run
                said = " ".join(t.text for t in tokens[i : i + size])
                words.append(_Word(said, said.lower(), value))
                skip = size - 1
                continue
            if token.low[:1].isdigit():
                continue
            if token.quoted:
                continue  # a literal the question compares with: not a name
            # a name written as one run of letters, said in two words ("full name"),
            # neither of which names it alone
            if i + 1 < len(tokens) and not tokens[i + 1].quoted:
                pair = self._names([token.low, tokens[i + 1].low], joined=True)
                alone = self._names([token.low], joined=True) or self._names(
                    [tokens[i + 1].low], joined=True
                )
                if pair and not alone:
                    words.append(_Word(f"{token.text} {tokens[i + 1].text}", token.low, pair))
                    skip = 1
                    continue
            if token.low in STOP_WORDS:
                continue
            words.append(_Word(token.text, token.low, self._names([token.low])))
        return words

    def _stored_run(self, tokens: Sequence[Tok], at: int) -> tuple[int, tuple[str, ...]] | None:
        """The longest run of tokens from ``at`` that is a stored value, and where it is
        kept (a name of several words: "amc hornet sportabout (sw)")."""
        for size in range(min(_RUN, len(tokens) - at), 0, -1):
            text = " ".join(t.text for t in tokens[at : at + size])
            if size == 1 and tokens[at].low[:1].isdigit():
                return None
            value = self._value(text)
            if value:
                return size, value
        return None

    @staticmethod
    def _unplaced(words: Sequence[_Word]) -> list[_Word]:
        """Words naming nothing, other than the grammar of questions; the words that could
        be names first ("built" before "but")."""
        left = [w for w in words if not w.names and w.low not in GRAMMAR_WORDS]
        return sorted(left, key=lambda w: w.low in _FUNCTION_WORDS)

    def _names(self, words: Sequence[str], *, joined: bool = False) -> tuple[str, ...]:
        """The tables and columns the words name: a name part each word matches (its
        plural, verb form or abbreviation too); a grammar word ("name", "total") only a
        whole name; ``joined``: one part the words spell together ("fullname")."""
        stems = [stem(w) for w in words]
        vocab = self._vocab
        whole = joined or words[0] in GRAMMAR_WORDS
        # (a whole name, the label): a table or column the word names outright ("drug":
        # drugs) is said before those it names a part of (drugs.drug_id)
        found: list[tuple[bool, str]] = []
        for table in vocab.catalog.tables:
            names = vocab.table_names(table)
            if any(_spells(stems, parts, whole, joined) for parts in names):
                found.append((any(_spells(stems, p, True, joined) for p in names), table.name))
        for col in vocab.columns:
            names = [vocab.column_words[col.key], *vocab.column_aliases[col.key]]
            if any(_spells(stems, parts, whole, joined) for parts in names):
                outright = any(_spells(stems, p, True, joined) for p in names)
                found.append((outright, f"{col.table.name}.{col.column.name}"))
        if any(outright for outright, _ in found):
            found = [f for f in found if f[0]]
        return tuple(dict.fromkeys(label for _, label in found))[:_SHOWN]

    def _value(self, text: str) -> tuple[str, ...]:
        """Where a stored value the words are (or hold a word of) is kept."""
        vocab = self._vocab
        low = text.lower()
        held = vocab.names.get(low, []) + vocab.values.get(low, [])
        held += self._stored().get(_plain(low), [])
        held += vocab.value_words.get(lemma(low), []) if len(low) > 2 else []
        columns = dict.fromkeys(f"{c.table.name}.{c.column.name}" for c, _ in held)
        return tuple(f"a value of {c}" for c in columns)[:_SHOWN]

    def _stored(self) -> dict[str, list[tuple[Col, str]]]:
        """Stored names and values by their words alone ("amc hornet sportabout sw" for
        'amc hornet sportabout (sw)'), and by each of their words ("sportabout"); built
        once per vocabulary."""
        key = ("refusal stored values", "")
        found = self._vocab.word_memo.get(key)
        if isinstance(found, dict):
            return found
        index: dict[str, list[tuple[Col, str]]] = {}
        for table in (self._vocab.names, self._vocab.values):
            for value, held in table.items():
                plain = _plain(value)
                index.setdefault(plain, []).extend(held)
                for word in set(plain.split()) - {plain}:
                    if len(word) > 2 and word not in STOP_WORDS and word not in GRAMMAR_WORDS:
                        index.setdefault(word, []).extend(held)
        self._vocab.remember(key, index)
        return index

    def _nearest(self, word: _Word, by_meaning: Sequence[tuple[str, str, float]]) -> list[str]:
        """Names to offer for an unplaced word, the closest first: in meaning (through
        the embedder) or in spelling; then stored values spelled alike. A word that can
        name nothing ("but", "once") is offered none."""
        if word.low in _FUNCTION_WORDS:
            return []
        vocab = self._vocab
        scored: list[tuple[float, str]] = []
        for qualified, column, similarity in by_meaning:
            table = vocab.catalog.table(qualified)
            if table is not None:
                scored.append((similarity, f"{table.name}.{column}" if column else table.name))
        base = stem(word.low)
        for table in vocab.catalog.tables:
            score = max((_near(base, p) for parts in vocab.table_names(table) for p in parts),
                        default=0.0)  # fmt: skip
            if score:
                scored.append((score, table.name))
        for col in vocab.columns:
            score = max(
                (_near(base, p)
                 for parts in (vocab.column_words[col.key], *vocab.column_aliases[col.key])
                 for p in parts),
                default=0.0,
            )  # fmt: skip
            if score:
                scored.append((score, f"{col.table.name}.{col.column.name}"))
        labels = [label for _, label in sorted(scored, key=lambda p: -p[0])]
        stored_values = self._stored()
        for value in difflib.get_close_matches(_plain(word.low), list(stored_values), n=2,
                                               cutoff=0.85):  # fmt: skip
            col, stored = stored_values[value][0]
            labels.append(f"'{stored}' ({col.table.name}.{col.column.name})")
        return list(dict.fromkeys(labels))[:_SHOWN]


def _spells(stems: Sequence[str], parts: Sequence[str], whole: bool, joined: bool) -> bool:
    if not parts:
        return False
    if joined:
        return len(parts) == 1 and len(parts[0]) >= 5 and cover(stems, parts[0])[0] >= _NAMES
    if whole:
        return len(parts) == 1 and word_match(stems[0], parts[0]) >= _NAMES
    return any(word_match(stems[0], p) >= _NAMES for p in parts)


def _near(word: str, part: str) -> float:
    """How near in spelling a word is to a name part: an inflection or abbreviation, part
    of a name written as one run ("price" of "dailyprice"), or a typo ("carr")."""
    if len(word) < 3 or len(part) < 3:
        return 0.0
    # the question may say the abbreviation a name spells out ("qty" for quantity)
    short = 0.9 if word in SHORT_FORMS.get(part, ()) else 0.0
    score = max(word_match(word, part), short, cover([word], part, partial=0.5)[0])
    if score >= _NEAR:
        return score
    alike = difflib.SequenceMatcher(None, word, part).ratio()
    return alike if alike >= _TYPO else 0.0


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _q(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _QUOTED:
        text = text[: _QUOTED - 1].rstrip() + "…"
    return f"'{text}'"
