"""A filter that names a stored place by its inhabitants' noun (conversation._inhabitants):
"just the Californians" is read as "in California", the place a stored code or value
holds, and linked as any condition; a noun no one stored place forms is refused naming it.
The linker is a fake of its seam that reads only the place said in full."""

from __future__ import annotations

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built
from services.sql.conversation._inhabitants import as_place

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("first_name", "text", False),
        ColumnInfo("city", "text", False, sample_values=("Paris", "New York", "Los Angeles")),
        ColumnInfo("state", "text", False, sample_values=("CA", "TX", "NY", "FL")),
        ColumnInfo("status", "text", False, sample_values=("Manage", "active")),
    ),
    primary_key=("id",),
)  # fmt: skip
CATALOG = Catalog("shop", (CUSTOMERS,))
LISTED = "SELECT t0.id, t0.first_name, t0.city FROM public.customers AS t0"


class Linker:
    """Reads a question that names a place in full; nothing else."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, question: str) -> str | None:
        self.asked.append(question)
        for name, code in (("California", "CA"), ("Texas", "TX"), ("Florida", "FL")):
            if f"in {name}" in question:
                return f"SELECT t0.id FROM public.customers AS t0 WHERE t0.state = '{code}'"
        if "in Paris" in question:
            return "SELECT t0.id FROM public.customers AS t0 WHERE t0.city = 'Paris'"
        return None


def _same(left: str, right: str) -> None:
    assert sqlglot.parse_one(left, dialect="postgres") == sqlglot.parse_one(
        right, dialect="postgres"
    ), left


async def _filtered(condition: str, *, exclude: bool = False) -> str:
    prior = Prior(LISTED, Relation.FILTER, condition=condition, exclude=exclude)
    return (await built(LISTED, prior, CATALOG, Linker()))[0]


@pytest.mark.parametrize(
    ("condition", "compared"),
    [
        ("Californians", "t0.state = 'CA'"),  # a code's place + n
        ("Texans", "t0.state = 'TX'"),  # Tex(as) + an
        ("the Floridians", "t0.state = 'FL'"),
        ("Parisians", "t0.city = 'Paris'"),  # a city stored as written + ian
    ],
)
async def test_an_inhabitants_noun_is_read_as_the_place_it_is_formed_from(condition, compared):
    _same(await _filtered(condition), f"{LISTED} WHERE ({compared})")


async def test_leaving_out_the_inhabitants_leaves_out_the_place():
    _same(await _filtered("Texans", exclude=True), f"{LISTED} WHERE NOT (t0.state = 'TX')")


@pytest.mark.parametrize("noun", ["Martians", "Canadians", "Berliners"])
async def test_a_noun_no_stored_place_forms_is_refused_naming_it(noun):
    with pytest.raises(FollowUpError, match=noun):
        await _filtered(noun)


def test_the_place_is_said_in_full_in_the_words_it_was_named_in():
    assert as_place("New Yorkers", CATALOG) == "in New York"
    assert as_place("only Californians over 40", CATALOG) == "only in California over 40"


def test_only_a_capitalised_noun_of_a_column_that_holds_places_is_read():
    # "managers" is no proper noun; "Managers" would be formed from the status 'Manage',
    # a column that holds no places
    assert as_place("managers", CATALOG) is None
    assert as_place("Managers", CATALOG) is None


def test_two_places_that_form_the_noun_alike_leave_it_unread():
    twin = TableInfo(
        "public", "offices",
        columns=(ColumnInfo("town", "text", False, sample_values=("Rome", "Roma")),),
    )  # fmt: skip
    assert as_place("Romans", Catalog("shop", (twin,))) is None
