"""The SQL follow-up step: edits on an earlier statement's structure (row limit, regroup,
value swap) and questions about its rows (a sub-query, never a pasted list)."""

from __future__ import annotations

import pytest
import sqlglot

from services.sql.catalog._catalog import (
    Catalog,
    ColumnInfo,
    ForeignKeyInfo,
    JoinInfo,
    JoinOrigin,
    TableInfo,
)
from services.sql.conversation._followup import (
    Prior,
    Relation,
    edited,
    labels,
    pointed,
    refers,
    regrouped,
    restrict,
    subject,
    swapped,
    with_limit,
)
from services.sql.conversation._measure import bounded
from services.sql.conversation._statement import FollowUpError
from tests.unit.sql.flights import FLIGHTS as NYCFLIGHTS
from tests.unit.sql.statements import assert_same_sql

REGIONS = TableInfo(
    "public", "regions",
    columns=(ColumnInfo("region_id", "integer", False), ColumnInfo("region_name", "text", False)),
    primary_key=("region_id",),
)  # fmt: skip
CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("name", "text", False),
        ColumnInfo("country", "text", False, sample_values=("Canada", "France", "United States")),
        ColumnInfo("state", "text", False),
        ColumnInfo("email", "text", False),
        ColumnInfo("region_id", "integer", False),
    ),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("region_id",), "public.regions", ("region_id",)),),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("customer_id", "integer", False),
        ColumnInfo("status", "text", False, sample_values=("cancelled", "refunded", "sell")),
        ColumnInfo("airport", "text", False, known_values=(" ABZ", "Stark's Park")),
        ColumnInfo("amount", "numeric", True),
    ),
    primary_key=("id",),
)  # fmt: skip
CATALOG = Catalog("shop", (CUSTOMERS, ORDERS, REGIONS))
BY_COUNTRY = (
    "SELECT c.country, COUNT(*) AS n FROM customers AS c JOIN orders AS o "
    "ON o.customer_id = c.id WHERE o.status = 'cancelled' GROUP BY c.country ORDER BY c.country"
)
TOP_SPENDERS = (
    "SELECT c.name, SUM(o.amount) AS spent FROM customers AS c JOIN orders AS o "
    "ON o.customer_id = c.id GROUP BY c.name ORDER BY spent DESC LIMIT 5"
)


def test_row_limit_keeps_the_order_and_replaces_the_limit():
    assert_same_sql(with_limit(TOP_SPENDERS, 2), TOP_SPENDERS.replace("LIMIT 5", "LIMIT 2"))


def test_row_limit_ranks_a_breakdown_by_its_first_aggregate():
    plain = BY_COUNTRY.replace(" ORDER BY c.country", "")
    assert_same_sql(with_limit(plain, 3), plain + " ORDER BY n DESC NULLS LAST, country LIMIT 3")
    assert_same_sql(
        with_limit(plain, 3, ascending=True), plain + " ORDER BY n ASC, country LIMIT 3"
    )


def test_row_limit_breaks_ties_at_the_cut_as_the_linker_does():
    """ "keep the leading two" of a count per customer cuts where "the 2 customers with
    the most orders" does: by the count, then the names, then the key (keys last, as the
    linker's composition orders them). By the count alone, which of two customers tied
    at the cut was kept was the database's choice."""
    per_customer = (
        "SELECT c.id AS id, c.name AS name, COUNT(*) AS count FROM customers AS c "
        "JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id, c.name"
    )
    assert_same_sql(
        with_limit(per_customer, 2, catalog=CATALOG),
        per_customer + " ORDER BY count DESC NULLS LAST, name, id LIMIT 2",
    )


def test_row_limit_refuses_a_list_that_is_no_ranking():
    with pytest.raises(FollowUpError, match="not a ranking"):
        with_limit("SELECT name FROM customers", 3)


@pytest.mark.parametrize("sql", ["DELETE FROM customers", "SELECT 1 UNION SELECT 2", "SELEC"])
def test_a_statement_that_is_not_one_select_is_refused(sql):
    with pytest.raises(FollowUpError):
        with_limit(sql, 3)


def test_the_subject_is_the_first_name_column_of_the_earlier_rows():
    about = subject(TOP_SPENDERS, CATALOG)
    assert (about.table.name, about.column, about.output) == ("customers", "name", "name")


def test_a_count_is_about_its_table_by_key():
    about = subject("SELECT COUNT(*) FROM customers AS c WHERE c.country = 'Canada'", CATALOG)
    assert (about.table.name, about.column, about.output) == ("customers", "id", "")


def test_a_total_over_a_join_is_about_the_rows_of_its_first_table():
    counted = "SELECT COUNT(*) FROM orders AS o JOIN customers AS c ON o.customer_id = c.id"
    about = subject(counted, CATALOG)
    assert (about.table.name, about.column, about.output) == ("orders", "id", "")


def test_the_key_is_preferred_to_a_name_that_may_repeat():
    keyed = (
        "SELECT c.id, c.name, SUM(o.amount) AS s FROM customers AS c JOIN orders AS o ON "
        "o.customer_id = c.id GROUP BY c.id, c.name ORDER BY s DESC LIMIT 3"
    )
    about = subject(keyed, CATALOG)
    assert (about.table.name, about.column, about.output) == ("customers", "id", "id")
    assert labels(keyed, about, CATALOG) == ["name"]


