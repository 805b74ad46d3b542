"""Which role a reference plays: of several columns of one table that refer to the same
table and whose names say no direction (``matches.home_team_id`` and ``away_team_id``;
``reviews.employee_id`` and ``manager_id``), each is told apart by the words its name
adds to the two tables' names ("home", "manager"), and a question says a role by those
words or by the verb whose agent the word names ("managed" says "manager"). General
English, not any schema's words."""

from __future__ import annotations

from collections.abc import Collection

from services.sql.words._words import name_words, stem

# Name parts that say a column is a reference, not which one ("home_team_id": home).
_REFERENCE_PARTS = frozenset({"id", "key", "code", "ref", "no", "num", "fk"})
# An agent noun's ending ("manager", "seller", "editor"); its stem begins the verb's
# forms ("managed", "sells"). Four letters at least, so that a short stem says nothing
# by accident.
_AGENT_ENDINGS = ("er", "or")
_AGENT_STEM = 4


def role_words(column: str, tables: Collection[str]) -> frozenset[str]:
    """The stems a reference's name adds to ``tables`` (the stems of the two tables'
    names): ``home_team_id`` to ``teams`` adds "home"; ``friend.friend_id`` adds none."""
    return frozenset(
        stem(w)
        for w in name_words(column)
        if len(w) > 1 and w not in _REFERENCE_PARTS and not _forms(w) & set(tables)
    )


def _forms(word: str) -> set[str]:
    """A name part and the stem it may share with a table's name: "liked" of
    ``likes.liked_id`` is the table's "like"."""
    forms = {stem(word)}
    if word.endswith("ed"):
        forms |= {word[:-1], word[:-2]}
    return forms


def says_role(role: frozenset[str], words: Collection[str]) -> bool:
    """Whether a question's content words (stems) say a role: one of its words, or the
    verb whose agent it names."""
    for word in role:
        if word in words:
            return True
        if word.endswith(_AGENT_ENDINGS) and len(word) - 2 >= _AGENT_STEM:
            base = word[:-2]
            if any(w.startswith(base) for w in words):
                return True
    return False
