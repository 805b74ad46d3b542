"""The units a database's glossary states, recorded on the columns its entries name.

A glossary entry "dep_delay: in minutes" (``definitions.stated_unit``) declares the unit
of the numeric column its term or a synonym names: ``column``, ``table.column`` or
``schema.table.column`` (a bare column name names that column in every table holding it).
A column whose name or comment says a unit keeps that one (the schema's own word); where
the data showed another unit (``_differences``) the two disagree, and the column keeps
neither: which one it counts is then unsaid, and a number said in a unit is judged by the
column's extent as for any undeclared column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._extents import is_numeric
from services.sql.definitions import GlossaryEntry, stated_unit
from services.sql.words import declared_units


def with_stated_units(catalog: Catalog, glossary: Sequence[GlossaryEntry]) -> Catalog:
    """The catalog with each unit the glossary states recorded on the columns named."""
    stated: list[tuple[str, str, str]] = []  # (name as written, unit, entry's term)
    for entry in glossary:
        unit = stated_unit(entry)
        if unit:
            stated += [(name.strip().lower(), unit, entry.term) for name in entry.names]
    if not stated:
        return catalog
    tables = tuple(_table(table, stated) for table in catalog.tables)
    return replace(catalog, tables=tables)


def _table(table: TableInfo, stated: list[tuple[str, str, str]]) -> TableInfo:
    columns = []
    for column in table.columns:
        said = {
            (unit, term)
            for name, unit, term in stated
            if name in _names(table, column) and is_numeric(column.data_type)
        }
        columns.append(_stated(column, said))
    return replace(table, columns=tuple(columns))


def _names(table: TableInfo, column: ColumnInfo) -> set[str]:
    name = column.name.lower()
    return {name, f"{table.name.lower()}.{name}", f"{table.qualified.lower()}.{name}"}


def _stated(column: ColumnInfo, said: set[tuple[str, str]]) -> ColumnInfo:
    units = {unit for unit, _ in said}
    if not units or declared_units(column.name, column.comment):
        return column
    if len(units) > 1 or (column.unit and column.unit not in units):
        return replace(column, unit="", unit_source="")
    ((unit, term),) = sorted(said)[:1]
    return replace(column, unit=unit, unit_source=f"the glossary ({term!r})")