def test_rows_grouped_by_a_reference_are_about_the_table_it_references():
    """ "and their full names?" after the carriers ranked by distance: the rows are
    carriers, so the subject is airlines (whose key flights.carrier references), not
    flights, which has no name to read."""
    catalog = NYCFLIGHTS
    ranked = (
        "SELECT t0.carrier AS carrier, SUM(t0.distance) AS total FROM public.flights AS t0 "
        "GROUP BY t0.carrier ORDER BY 2 DESC LIMIT 5"
    )
    about = subject(ranked, catalog)
    assert (about.table.name, about.column, about.output) == ("airlines", "carrier", "carrier")
    restricted = restrict(
        "SELECT a.name FROM public.airlines AS a", ranked, about, labels(ranked, about, catalog)
    )
    assert_same_sql(
        restricted,
        "SELECT a.name FROM public.airlines AS a WHERE a.carrier IN (SELECT earlier.carrier "
        f"FROM ({ranked}) AS earlier)",
    )
    # a follow-up read on the referencing table alone is restricted by the same column
    counted = restrict("SELECT COUNT(*) FROM public.flights AS f", ranked, about)
    assert_same_sql(
        counted,
        "SELECT COUNT(*) FROM public.flights AS f WHERE f.carrier IN (SELECT earlier.carrier "
        f"FROM ({ranked}) AS earlier)",
    )
    # inferred by key as well (no key declared): orders.customer_id -> customers.id
    by_customer = "SELECT o.customer_id, SUM(o.amount) AS s FROM orders AS o GROUP BY o.customer_id"
    about = subject(by_customer, CATALOG)
    assert (about.table.name, about.column, about.output) == ("customers", "id", "customer_id")
    # a column that references nothing stays the subject
    about = subject("SELECT flight, COUNT(*) FROM flights GROUP BY flight", catalog)
    assert (about.table.name, about.column) == ("flights", "flight")


def test_a_grouped_total_has_no_subject():
    with pytest.raises(FollowUpError, match="names no rows"):
        subject("SELECT COUNT(*) FROM customers GROUP BY country", CATALOG)


def test_the_database_wide_prefix_is_not_read_as_a_word():
    tables = tuple(
        TableInfo("public", n, columns=CUSTOMERS.columns) for n in ("sbCustomer", "sbTicker")
    )
    catalog = Catalog("broker", tables)
    assert pointed("What are their emails?", tables[0], catalog) == (
        "What are the emails of the customer?"
    )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What are their emails?", "What are the emails of the customers?"),
        ("how many of them are in Canada?", "how many of the customers are in Canada?"),
        ("list them", "list the customers"),
        ("When did those documents change?", "When did the documents change?"),
        ("and those ones?", "and the customers?"),
        (
            "How much did they spend there in total?",
            "How much did the customers spend there in total?",
        ),
        ("How much was spent there in total?", "How much was spent at the customers in total?"),
        ("and orders from there?", "and orders from the customers?"),
        # "people", the plural of "person", points as "those ones" does (issue 45, s58)
        (
            "how many purchases did those people make altogether?",
            "how many purchases did the customers make altogether?",
        ),
        # a collective noun after "that"/"this": the rows together (s58)
        (
            "how many transactions did that group make?",
            "how many transactions did the customers make?",
        ),
        # ... and only after the pointer: the "people" counted is left as said
        (
            "how many people did those customers refer?",
            "how many people did the customers refer?",
        ),
        # "which of those <noun>": the noun said once, never "of the customers customers"
        # (issue 45, s63 women: the linker showed the key beside the name)
        (
            "which of those customers are in Ohio",
            "which of the customers are in Ohio",
        ),
        ("how many of those people are in Ohio", "how many of the customers are in Ohio"),
    ],
)
def test_a_reference_points_at_the_subject_table(question, expected):
    assert refers(question)
    assert pointed(question, CUSTOMERS, CATALOG) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("which orders did he place?", "which orders did the customers place?"),
        ("and where does she live?", "and where does the customers live?"),
        ("what is her email?", "what is the email of the customers?"),
        ("how much has that client spent?", "how much has the customers spent?"),
        # the contracted "is" of "what's": the pointer after it all the same
        ("what's that client's email?", "what's the email of the customers?"),
    ],
)
def test_one_row_pointed_at_points_at_the_subject_table(question, expected):
    """The router sends "he", "her", "that client" only after an answer of one row: the
    linker reads them as the earlier rows' table, not as words naming nothing."""
    assert refers(question)
    assert pointed(question, CUSTOMERS, CATALOG) == expected


@pytest.mark.parametrize(
    "question",
    ["Which customers that joined in 2020 ordered?", "what is that in dollars?",
     "what's that in dollars?", "what's this month's revenue?",
     "which customers are in that group of accounts?", "count that set by region"],
)  # fmt: skip
def test_a_relative_or_pronoun_that_points_at_no_row(question):
    assert not refers(question)


