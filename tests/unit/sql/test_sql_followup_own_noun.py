"""Filters that name the earlier rows by their own table's noun (conversation._own_noun):
"only payments made by credit card" after a total of payments received per salesperson
is a condition on the payments received (the participle's manner read on them alone),
never on ``payments_made`` whose name the words also spell; "keep only transactions
above 100" compares each transaction's amount. A noun that names no measured table, or
another table the statement reads too, is not moved onto the measured rows. The linker
is a fake of its seam (``Linker``): it answers the questions it is given statements for
and reads nothing else, as the real one read nothing of the words as said.

Also the regroup of a grouping by a key whose names come from the table the key refers
to ("per salesperson" shown by name): one grouping, replaced whole, and the new one shown
by key and name as the earlier one was."""

from __future__ import annotations

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built
from services.sql.conversation._followup import regrouped
from tests.unit.sql.statements import assert_same_sql

SALESPERSONS = TableInfo(
    "public", "salespersons",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("first_name", "text", False),
        ColumnInfo("last_name", "text", False),
    ),
    primary_key=("id",),
)  # fmt: skip
CARS = TableInfo(
    "public", "cars",
    columns=(ColumnInfo("id", "integer", False), ColumnInfo("make", "text", False)),
    primary_key=("id",),
)  # fmt: skip
SALES = TableInfo(
    "public", "sales",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("car_id", "integer", False),
        ColumnInfo("salesperson_id", "integer", False),
        ColumnInfo("sale_price", "numeric", False),
    ),
    primary_key=("id",),
    foreign_keys=(
        ForeignKeyInfo(("car_id",), "public.cars", ("id",)),
        ForeignKeyInfo(("salesperson_id",), "public.salespersons", ("id",)),
    ),
)  # fmt: skip
METHODS = ("cash", "credit_card", "debit_card")
RECEIVED = TableInfo(
    "public", "payments_received",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("sale_id", "integer", False),
        ColumnInfo("payment_amount", "numeric", False),
        ColumnInfo("payment_method", "text", False, sample_values=METHODS),
    ),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("sale_id",), "public.sales", ("id",)),),
)  # fmt: skip
MADE = TableInfo(
    "public", "payments_made",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("vendor_name", "text", False),
        ColumnInfo("payment_amount", "numeric", False),
        ColumnInfo("payment_method", "text", False, sample_values=METHODS),
    ),
    primary_key=("id",),
)  # fmt: skip
DEALERSHIP = Catalog("car_dealership", (SALESPERSONS, CARS, SALES, RECEIVED, MADE))

PER_SALESPERSON = (
    "SELECT t1.salesperson_id AS salesperson_id, r0.first_name AS first_name, "
    "r0.last_name AS last_name, SUM(t0.payment_amount) AS sum_payment_amount "
    "FROM public.payments_received AS t0 JOIN public.sales AS t1 ON t1.id = t0.sale_id "
    "LEFT JOIN public.salespersons AS r0 ON r0.id = t1.salesperson_id "
    "GROUP BY t1.salesperson_id, r0.first_name, r0.last_name"
)
SALES_PER_SALESPERSON = (
    "SELECT t0.salesperson_id, COUNT(*) AS n FROM public.sales AS t0 GROUP BY t0.salesperson_id"
)

TRANSACTIONS = TableInfo(
    "consumer_div", "wallet_transactions_daily",
    columns=(
        ColumnInfo("txid", "integer", False),
        ColumnInfo("sender_id", "bigint", False),
        ColumnInfo("sender_type", "integer", False),
        ColumnInfo("amount", "numeric", False),
        ColumnInfo("status", "character varying", False),
    ),
    primary_key=("txid",),
)  # fmt: skip
COUPONS = TableInfo(
    "consumer_div", "coupons",
    columns=(
        ColumnInfo("cid", "integer", False),
        ColumnInfo("discount_value", "numeric", False),
        ColumnInfo("max_discount_amount", "numeric", True),
        ColumnInfo("status", "character varying", False),
    ),
    primary_key=("cid",),
)  # fmt: skip
EWALLET = Catalog("ewallet", (TRANSACTIONS, COUPONS))
TOTAL_PER_STATUS = (
    "SELECT t0.status, SUM(t0.amount) AS sum_amount "
    "FROM consumer_div.wallet_transactions_daily AS t0 GROUP BY t0.status"
)
COUNT_PER_STATUS = (
    "SELECT t0.status, COUNT(*) AS count "
    "FROM consumer_div.wallet_transactions_daily AS t0 GROUP BY t0.status"
)


