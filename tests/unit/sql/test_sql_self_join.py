"""A value said after the words of a table's reference to itself names the row referred to,
and the question is answered by joining the table to itself ("who reports to Andrew
Fuller?": the employees whose ``reports_to`` is Fuller's key), the value compared on the
referred row and the referring rows shown by their key and names. Found on northwind's
employees (services/bench/golden/conversations_sql-unseen_v8.json, northwind-e2); the
schema here is invented in its shape. Where the self-joined statement does not answer the
question (a count the as-asked reading did not count), the refusal stands. A phrase that
names the referred row ("the name of the person they are mentored by") shows its names
beside each row listed (northwind-e4), and a follow-up's condition on such an answer is
on the rows listed, not on the row each refers to."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import Prior, Relation, built
from services.sql.linker import LinkError
from tests.unit.sql.schemas import linked_sql

TODAY = date(2026, 12, 1)


def _col(name: str, data_type: str = "text", samples: tuple[str, ...] = ()) -> ColumnInfo:
    return ColumnInfo(name, data_type, True, sample_values=samples)


def _staff(*, declared: bool) -> Catalog:
    """A staff table whose ``mentored_by`` holds another member's key (declared, or not)."""
    keys = (ForeignKeyInfo(("mentored_by",), "public.staff", ("staff_id",)),) if declared else ()
    return Catalog(
        "crew",
        (
            TableInfo(
                "public",
                "staff",
                columns=(
                    _col("staff_id", "integer"),
                    _col("given_name", "text", ("Ada", "Boris", "Chen", "Dana", "Emil", "Fay")),
                    _col("family_name", "text", ("Lind", "Ortiz", "Wu", "Kahn", "Berg", "Roy")),
                    _col("office", "text", ("Oslo", "Lima", "Pune")),
                    _col("mentored_by", "integer"),
                ),
                primary_key=("staff_id",),
                foreign_keys=keys,
            ),
        ),
    )


@pytest.mark.parametrize(
    "question", ["who is mentored by Ada Lind", "Which staff are mentored by Ada Lind?"]
)
def test_a_value_after_the_reference_words_is_the_referred_row_joined(question: str) -> None:
    sql = linked_sql(question, _staff(declared=True), TODAY)
    assert "FROM public.staff AS t0 JOIN public.staff AS t1 ON t1.staff_id = t0.mentored_by" in sql
    assert "t1.given_name = 'Ada'" in sql and "t1.family_name = 'Lind'" in sql
    assert "t0.given_name = 'Ada'" not in sql
    assert sql.startswith("SELECT t0.staff_id AS staff_id")


def test_a_value_before_the_words_is_not_moved() -> None:
    # "Ada Lind mentored whom": the name is the referring row's own, said before the words
    try:
        sql = linked_sql("Ada Lind mentored whom", _staff(declared=True), TODAY)
    except LinkError:
        return
    assert "t1.given_name" not in sql


@pytest.mark.parametrize(
    "question",
    [
        "list all staff with the name of the person they are mentored by",
        "Show the staff in Oslo and the name of the person they are mentored by",
    ],
)
def test_the_referred_row_named_by_a_clause_is_shown_beside_each_row(question: str) -> None:
    sql = linked_sql(question, _staff(declared=True), TODAY)
    assert "FROM public.staff AS t0 JOIN public.staff AS t1 ON t1.staff_id = t0.mentored_by" in sql
    assert "t1.given_name AS mentored_by_given_name" in sql
    assert "t1.family_name AS mentored_by_family_name" in sql
    if "Oslo" in question:
        assert "t0.office = 'Oslo'" in sql


def test_a_count_beside_the_referred_row_is_not_read_so() -> None:
    # the referred row's names beside a count would need grouping by them: not built
    with pytest.raises(LinkError):
        linked_sql(
            "how many staff with the name of the person they are mentored by",
            _staff(declared=True),
            TODAY,
        )


class _Linker:
    """The linker's seam for a follow-up's condition: the statement it reads "in Oslo"
    as, over the staff table alone."""

    async def __call__(self, question: str) -> str | None:
        if "Oslo" not in question:
            return None
        return "SELECT t0.staff_id FROM public.staff AS t0 WHERE t0.office = 'Oslo'"


async def test_a_follow_up_condition_on_a_self_joined_answer_is_on_its_own_rows() -> None:
    # "only the ones in Oslo" after the staff listed beside their mentors: the rows listed
    # are the referring ones (t0); the mentor joined as t1 is not what "the ones" are
    earlier = (
        "SELECT t0.given_name, t0.family_name, t1.given_name AS mentored_by_given_name "
        "FROM public.staff AS t0 JOIN public.staff AS t1 ON t1.staff_id = t0.mentored_by"
    )
    prior = Prior(earlier, Relation.FILTER, condition="in Oslo")
    sql = (await built(earlier, prior, _staff(declared=True), _Linker()))[0]
    assert "t0.office = 'Oslo'" in " ".join(sql.split())
    assert "t1.office" not in sql
