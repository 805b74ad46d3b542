"""A number said in one unit, where the column compared declares another of the same
measure: said again in the column's unit.

"Flights with a taxi time of more than 1 hour" where ``taxi_time_mins`` counts minutes:
compared as 1 it is a confident wrong answer, and the unit check refuses it
(``verify._units``). The column says what it counts, by its name's words or its comment
(the glossary a database's metadata carries is read into the comment), or where neither
says one, the stored data (a difference of two time columns, ``catalog._differences``)
or the database's glossary ("dep_delay: in minutes", ``catalog._stated``); an hour is 60
minutes, a mile 1.609344 km, exactly: the question is said again with "60 minutes" and
linked as any question is. Only a unit declared by the numeric columns of the schema, and
only one such unit of the measure said (two columns declaring minutes and seconds leave
the unit to the check); the statement is kept only where it compares the converted number
with a column declaring that unit, so a number moved onto another column is no reading.

A column declaring no unit is never converted to: which unit it counts is unsaid, and the
unit check judges it by its stored extent.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, is_number
from services.sql.words import (
    converted,
    numbers_with_units,
    one_said_as_number,
    plural,
    restated,
    same_measure,
)


@dataclass(frozen=True)
class Converted:
    """The question said in the declared units; each converted number with the columns
    declaring its unit (lower-cased names); what was converted, and where each declaring
    column's unit was read (lower-cased name -> "its name or comment", "the data: …", "the
    glossary (…)"), for the interpretation."""

    question: str
    moved: dict[float, set[str]]
    notes: tuple[str, ...]
    sources: dict[str, str]

    def explained(self, sql: str) -> str:
        """The interpretation's note: what was converted, and the source of the unit of
        each column the statement compares a converted number with."""
        compared = _compared_with(sql)
        named = sorted(
            {
                f"{name}: {self.sources[name]}"
                for number, names in self.moved.items()
                for name in names & compared.get(number, set())
            }
        )
        return f"Read {', '.join(self.notes)} (the unit declared by {'; '.join(named)})."


def converted_asked(catalog: Catalog, question: str) -> Converted | None:
    """``question`` with each number said in a unit another than the one the schema's
    columns declare for its measure restated in that unit; None where none is."""
    text = one_said_as_number(question)
    declared = [(c, c.units) for c in _numeric(catalog)]
    moved: dict[float, set[str]] = {}
    notes: list[str] = []
    sources: dict[str, str] = {}

    def unit_for(value: float, unit: str) -> tuple[float, str] | None:
        of_measure = {u for _, units in declared for u in units if same_measure(u, unit)}
        if len(of_measure) != 1:
            return None
        (to,) = of_measure
        if to == unit:
            return None
        number = converted(value, unit, to)
        if number is None:
            return None
        number = round(number, 4)  # "1000 km" is 621.3712 miles, as a question says it
        declaring = [c for c, units in declared if to in units]
        moved[number] = {c.name.lower() for c in declaring}
        sources.update({c.name.lower(): c.units_source for c in declaring})
        notes.append(
            f"{value:g} {unit if value == 1 else plural(unit)} as {number:.10g} {plural(to)}"
        )
        return number, to

    if not numbers_with_units(text):
        return None
    said = restated(text, unit_for)
    return Converted(said, moved, tuple(notes), sources) if moved else None


def compares_converted(sql: str, moved: dict[float, set[str]]) -> bool:
    """Each converted number is compared with a column declaring its unit."""
    found = _compared_with(sql)
    return all(found.get(number, set()) & names for number, names in moved.items())


def _compared_with(sql: str) -> dict[float, set[str]]:
    """Each number the statement compares, with the columns (lower-cased names) of the
    comparisons it is in."""
    tree: exp.Expr = exp.maybe_parse(sql, dialect="postgres")
    found: dict[float, set[str]] = {}
    for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ, exp.Between):
        columns = [c.name.lower() for c in node.find_all(exp.Column)]
        for literal in node.find_all(exp.Literal):
            if literal.is_string:
                continue
            try:
                found.setdefault(float(literal.this), set()).update(columns)
            except ValueError:
                continue
    return found


def _numeric(catalog: Catalog) -> list[ColumnInfo]:
    return [c for t in catalog.tables for c in t.columns if is_number(c.data_type)]
