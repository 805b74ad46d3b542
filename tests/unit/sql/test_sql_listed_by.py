"""A listing said "by X" (ISSUE-45, s62): the rows with X shown and ordered by it, X a
column of the listed table or of a row each listed row refers to; refused naming X where
nothing places it; "how many … by X" still a grouping. Through the real linker and
verifier on an invented schema shaped as the demo warehouse's companies and contacts."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)


CRM = Catalog(
    "crm",
    (
        TableInfo(
            "public",
            "companies",
            columns=(
                key("company_id"),
                col("name", "text"),
                col("industry", "text", ("Retail", "Software")),
                col("country", "text", ("France", "Germany", "Portugal")),
                col("employees"),
                col("level_of_membership"),
            ),
            primary_key=("company_id",),
        ),
        TableInfo(
            "public",
            "contacts",
            columns=(
                key("contact_id"),
                col("full_name", "text"),
                col("company_id"),
                col("title", "text"),
            ),
            primary_key=("contact_id",),
            foreign_keys=(ForeignKeyInfo(("company_id",), "public.companies", ("company_id",)),),
        ),
    ),
)


def _tree(question: str) -> exp.Select:
    tree = sqlglot.parse_one(linked_sql(question, CRM, TODAY), dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree


def _shown(tree: exp.Select) -> list[str]:
    return [e.alias_or_name for e in tree.expressions]


def _ordered(tree: exp.Select) -> list[tuple[str, bool]]:
    order = tree.args.get("order")
    return [(o.this.name, bool(o.args.get("desc"))) for o in order.expressions] if order else []


def test_a_listing_by_a_column_of_its_rows_shows_and_orders_by_it() -> None:
    """Refused before ("the statement uses nothing 'industry' names")."""
    tree = _tree("Show the companies in Germany by industry")
    assert tree.args["from_"].this.name == "companies"
    assert "industry" in _shown(tree) and "name" in _shown(tree)
    assert _ordered(tree) == [("industry", False)]
    assert tree.args.get("group") is None and "Germany" in tree.sql()


def test_a_listing_by_a_column_of_the_row_it_refers_to_joins_it_once() -> None:
    """Answered before without the words (the contacts alone)."""
    tree = _tree("List the contacts by industry")
    assert tree.args["from_"].this.name == "contacts"
    assert [j.this.name for j in tree.args["joins"]] == ["companies"]
    assert "industry" in _shown(tree) and _ordered(tree) == [("industry", False)]


def test_by_a_number_column_arranges_from_the_lowest() -> None:
    """ "By X" arranges, it does not rank: "ordered by level of membership" is read
    highest first (a measure's order), "by level of membership" from the lowest."""
    assert _ordered(_tree("List the companies in Germany by employees")) == [("employees", False)]
    tree = _tree("List the companies in France by level of membership")
    assert _ordered(tree) == [("level_of_membership", False)]


def test_a_column_the_listed_rows_cannot_place_is_refused_naming_it() -> None:
    """A company has many contacts: their title is no value of a company's."""
    with pytest.raises(LinkError, match="by title"):
        linked_sql("List the companies by title", CRM, TODAY)


def test_a_count_by_a_column_is_still_a_grouping() -> None:
    tree = _tree("How many companies are in Germany by industry?")
    assert [g.name for g in tree.args["group"].expressions] == ["industry"]
    assert tree.args.get("order") is None


def test_a_listing_without_by_is_left_as_it_was() -> None:
    tree = _tree("Which companies are in Germany?")
    assert _shown(tree) == ["name"] and tree.args.get("order") is None


# Car models whose ``maker`` holds the number of a car maker (shaped as Spider's car_1).
MODELS = Catalog(
    "models",
    (
        TableInfo(
            "public",
            "car_makers",
            columns=(
                key("id"),
                col("maker", "text"),
                col("fullname", "text"),
                col("country", "text"),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "model_list",
            columns=(key("modelid"), col("maker"), col("model", "text")),
            primary_key=("modelid",),
            foreign_keys=(ForeignKeyInfo(("maker",), "public.car_makers", ("id",)),),
        ),
    ),
)


def test_a_reference_is_not_arranged_by_its_code() -> None:
    """ "by maker" on models is the maker; ``model_list.maker`` holds its number, which
    says no maker: refused, not the models ordered by a number."""
    with pytest.raises(LinkError, match="by maker"):
        linked_sql("List the models by maker", MODELS, TODAY)


def test_a_listing_that_would_show_x_alone_is_refused() -> None:
    """ "the car makers by country" read as the countries alone (no maker shown: the
    label rule names none here) does not list the makers asked for."""
    with pytest.raises(LinkError, match="by country"):
        linked_sql("List the car makers by country", MODELS, TODAY)
    tree = sqlglot.parse_one(linked_sql("Show the makers by country", MODELS, TODAY))
    assert [e.alias_or_name for e in tree.expressions] == ["maker", "country"]
