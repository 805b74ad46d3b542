"""A glossary entry that states the unit a column counts: "dep_delay: in minutes".

Where a column's name and comment say no unit, "flights delayed by more than an hour"
is refused: 1 hour could be 60 in a column counting minutes (``verify._units``). The
database's own glossary may say it: an entry whose term (or a synonym) names the column
and whose prose definition says "in minutes", "measured in hours", or is the unit alone
("minutes"). Only a definition in prose (a SQL expression states a formula, not a unit),
and only one unit of a measure (time, length, mass) said so: "minutes or hours" states
none. Which column the term names is the catalog's to tell (``catalog._stated``).
"""

from __future__ import annotations

import re

from services.sql.definitions._glossary import GlossaryEntry
from services.sql.words import canonical_unit, is_unit, units_named

# "in minutes", "measured in minutes", "expressed in km": the unit a value is said in.
_IN_UNIT = re.compile(r"\bin\s+([a-z]+)\b", re.I)


def stated_unit(entry: GlossaryEntry) -> str:
    """The one unit of measure the entry's prose definition says its term counts
    (canonical: "minute"), or "" where it says none or more than one."""
    if entry.expression or not entry.definition:
        return ""
    text = entry.definition.strip().rstrip(".")
    said = [w for w in _IN_UNIT.findall(text) if is_unit(w)]
    if not said and is_unit(text):
        said = [text]
    units = units_named(canonical_unit(w) for w in said)
    # every unit the definition names, "in" or not: "in minutes, or hours before 2010"
    words = re.findall(r"[a-z]+", text.lower())
    named = units_named(canonical_unit(w) for w in words if is_unit(w))
    return next(iter(units)) if len(units) == 1 and named == units else ""