@pytest.mark.parametrize(
    "question",
    ["How many customers are there?", "Are there customers in Ohio?", "there were 3 orders",
     "what's there to know about customers?", "Is there an order from 2020?"],
)  # fmt: skip
def test_the_there_of_are_there_refers_to_nothing(question):
    assert not refers(question)


def test_the_question_is_restricted_by_a_sub_query_not_a_list_of_names():
    about = subject(TOP_SPENDERS, CATALOG)
    shown = labels(TOP_SPENDERS, about, CATALOG)
    sql = restrict("SELECT t0.email FROM customers AS t0", TOP_SPENDERS, about, shown)
    # the earlier ranking's groups joined (one per name), its measure shown beside
    assert_same_sql(
        sql,
        "SELECT t0.name, t0.email, earlier.spent AS spent FROM customers AS t0 "
        f"JOIN ({TOP_SPENDERS}) AS earlier ON earlier.name = t0.name",
    )
    for name in ("Ann", "Bo"):  # never the values of the earlier rows
        assert name not in sql


def test_rows_the_earlier_answer_showed_by_key_are_given_no_name_it_never_showed():
    """The spelled-out question ("the emails of the Canadian customers") shows the
    emails; a name column the earlier answer never showed is not added beside them."""
    by_key = "SELECT c.id FROM customers AS c WHERE c.country = 'Canada'"
    about = subject(by_key, CATALOG)
    assert labels(by_key, about, CATALOG) == []
    sql = restrict("SELECT t0.email FROM customers AS t0", by_key, about,
                   labels(by_key, about, CATALOG))  # fmt: skip
    assert_same_sql(sql, "SELECT t0.email FROM customers AS t0 WHERE t0.country = 'Canada'")


def test_a_count_restricts_by_the_key_of_the_rows_it_counted():
    counted = "SELECT COUNT(*) FROM customers AS c WHERE c.country = 'Canada' ORDER BY 1 LIMIT 9"
    about = subject(counted, CATALOG)
    sql = restrict("SELECT COUNT(*) FROM customers WHERE state = 'Ohio'", counted, about, ["name"])
    assert_same_sql(
        sql,
        "SELECT COUNT(*) FROM customers WHERE state = 'Ohio' AND customers.id IN "
        "(SELECT c.id FROM customers AS c WHERE c.country = 'Canada')",
    )


def test_a_question_read_about_another_table_is_not_restricted():
    about = subject(TOP_SPENDERS, CATALOG)
    with pytest.raises(FollowUpError, match="not read about customers"):
        restrict("SELECT COUNT(*) FROM orders", TOP_SPENDERS, about)


def test_regroup_replaces_the_grouping_everywhere():
    assert_same_sql(
        regrouped(BY_COUNTRY, "state", CATALOG), BY_COUNTRY.replace("c.country", "c.state")
    )


def test_regroup_groups_a_total():
    assert_same_sql(
        regrouped("SELECT COUNT(*) FROM customers AS c", "countries", CATALOG),
        "SELECT c.country, COUNT(*) FROM customers AS c GROUP BY c.country",
    )


def test_regroup_reaches_a_named_table_through_its_key():
    # rows of a table, shown as the same question asked alone shows them: key, then name
    assert_same_sql(
        regrouped("SELECT COUNT(*) FROM customers AS c", "region", CATALOG),
        "SELECT grouped.region_id, grouped.region_name, COUNT(*) FROM customers AS c JOIN "
        "public.regions AS grouped ON grouped.region_id = c.region_id GROUP BY "
        "grouped.region_name, grouped.region_id",
    )


def test_regroup_onto_a_table_keyed_by_its_code_shows_the_code_once():
    types = TableInfo(
        "public", "ref_types",
        columns=(ColumnInfo("type_code", "text", False), ColumnInfo("description", "text", True)),
        primary_key=("type_code",),
    )  # fmt: skip
    items = TableInfo(
        "public", "items",
        columns=(ColumnInfo("id", "integer", False), ColumnInfo("type_code", "text", False)),
        primary_key=("id",),
        foreign_keys=(ForeignKeyInfo(("type_code",), "public.ref_types", ("type_code",)),),
    )  # fmt: skip
    sql = regrouped("SELECT COUNT(*) FROM items AS i", "type", Catalog("t", (items, types)))
    shown = sqlglot.parse_one(sql, dialect="postgres").expressions
    assert [e.sql() for e in shown].count("grouped.type_code") == 1, sql


def test_regroup_uses_joins_the_catalog_inferred_without_declared_keys():
    bare = TableInfo("public", "customers", columns=CUSTOMERS.columns, primary_key=("id",))
    inferred = JoinInfo(
        "public.customers", ("region_id",), "public.regions", ("region_id",),
        JoinOrigin.INFERRED,
    )  # fmt: skip
    catalog = Catalog("shop", (bare, ORDERS, REGIONS), joins=(inferred,))
    assert "JOIN public.regions" in regrouped("SELECT COUNT(*) FROM customers", "region", catalog)