class Linker:
    """The linker's seam: each question asked, and the statement for the first question
    that starts with one of its keys (None for the rest)."""

    def __init__(self, readings: dict[str, str]) -> None:
        self.readings = readings
        self.asked: list[str] = []

    async def __call__(self, question: str) -> str | None:
        self.asked.append(question)
        return next((sql for key, sql in self.readings.items() if question.startswith(key)), None)


# How the linker reads the manner alone about the payments received, and the words as
# said: "payments made" names the outgoing payments, a table the earlier answer never read.
READINGS = {
    "Which payments received are by credit card": (
        "SELECT t0.id FROM public.payments_received AS t0 WHERE t0.payment_method = 'credit_card'"
    ),
    "Which sales are by credit card": (
        "SELECT t1.id FROM public.payments_received AS t0 JOIN public.sales AS t1 "
        "ON t1.id = t0.sale_id WHERE t0.payment_method = 'credit_card'"
    ),
    "Which payments received are payments made by credit card": (
        "SELECT t0.id FROM public.payments_made AS t0 WHERE t0.payment_method = 'credit_card'"
    ),
}


async def _filtered(sql: str, condition: str, catalog: Catalog, link: Linker) -> str:
    prior = Prior(sql, Relation.FILTER, condition=condition)
    return (await built(sql, prior, catalog, link))[0]


async def test_the_measured_rows_noun_and_a_participle_filter_those_rows_by_its_manner():
    linker = Linker(READINGS)
    filtered = await _filtered(PER_SALESPERSON, "payments made by credit card", DEALERSHIP, linker)
    assert_same_sql(
        filtered,
        PER_SALESPERSON.replace(" GROUP BY", " WHERE (t0.payment_method = 'credit_card') GROUP BY"),
    )
    # the manner is asked of the rows the noun names, the payments received, alone
    alone = [q for q in linker.asked if "are by credit card" in q or "received by credit" in q]
    assert alone and all("payments received" in q for q in alone)


async def test_a_noun_that_names_no_measured_table_is_not_moved_onto_the_measured_rows():
    # sales are counted: "payments" names another table, so the words are read as said
    # (and refused here), never as a manner of the sales
    linker = Linker(READINGS)
    with pytest.raises(FollowUpError, match="payments made by credit card"):
        await _filtered(SALES_PER_SALESPERSON, "payments made by credit card", DEALERSHIP, linker)
    assert not any("are by credit card" in q for q in linker.asked)


async def test_a_noun_of_two_tables_the_statement_reads_names_neither_alone():
    both = Catalog(
        "car_dealership",
        (SALESPERSONS, CARS, SALES, RECEIVED,
         TableInfo("public", "payments_due", columns=RECEIVED.columns, primary_key=("id",),
                   foreign_keys=RECEIVED.foreign_keys)),
    )  # fmt: skip
    two = (
        "SELECT SUM(t0.payment_amount) FROM public.payments_received AS t0 "
        "JOIN public.payments_due AS t1 ON t1.id = t0.id"
    )
    linker = Linker(READINGS)
    with pytest.raises(FollowUpError):
        await _filtered(two, "payments made by credit card", both, linker)
    assert not any("are by credit card" in q for q in linker.asked)


@pytest.mark.parametrize(
    ("sql", "condition", "compared"),
    [
        # the amount the statement sums
        (TOTAL_PER_STATUS, "transactions above 100", "t0.amount > 100"),
        (TOTAL_PER_STATUS, "transactions of at most 2k", None),
        # a count: the table's one amount (a sender's type code is none)
        (COUNT_PER_STATUS, "transactions under 50", "t0.amount < 50"),
    ],
)
async def test_the_measured_rows_noun_compared_with_a_number_compares_their_amount(
    sql, condition, compared
):
    if compared is None:
        with pytest.raises(FollowUpError):
            await _filtered(sql, condition, EWALLET, Linker({}))
        return
    filtered = await _filtered(sql, condition, EWALLET, Linker({}))
    # each transaction's amount, not the group's total (no HAVING)
    assert_same_sql(filtered, sql.replace(" GROUP BY", f" WHERE ({compared}) GROUP BY"))


async def test_rows_with_two_amounts_and_no_measured_one_are_refused():
    per_status = "SELECT t0.status, COUNT(*) FROM consumer_div.coupons AS t0 GROUP BY t0.status"
    with pytest.raises(FollowUpError, match="coupons above 10"):
        await _filtered(per_status, "coupons above 10", EWALLET, Linker({}))


