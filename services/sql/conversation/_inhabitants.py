"""A place's inhabitants read as the place: "just the Californians", "only the Texans",
"the New Yorkers" — a condition that names a stored place by the noun for the people of it.

English forms that noun from the place's name by a short suffix, after dropping at most
two of its final vowels (or an ``s``): California+n, Tex(as)+an, Canad(a)+ian, Paris+ian,
New York+er, Seattl(e)+ite, Japan+ese, Israel+i. No column stores "Californians", so the
words link to nothing; the place they are formed from is a value the data holds — a city,
state or country as stored, or the place a stored code stands for ('CA' for California,
``catalog.place_names``) — and the condition read with the place ("in California") is
linked as any other. Only a capitalised noun (a proper noun, as the grammar writes an
inhabitant) is read so, only against columns that hold places (named for one, or storing
a code system's codes), and only when exactly one place fits: a noun no stored place
forms ("the Martians") or two places form alike stays unread, and the follow-up is
refused naming it, as before.
"""

from __future__ import annotations

import re

from services.sql.catalog import TEXT_TYPES, Catalog, place_names
from services.sql.words import name_words

# The suffixes of an inhabitant's noun, longest first.
_SUFFIXES = ("ian", "ean", "ese", "ite", "an", "er", "n", "i")
# What the place's name may lose before the suffix: its final vowels, "y" or an "s".
_DROPPED = re.compile(r"^[aeiouys]{0,2}$")
# The words of a column's name that say it holds places.
_PLACE_WORDS = frozenset({
    "city", "town", "state", "country", "nation", "region", "province", "county",
    "place", "location", "hometown", "birthplace", "capital", "territory", "district",
})  # fmt: skip
# A capitalised noun, possibly of two or three words ("New Yorkers"), in the plural or as
# an adjective ("Californian").
_NOUN = re.compile(r"\b(?P<noun>(?:[A-Z][a-z]+\s+){0,2}[A-Z][a-z]{3,})\b")


def _forms(place: str, noun: str) -> bool:
    """Whether ``noun`` (lower-case, singular) is an inhabitant's noun formed from
    ``place`` (lower-case)."""
    for suffix in _SUFFIXES:
        if not noun.endswith(suffix):
            continue
        stem = noun[: -len(suffix)]
        if len(stem) >= 3 and place.startswith(stem) and _DROPPED.match(place[len(stem) :]):
            return True
    return False


def _places(catalog: Catalog) -> dict[str, str]:
    """Every place the data holds in a column that holds places: its name (lower-case)
    to the name as a question would say it."""
    found: dict[str, str] = {}
    for table in catalog.tables:
        for column in table.columns:
            if not column.data_type.startswith(TEXT_TYPES):
                continue
            values = (*column.known_values, *column.sample_values)
            coded = place_names(values)
            for name in coded:
                found.setdefault(name, name.title())
            if coded or not _PLACE_WORDS & {w.lower() for w in name_words(column.name)}:
                continue
            for value in values:
                said = " ".join(value.split())
                if said and re.fullmatch(r"[A-Za-z][A-Za-z .'-]*", said):
                    found.setdefault(said.lower(), said)
    return found


def as_place(condition: str, catalog: Catalog) -> str | None:
    """``condition`` with the inhabitants' noun it names put as the place ("Californians"
    → "in California"); None when it names none, or no one place the data holds forms it."""
    places: dict[str, str] | None = None
    for match in _NOUN.finditer(condition):
        words = match.group("noun").split()
        for first in range(len(words)):  # "Only Texans": the noun may be the run's end
            said = " ".join(words[first:])
            singular = said[:-1] if said.endswith("s") else said
            low = singular.lower()
            if places is None:
                places = _places(catalog)
            formed = {name for p, name in places.items() if p != low and _forms(p, low)}
            if len(formed) != 1:
                continue
            start = match.start() + match.group(0).index(said)
            before = re.sub(r"\b(?:the|those|these)\s*$", "", condition[:start], flags=re.I)
            return " ".join(f"{before} in {formed.pop()} {condition[match.end() :]}".split())
    return None