def _chain(declared: bool) -> Catalog:
    """cars → makers → countries → continents, a maker's ``country`` and a country's
    ``continent`` holding the next table's key: declared, or joins the catalog inferred."""
    continents = TableInfo(
        "public", "continents",
        columns=(ColumnInfo("contid", "integer", False), ColumnInfo("continent", "text", False)),
        primary_key=("contid",),
    )  # fmt: skip
    countries = TableInfo(
        "public", "countries",
        columns=(ColumnInfo("countryid", "integer", False),
                 ColumnInfo("countryname", "text", False),
                 ColumnInfo("continent", "integer", False)),
        primary_key=("countryid",),
        foreign_keys=(ForeignKeyInfo(("continent",), "public.continents", ("contid",)),)
        if declared else (),
    )  # fmt: skip
    makers = TableInfo(
        "public", "car_makers",
        columns=(ColumnInfo("id", "integer", False), ColumnInfo("maker", "text", False),
                 ColumnInfo("fullname", "text", False), ColumnInfo("country", "integer", True)),
        primary_key=("id",),
        foreign_keys=(ForeignKeyInfo(("country",), "public.countries", ("countryid",)),)
        if declared else (),
    )  # fmt: skip
    cars = TableInfo(
        "public", "cars",
        columns=(ColumnInfo("id", "integer", False), ColumnInfo("maker", "integer", False),
                 ColumnInfo("weight", "integer", False)),
        primary_key=("id",),
        foreign_keys=(ForeignKeyInfo(("maker",), "public.car_makers", ("id",)),),
    )  # fmt: skip
    joins = () if declared else (
        JoinInfo("public.car_makers", ("country",), "public.countries", ("countryid",),
                 JoinOrigin.INFERRED),
        JoinInfo("public.countries", ("continent",), "public.continents", ("contid",),
                 JoinOrigin.INFERRED),
    )  # fmt: skip
    return Catalog("cars", (cars, makers, countries, continents), joins=joins)


PER_MAKER = (
    "SELECT m.maker, COUNT(*) AS count FROM cars AS c JOIN car_makers AS m ON m.id = c.maker "
    "GROUP BY m.maker"
)


@pytest.mark.parametrize("declared", [True, False])
def test_regroup_by_a_column_holding_another_tables_key_groups_by_that_table(declared: bool):
    # "and per country instead?" after cars per maker: the countries by name, never the
    # key numbers the makers' ``country`` column holds (issue 45, s61)
    catalog = _chain(declared)
    by_country = regrouped(PER_MAKER, "country", catalog)
    assert_same_sql(
        by_country,
        "SELECT grouped.countryid, grouped.countryname, COUNT(*) AS count FROM cars AS c "
        "JOIN car_makers AS m ON m.id = c.maker JOIN public.countries AS grouped "
        "ON grouped.countryid = m.country GROUP BY grouped.countryname, grouped.countryid",
    )
    # a second step along the chain joins the next table under a name of its own, and
    # shows the continents as "How many cars does each continent have?" does: by key and
    # the column named as the table (the linker's rule for a grouped entity; issue 45, s62)
    assert_same_sql(
        regrouped(by_country, "continent", catalog),
        "SELECT grouped2.contid, grouped2.continent, COUNT(*) AS count FROM cars AS c "
        "JOIN car_makers AS m ON m.id = c.maker JOIN public.countries AS grouped "
        "ON grouped.countryid = m.country JOIN public.continents AS grouped2 "
        "ON grouped2.contid = grouped.continent "
        "GROUP BY grouped2.continent, grouped2.contid",
    )


@pytest.mark.parametrize("declared", [True, False])
def test_regroup_by_words_naming_a_table_groups_its_rows_and_drops_the_joins_it_freed(
    declared: bool,
):
    # "per car maker instead" after cars per country: the makers as the question spelled
    # out shows them (key, fullname, maker: the linker's rule, not the one column called
    # "maker"), and the countries, joined only to say the groups replaced, are no longer
    # joined, though a maker's country may be missing (issue 45, s62)
    catalog = _chain(declared)
    by_country = regrouped(PER_MAKER, "country", catalog)
    assert_same_sql(
        regrouped(by_country, "car maker", catalog),
        "SELECT m.id, m.fullname, m.maker, COUNT(*) AS count FROM cars AS c "
        "JOIN car_makers AS m ON m.id = c.maker GROUP BY m.fullname, m.maker, m.id",
    )


def test_regroup_by_the_words_of_a_key_groups_by_the_row_it_refers_to():
    # "per support rep instead" names ``support_rep_id`` (its "id" unsaid), which refers
    # to an employee: the employees by name and key, though no table is called "support
    # rep" (issue 45, s61)
    employees = TableInfo(
        "public", "employees",
        columns=(ColumnInfo("employee_id", "integer", False),
                 ColumnInfo("first_name", "text", False), ColumnInfo("last_name", "text", False)),
        primary_key=("employee_id",),
    )  # fmt: skip
    clients = TableInfo(
        "public", "clients",
        columns=(ColumnInfo("client_id", "integer", False), ColumnInfo("city", "text", False),
                 ColumnInfo("support_rep_id", "integer", True)),
        primary_key=("client_id",),
        foreign_keys=(ForeignKeyInfo(("support_rep_id",), "public.employees", ("employee_id",)),),
    )  # fmt: skip
    catalog = Catalog("store", (clients, employees))
    per_city = "SELECT c.city, COUNT(*) AS n FROM clients AS c GROUP BY c.city"
    assert_same_sql(
        regrouped(per_city, "support rep", catalog),
        "SELECT grouped.employee_id, grouped.first_name, grouped.last_name, COUNT(*) AS n "
        "FROM clients AS c JOIN public.employees AS grouped "
        "ON grouped.employee_id = c.support_rep_id "
        "GROUP BY grouped.first_name, grouped.last_name, grouped.employee_id",
    )
    # words that spell only part of the key name nothing
    with pytest.raises(FollowUpError):
        regrouped(per_city, "support", catalog)