async def test_another_tables_noun_compared_with_a_number_is_not_the_measured_amount():
    with pytest.raises(FollowUpError, match="coupons above 10"):
        await _filtered(TOTAL_PER_STATUS, "coupons above 10", EWALLET, Linker({}))


def test_a_regroup_replaces_a_key_grouping_shown_by_the_names_of_the_row_it_refers_to():
    assert_same_sql(
        regrouped(PER_SALESPERSON, "car make", DEALERSHIP),
        "SELECT grouped.make, SUM(t0.payment_amount) AS sum_payment_amount "
        "FROM public.payments_received AS t0 JOIN public.sales AS t1 ON t1.id = t0.sale_id "
        "JOIN public.cars AS grouped ON grouped.id = t1.car_id GROUP BY grouped.make",
    )


def test_a_grouping_by_columns_of_two_unkeyed_tables_is_still_more_than_one_thing():
    two = (
        "SELECT t1.salesperson_id, t0.payment_method, SUM(t0.payment_amount) "
        "FROM public.payments_received AS t0 JOIN public.sales AS t1 ON t1.id = t0.sale_id "
        "GROUP BY t1.salesperson_id, t0.payment_method"
    )
    with pytest.raises(FollowUpError, match="more than one thing"):
        regrouped(two, "car make", DEALERSHIP)


AIRLINES = TableInfo(
    "public", "airlines",
    columns=(ColumnInfo("carrier", "text", False), ColumnInfo("name", "text", False)),
    primary_key=("carrier",),
)  # fmt: skip
AIRPORTS = TableInfo(
    "public", "airports",
    columns=(ColumnInfo("faa", "text", False), ColumnInfo("name", "text", False)),
    primary_key=("faa",),
)  # fmt: skip
FLIGHTS = TableInfo(
    "public", "flights",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("carrier", "text", False),
        ColumnInfo("origin", "text", False),
    ),
    primary_key=("id",),
    foreign_keys=(
        ForeignKeyInfo(("carrier",), "public.airlines", ("carrier",)),
        ForeignKeyInfo(("origin",), "public.airports", ("faa",)),
    ),
)  # fmt: skip


def test_a_grouping_shown_by_code_and_name_is_regrouped_by_code_and_name_alone():
    per_carrier = (
        "SELECT t0.carrier, r0.name, COUNT(*) AS count FROM public.flights AS t0 "
        "LEFT JOIN public.airlines AS r0 ON r0.carrier = t0.carrier GROUP BY t0.carrier, r0.name"
    )
    # the airports by their code and name, as the earlier answer showed the carriers; the
    # airlines, left joined by their key and read no more, are no longer joined
    assert_same_sql(
        regrouped(per_carrier, "origin airport", Catalog("flights", (AIRLINES, AIRPORTS, FLIGHTS))),
        "SELECT grouped.faa, grouped.name, COUNT(*) AS count FROM public.flights AS t0 "
        "JOIN public.airports AS grouped ON grouped.faa = t0.origin "
        "GROUP BY grouped.name, grouped.faa",
    )


async def test_the_noun_of_a_table_named_with_the_schemas_shared_prefix_is_read_without_it():
    # Postgres folds "sbTransaction" to one word; every table's name starts "sb"
    transaction = TableInfo(
        "public", "sbtransaction",
        columns=(
            ColumnInfo("sbtxid", "text", False),
            ColumnInfo("sbtxtype", "text", False),
            ColumnInfo("sbtxamount", "numeric", False),
            ColumnInfo("sbtxprice", "numeric", False),
        ),
        primary_key=("sbtxid",),
    )  # fmt: skip
    customer = TableInfo(
        "public", "sbcustomer", columns=(ColumnInfo("sbcustid", "text", False),),
        primary_key=("sbcustid",),
    )  # fmt: skip
    per_type = (
        "SELECT t0.sbtxtype, SUM(t0.sbtxamount) FROM public.sbtransaction AS t0 "
        "GROUP BY t0.sbtxtype"
    )
    ticker = TableInfo(
        "public", "sbticker", columns=(ColumnInfo("sbtickerid", "text", False),),
        primary_key=("sbtickerid",),
    )  # fmt: skip
    catalog = Catalog("broker", (transaction, customer, ticker))
    filtered = await _filtered(per_type, "transactions over 1000", catalog, Linker({}))
    assert_same_sql(
        filtered, per_type.replace(" GROUP BY", " WHERE (t0.sbtxamount > 1000) GROUP BY")
    )
