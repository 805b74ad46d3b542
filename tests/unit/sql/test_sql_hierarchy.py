"""A table's reference to its own rows is found in the data where no name says it
(ISSUE-45, s67 keyself): with the keys dropped, northwind's ``employees.reports_to``
names no table, so no step of key inference tried it, no self-reference was known, and
"who reports to Andrew Fuller" was answered with Fuller's own ``reports_to``: a
confident wrong answer. The data of a hierarchy shows it (``catalog._hierarchy``): every
value a key of the table, a head that refers to none, a row referred to by several, and
every chain of references ending. Numbers that merely lie in the key's range (a floor,
a grade) loop or stand still and are not read so.

The warehouse is a real SQLite file, keyless, read through the file warehouse's catalog
load; the schema is invented in northwind's shape."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import pytest

from services.sql.catalog import Catalog, describe
from services.sql.gate import Dialect
from services.sql.targets._warehouses import EngineWarehouse
from tests.unit.sql.schemas import linked_sql

TODAY = date(2026, 12, 1)
JOINED = "FROM main.staff AS t0 JOIN main.staff AS t1 ON t1.staff_id = t0.mentored_by"

# (staff_id, given_name, family_name, office, mentored_by, floor, grade): Ada Lind heads
# the tree; ``floor`` holds 1..3 with gaps and loops (staff 1 on floor 2, staff 2 on
# floor 1); ``grade`` has a row whose value is its own key (staff 3, grade 3).
STAFF = [
    (1, "Ada", "Lind", "Oslo", None, 2, None),
    (2, "Boris", "Ortiz", "Lima", 1, 1, 3),
    (3, "Chen", "Wu", "Oslo", 1, None, 3),
    (4, "Dana", "Kahn", "Pune", 2, 2, 1),
    (5, "Emil", "Berg", "Oslo", 2, 3, 1),
    (6, "Fay", "Roy", "Lima", 1, 1, None),
]


def _crew(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE staff (staff_id INTEGER, given_name TEXT, family_name TEXT, "
        "office TEXT, mentored_by INTEGER, floor INTEGER, grade INTEGER)"
    )
    conn.executemany("INSERT INTO staff VALUES (?, ?, ?, ?, ?, ?, ?)", STAFF)
    conn.commit()
    conn.close()


@pytest.fixture
async def crew(tmp_path: Path) -> AsyncIterator[Catalog]:
    path = tmp_path / "crew.sqlite"
    _crew(path)
    warehouse = EngineWarehouse("crew", Dialect.SQLITE, f"sqlite:///{path}")
    try:
        catalog, _ = await warehouse.load_catalog((), ())
        yield catalog
    finally:
        warehouse.engine.close()


async def test_a_keyless_reference_to_its_own_rows_is_found_in_the_data(crew: Catalog) -> None:
    lines = describe(crew)
    joins = [line for line in lines if line.startswith("join ")]
    assert len(joins) == 1, lines
    assert joins[0].startswith("join main.staff.mentored_by -> main.staff.staff_id (inferred: ")
    assert "5 rows refer to 2 others, 1 to none" in joins[0]


async def test_numbers_in_the_keys_range_that_loop_or_refer_to_themselves_are_no_reference(
    crew: Catalog,
) -> None:
    lines = describe(crew)
    assert not any("floor ->" in line or "grade ->" in line for line in lines), lines


@pytest.mark.parametrize(
    "question", ["who is mentored by Ada Lind", "Which staff are mentored by Ada Lind?"]
)
async def test_who_is_mentored_by_a_named_member_reads_the_table_joined_to_itself(
    crew: Catalog, question: str
) -> None:
    """Without the reference the name filtered the rows answered (Ada's own row, through
    her ``mentored_by``): wrong, and nothing refused it."""
    sql = linked_sql(question, crew, TODAY)
    assert JOINED in sql
    assert "t1.given_name = 'Ada'" in sql and "t1.family_name = 'Lind'" in sql
    assert "t0.given_name = 'Ada'" not in sql