def test_regroup_by_words_no_column_spells_is_refused():
    with pytest.raises(FollowUpError, match="no column"):
        regrouped(BY_COUNTRY, "weather", CATALOG)


@pytest.mark.parametrize(
    ("value", "stored"),
    [("Refunded", "refunded"), ("refunded ones", "refunded"), ("sells", "sell")],
)
def test_value_swap_replaces_the_compared_value_of_the_column_that_stores_it(value, stored):
    assert_same_sql(swapped(BY_COUNTRY, value, CATALOG), BY_COUNTRY.replace("cancelled", stored))


def test_value_swap_keeps_codes_apostrophes_and_the_literal_shape():
    code = "SELECT COUNT(*) FROM orders WHERE TRIM(airport) = 'Stark''s Park'"
    assert_same_sql(
        swapped(code, "abz", CATALOG), "SELECT COUNT(*) FROM orders WHERE TRIM(airport) = ' ABZ'"
    )
    folded = "SELECT COUNT(*) FROM orders AS o WHERE LOWER(o.status) LIKE '%cancel%'"
    assert_same_sql(
        swapped(folded, "Refunded", CATALOG),
        "SELECT COUNT(*) FROM orders AS o WHERE LOWER(o.status) LIKE '%refunded%'",
    )


def test_value_swap_refuses_a_value_no_compared_column_stores():
    with pytest.raises(FollowUpError, match="stores 'Germany'"):
        swapped(BY_COUNTRY, "Germany", CATALOG)


def test_value_swap_refuses_a_value_two_literals_could_take():
    both = "SELECT COUNT(*) FROM orders WHERE status = 'cancelled' OR status = 'sell'"
    with pytest.raises(FollowUpError, match="more than one"):
        swapped(both, "refunded", CATALOG)


def test_edited_dispatches_on_the_relation():
    assert "LIMIT 2" in edited(TOP_SPENDERS, Prior(TOP_SPENDERS, Relation.ROW_LIMIT, 2), CATALOG)[0]
    regroup = Prior(BY_COUNTRY, Relation.REGROUP, dimension="state")
    assert "c.state" in edited(BY_COUNTRY, regroup, CATALOG)[0]
    with pytest.raises(FollowUpError):
        edited(TOP_SPENDERS, Prior(TOP_SPENDERS, Relation.RESULT_SET), CATALOG)


def test_a_regroup_by_a_stored_value_of_a_compared_column_swaps_the_value():
    # "and by refunded?" names no column but a value the compared status stores: "by"
    # said whose rows, not how to group them (issue 45, s61) ...
    by_value = Prior(BY_COUNTRY, Relation.REGROUP, dimension="refunded")
    assert_same_sql(
        edited(BY_COUNTRY, by_value, CATALOG)[0], BY_COUNTRY.replace("cancelled", "refunded")
    )
    # ... while words that name neither a column nor a compared value stay refused, and
    # a grouping added beside stays a grouping
    with pytest.raises(FollowUpError, match="no column"):
        edited(BY_COUNTRY, Prior(BY_COUNTRY, Relation.REGROUP, dimension="Germany"), CATALOG)
    added = Prior(BY_COUNTRY, Relation.REGROUP, dimension="refunded", add=True)
    with pytest.raises(FollowUpError, match="no column"):
        edited(BY_COUNTRY, added, CATALOG)


def test_a_full_name_swaps_the_first_and_the_last_name_together():
    # "and by John Doe?" after Jane Smith's sales: 'John' is a stored first name and
    # 'Doe', the words a shorter form would drop, the compared last name's value:
    # swapping the first name alone answered for John Smith (issue 45, s61)
    people = TableInfo(
        "public", "salespersons",
        columns=(ColumnInfo("id", "integer", False),
                 ColumnInfo("first_name", "text", False, sample_values=("Jane", "John")),
                 ColumnInfo("last_name", "text", False, sample_values=("Doe", "Smith"))),
        primary_key=("id",),
    )  # fmt: skip
    catalog = Catalog("shop", (people,))
    jane = (
        "SELECT COUNT(*) FROM salespersons AS s "
        "WHERE s.first_name = 'Jane' AND s.last_name = 'Smith'"
    )
    john_doe = jane.replace("Jane", "John").replace("Smith", "Doe")
    for prior in (
        Prior(jane, Relation.VALUE_SWAP, value="John Doe"),
        Prior(jane, Relation.REGROUP, dimension="John Doe"),
    ):
        # both names swapped, each into the column that stores it
        assert_same_sql(edited(jane, prior, catalog)[0], john_doe)
    # one name said alone is still swapped
    assert_same_sql(swapped(jane, "John", catalog), jane.replace("Jane", "John"))


def test_regroup_prefers_the_named_table_to_a_column_named_in_part():
    drugs = TableInfo(
        "public", "drugs",
        columns=(ColumnInfo("drug_id", "integer", False), ColumnInfo("drug_name", "text", False)),
        primary_key=("drug_id",),
    )  # fmt: skip
    treatments = TableInfo(
        "public", "treatments",
        columns=(
            ColumnInfo("id", "integer", False),
            ColumnInfo("drug_id", "integer", False),
            ColumnInfo("drug_unit", "text", False),
        ),
        primary_key=("id",),
        foreign_keys=(ForeignKeyInfo(("drug_id",), "public.drugs", ("drug_id",)),),
    )  # fmt: skip
    catalog = Catalog("derm", (drugs, treatments))
    grouped = regrouped("SELECT COUNT(*) FROM treatments AS t", "drug", catalog)
    assert "GROUP BY grouped.drug_name" in grouped
    assert "GROUP BY t.drug_unit" in regrouped("SELECT COUNT(*) FROM treatments AS t", "unit",
                                                catalog)  # fmt: skip


def test_rows_named_but_grouped_by_key_are_matched_by_key():
    ranked = (
        "SELECT c.name, COUNT(*) AS n FROM customers AS c JOIN orders AS o ON o.customer_id = "
        "c.id GROUP BY c.id, c.name ORDER BY n DESC LIMIT 5"
    )
    about = subject(ranked, CATALOG)
    assert (about.column, about.key_from) == ("id", "c")
    sql = restrict("SELECT t0.email FROM customers AS t0", ranked, about, ["name"])
    assert_same_sql(
        sql,
        "SELECT t0.name, t0.email, earlier.n AS n FROM customers AS t0 JOIN "
        f"({ranked.replace(' FROM customers', ', c.id AS tandem_key FROM customers')}) "
        "AS earlier ON earlier.tandem_key = t0.id",
    )


def test_names_are_shown_only_where_the_subject_is_what_the_question_lists():
    about = subject(TOP_SPENDERS, CATALOG)
    linked = "SELECT o.amount FROM orders AS o JOIN customers AS c ON o.customer_id = c.id"
    assert "c.name" not in restrict(linked, TOP_SPENDERS, about, ["name"]).split(" FROM ")[0]


def test_regroup_adds_a_column_beside_the_grouping_when_asked():
    assert_same_sql(
        regrouped(BY_COUNTRY, "state", CATALOG, add=True),
        BY_COUNTRY.replace("SELECT c.country,", "SELECT c.country, c.state,").replace(
            "GROUP BY c.country", "GROUP BY c.country, c.state"
        ),
    )


def test_regroup_reads_a_phrase_by_its_head_word():
    assert "GROUP BY c.state" in regrouped(BY_COUNTRY, "home state", CATALOG)


def test_regroup_by_a_column_named_with_its_table_reached_by_key():
    merchants = TableInfo(
        "public", "merchants",
        columns=(ColumnInfo("mid", "integer", False), ColumnInfo("name", "text", False),
                 ColumnInfo("category", "text", False)),
        primary_key=("mid",),
    )  # fmt: skip
    coupons = TableInfo(
        "public", "coupons",
        columns=(ColumnInfo("cid", "integer", False), ColumnInfo("merchant_id", "integer", False),
                 ColumnInfo("discount_type", "text", False)),
        primary_key=("cid",),
        foreign_keys=(ForeignKeyInfo(("merchant_id",), "public.merchants", ("mid",)),),
    )  # fmt: skip
    catalog = Catalog("wallet", (merchants, coupons))
    by_type = "SELECT c.discount_type, COUNT(*) FROM coupons AS c GROUP BY c.discount_type"
    assert "GROUP BY grouped.category" in regrouped(by_type, "merchant category", catalog)
    assert "GROUP BY grouped.name" in regrouped(by_type, "merchant", catalog)


def test_regroup_through_one_of_two_keys_to_a_table_goes_by_the_key_the_words_name():
    """flights reach airports by origin and by dest: "by origin airport" is grouped
    through origin (it went through dest, the first key, and answered the destinations'
    counts), "by destination airport" through dest, and "by airport", which names neither,
    is refused rather than guessed. Rows shown by a code (carriers) are followed by rows
    shown by their code too (the airports' faa), as the question asked alone shows them."""
    catalog = NYCFLIGHTS
    by_carrier = "SELECT t0.carrier, COUNT(*) AS n FROM flights AS t0 GROUP BY t0.carrier"
    by_origin = regrouped(by_carrier, "origin airport", catalog)
    assert "grouped.faa = t0.origin" in by_origin and "t0.dest" not in by_origin
    # the carriers were shown by their code, a reference: so are the airports
    assert by_origin.startswith("SELECT grouped.faa, COUNT(*)")
    by_dest = regrouped(by_carrier, "destination airport", catalog)
    assert "grouped.faa = t0.dest" in by_dest and "t0.origin" not in by_dest
    with pytest.raises(FollowUpError, match="more than one key"):
        regrouped(by_carrier, "airport", catalog)


def test_the_lowest_rows_of_a_ranking_from_the_highest_are_its_other_end():
    assert_same_sql(
        with_limit(TOP_SPENDERS, 2, ascending=True),
        TOP_SPENDERS.replace("spent DESC LIMIT 5", "spent ASC NULLS LAST LIMIT 2"),
    )
    cheapest = TOP_SPENDERS.replace("DESC", "ASC")
    assert_same_sql(with_limit(cheapest, 2, ascending=True), cheapest.replace("LIMIT 5", "LIMIT 2"))


def test_the_earlier_statement_is_nested_under_aliases_of_its_own():
    """Both readings name their tables t0, t1: nested as they are, t1 would be orders in
    one scope and regions in the other, and a check that reads the statement's aliases
    once (the join check) would judge the follow-up's join against the wrong table."""
    counted = (
        "SELECT COUNT(*) FROM orders AS t0 JOIN customers AS t1 ON t1.id = t0.customer_id "
        "WHERE t1.country = 'Canada'"
    )
    about = subject(counted, CATALOG)
    linked = (
        "SELECT t1.region_name FROM orders AS t0 JOIN customers AS t2 ON t2.id = t0.customer_id "
        "JOIN regions AS t1 ON t1.region_id = t2.region_id"
    )
    sql = restrict(linked, counted, about)
    tables: dict[str, set[str]] = {}
    for table in sqlglot.parse_one(sql, dialect="postgres").find_all(sqlglot.exp.Table):
        tables.setdefault(table.alias_or_name, set()).add(table.name)
    assert all(len(names) == 1 for names in tables.values()), tables
    assert_same_sql(
        sql,
        f"{linked} WHERE t0.id IN (SELECT earlier_t0.id FROM orders AS earlier_t0 JOIN "
        "customers AS earlier_t1 ON earlier_t1.id = earlier_t0.customer_id "
        "WHERE earlier_t1.country = 'Canada')",
    )


FLIGHTS = TableInfo(
    "public", "flights",
    columns=(
        ColumnInfo("flight_id", "integer", False),
        ColumnInfo("carrier", "text", False),
        ColumnInfo("origin", "text", False),
        ColumnInfo("dep_delay", "numeric", True),
        ColumnInfo("seats", "integer", True),
    ),
    primary_key=("flight_id",),
)  # fmt: skip
AIR = Catalog("air", (FLIGHTS,))
PER_CARRIER = (
    "SELECT f.carrier, COUNT(*) AS n FROM flights AS f WHERE f.origin = 'JFK' "
    "GROUP BY f.carrier ORDER BY n DESC"
)


@pytest.mark.parametrize(
    "question",
    ["which of these operated more than 500?", "Which of them have more than 500 flights?"],
)
def test_which_of_these_past_a_bare_number_bounds_the_one_measure(question):
    assert_same_sql(
        bounded(question, PER_CARRIER, AIR) or "",
        "SELECT f.carrier FROM flights AS f WHERE f.origin = 'JFK' GROUP BY f.carrier "
        "HAVING COUNT(*) > 500 ORDER BY COUNT(*) DESC",
    )


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        # a unit or another noun may name a column: left to the linker
        ("which of these have more than 50 seats?", PER_CARRIER),
        ("which of these took more than 30 minutes?", PER_CARRIER),
        # the verb names a column of the statement's tables, not the count
        ("which of these delayed more than 30?", PER_CARRIER),
        # a bound before a limit keeps other rows than the ones shown
        ("which of these operated more than 500?", f"{PER_CARRIER} LIMIT 3"),
        # two measures: which one the bound is on is a guess
        ("which of these operated more than 500?",
         "SELECT f.carrier, COUNT(*), AVG(f.dep_delay) FROM flights AS f GROUP BY f.carrier"),
        # no measure to bound
        ("which of these operated more than 500?", "SELECT f.carrier FROM flights AS f"),
    ],
)  # fmt: skip
def test_a_bound_that_could_name_something_else_is_not_placed(question, sql):
    assert bounded(question, sql, AIR) is None


@pytest.mark.parametrize(
    "earlier",
    [
        "SELECT COUNT(*) FROM customers AS c WHERE c.country = 'Canada' AND c.state = 'Ohio'",
        "SELECT c.id, c.name FROM customers AS c WHERE c.country = 'Canada' AND c.state = 'Ohio'",
    ],
)
def test_rows_of_the_same_table_by_key_are_the_earlier_conditions_with_another_projection(
    earlier,
):
    """ "what are their emails?" after the customers of one table read by their key and
    plain conditions: a customer's key is among those rows' keys exactly when it meets
    the conditions, so the statement is the earlier one with the emails shown (as the
    question spelled out reads), and a later time shift or filter finds its conditions."""
    about = subject(earlier, CATALOG)
    sql = restrict("SELECT t0.email FROM customers AS t0", earlier, about)
    assert_same_sql(
        sql,
        "SELECT t0.email FROM customers AS t0 WHERE t0.country = 'Canada' AND t0.state = 'Ohio'",
    )


@pytest.mark.parametrize(
    "earlier",
    [
        # cut, grouped or folded rows are not the rows the conditions meet
        "SELECT c.id FROM customers AS c WHERE c.country = 'Canada' ORDER BY c.id LIMIT 2",
        "SELECT DISTINCT c.id FROM customers AS c WHERE c.country = 'Canada'",
        # conditions on another table's rows
        "SELECT c.id FROM customers AS c JOIN orders AS o ON o.customer_id = c.id "
        "WHERE o.status = 'cancelled'",
        # a sub-query of its own: its aliases are not the statement's
        "SELECT c.id FROM customers AS c WHERE c.id IN (SELECT customer_id FROM orders)",
    ],
)
def test_rows_not_the_same_as_their_conditions_stay_a_sub_query(earlier):
    about = subject(earlier, CATALOG)
    sql = restrict("SELECT t0.email FROM customers AS t0", earlier, about)
    assert "AS earlier" in sql  # the earlier rows, as a sub-query


def test_a_listing_of_the_top_groups_rows_shows_the_measure_they_were_ranked_by():
    """ "what's that customer's email?" after "which customer placed the most orders?"
    shows the count beside the email, as "What is the email of the customer who placed
    the most orders?" does: the measure chose the rows (a listing's first sort key is
    shown alike: ``deciding``). Joined to the earlier groups, one per customer, so the
    rows stay the rows."""
    earlier = (
        "SELECT c.id AS id, c.name AS name, COUNT(*) AS count FROM customers AS c "
        "JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id, c.name "
        "ORDER BY count DESC NULLS LAST, name, id LIMIT 1"
    )
    sql = restrict("SELECT t0.email AS email FROM customers AS t0", earlier,
                   subject(earlier, CATALOG))  # fmt: skip
    assert_same_sql(
        sql,
        f"SELECT t0.email AS email, earlier.count AS count FROM customers AS t0 "
        f"JOIN ({earlier}) AS earlier ON earlier.id = t0.id",
    )


def test_groups_that_are_not_the_subjects_rows_keep_the_sub_query():
    """Grouped by a column of another table (orders per customer and status), a customer
    is several groups: joined, the customer would repeat, so the rows are matched by key
    as before and no measure is shown."""
    earlier = (
        "SELECT c.id AS id, o.status AS status, COUNT(*) AS count FROM customers AS c "
        "JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id, o.status "
        "ORDER BY count DESC NULLS LAST LIMIT 2"
    )
    sql = restrict("SELECT t0.email AS email FROM customers AS t0", earlier,
                   subject(earlier, CATALOG))  # fmt: skip
    assert " IN (SELECT earlier.id FROM (" in sql and "earlier.count" not in sql


_TOP_CUSTOMER = (
    "SELECT c.id AS id, c.name AS name, COUNT(*) AS count FROM customers AS c "
    "JOIN orders AS o ON o.customer_id = c.id GROUP BY c.id, c.name "
    "ORDER BY count DESC NULLS LAST, name, id LIMIT 1"
)


def test_the_row_each_ranked_row_refers_to_is_shown_with_its_measure():
    """ "which region is it in?" after the customer with the most orders lists regions,
    one per customer (the customer refers to its region by the region's key): each shows
    the count that chose its customer, as "Which region is the customer with the most
    orders in?" shows it."""
    linked = (
        "SELECT DISTINCT r.region_name AS region_name FROM regions AS r "
        "JOIN customers AS t1 ON t1.region_id = r.region_id"
    )
    sql = restrict(linked, _TOP_CUSTOMER, subject(_TOP_CUSTOMER, CATALOG), catalog=CATALOG)
    assert_same_sql(
        sql,
        linked.replace(" FROM", ", earlier.count AS count FROM")
        + f" JOIN ({_TOP_CUSTOMER}) AS earlier ON earlier.id = t1.id",
    )


def test_rows_that_refer_to_the_ranked_rows_are_not_shown_with_their_measure():
    """The orders of the top customer are many per customer: the orders are matched by
    the customer's key, no measure beside them (it would be the customer's, not theirs)."""
    linked = (
        "SELECT o.amount AS amount FROM orders AS o JOIN customers AS t1 ON o.customer_id = t1.id"
    )
    sql = restrict(linked, _TOP_CUSTOMER, subject(_TOP_CUSTOMER, CATALOG), catalog=CATALOG)
    assert "earlier.count" not in sql and " IN (SELECT earlier.id FROM (" in sql


_TOP_TWO_CUSTOMERS = _TOP_CUSTOMER.replace("LIMIT 1", "LIMIT 2")


def test_distinct_rows_the_ranked_rows_refer_to_are_not_split_by_their_measure():
    """ "which regions are they in?" after the 2 customers with the most orders lists
    distinct regions: two top customers of one region are one row, as "Which regions are
    the 2 customers with the most orders in?" answers. Each customer's count beside the
    region would split that row in two (issue 45, s64 nw1: "who supplies them?" after
    the top 5 products), so the rows are matched by key and no measure is shown."""
    linked = (
        "SELECT DISTINCT r.region_name AS region_name FROM regions AS r "
        "JOIN customers AS t1 ON t1.region_id = r.region_id"
    )
    sql = restrict(
        linked, _TOP_TWO_CUSTOMERS, subject(_TOP_TWO_CUSTOMERS, CATALOG), catalog=CATALOG
    )
    assert "earlier.count" not in sql and " IN (SELECT earlier.id FROM (" in sql
