"""Issue 45 (s60): where the columns that name a listed row come from when the rows'
own table says less than a reader needs.

A table of measures whose key is another table's key (Spider's ``cars_data``, one row
per ``car_names`` row) names its rows by that table's name; a text key said beside a
name (a ticker's symbol) names the rows on every path that says what names a row, a
ranking's grouped answer as much as a listing. The real linker and verifier read each
question; with_labels edits the statements the linker hands back."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._catalog import JoinInfo, JoinOrigin
from services.sql.results import with_labels
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)

_NAMES = TableInfo(
    "public",
    "car_names",
    columns=(
        col("makeid"),
        col("model", "text", ("chevrolet", "buick")),
        col("make", "text", ("chevrolet chevelle malibu", "buick skylark 320")),
    ),
    primary_key=("makeid",),
    foreign_keys=(ForeignKeyInfo(("model",), "public.model_list", ("model",)),),
)
_MODELS = TableInfo(
    "public",
    "model_list",
    columns=(col("modelid"), col("model", "text", ("chevrolet", "buick"))),
    primary_key=("modelid",),
)
_DATA_COLUMNS = (
    col("id"),
    col("mpg", "text", ("18", "15", "null")),
    col("cylinders"),
    col("horsepower", "text", ("130", "null")),
    col("weight"),
)


def _cars(
    *, declared: bool = True, extra: tuple[ColumnInfo, ...] = (), reversed_: bool = False
) -> Catalog:
    """car_1's cars: ``cars_data.id`` is a ``car_names.makeid`` (declared, or inferred
    from the data, in either direction)."""
    data = TableInfo(
        "public",
        "cars_data",
        columns=(*_DATA_COLUMNS, *extra),
        primary_key=("id",),
        foreign_keys=(
            (ForeignKeyInfo(("id",), "public.car_names", ("makeid",)),) if declared else ()
        ),
    )
    if reversed_:
        join = JoinInfo(
            "public.car_names", ("makeid",), "public.cars_data", ("id",), JoinOrigin.INFERRED
        )
    else:
        join = JoinInfo(
            "public.cars_data", ("id",), "public.car_names", ("makeid",), JoinOrigin.INFERRED
        )
    return Catalog("car_1", (_NAMES, _MODELS, data), joins=() if declared else (join,))


_HEAVIEST = (
    "SELECT t0.id AS id, t0.weight AS weight FROM public.cars_data AS t0 "
    "ORDER BY weight DESC NULLS LAST, id LIMIT 5"
)


def _shown(select: exp.Select) -> list[str]:
    return [e.alias_or_name for e in select.expressions]


def test_rows_with_no_label_are_named_by_the_table_their_key_is_one_to_one_with():
    """ "Which 5 cars are the heaviest?" lists ``cars_data``, which has no text but
    numbers: its id names no car, ``car_names`` does, and its key is that id. A LEFT JOIN
    key to key repeats no row and drops none: the same rows, the make beside the key.
    The model is a reference to another table's rows (a model's), not this car's name.
    Declared or inferred, either way round: the keyless catalog reads the same."""
    for catalog in (_cars(), _cars(declared=False), _cars(declared=False, reversed_=True)):
        shown = sqlglot.parse_one(with_labels(_HEAVIEST, catalog), dialect="postgres")
        assert isinstance(shown, exp.Select)
        assert _shown(shown) == ["id", "make", "weight"]
        (join,) = shown.args["joins"]
        assert join.side == "LEFT" and join.this.name == "car_names"
        assert {c.name for c in join.args["on"].find_all(exp.Column)} == {"makeid", "id"}
        assert shown.args["limit"] is not None and shown.args["order"] is not None
    linked = linked_statement("Which 5 cars are the heaviest?", _cars(), TODAY)
    assert "make" in _shown(linked) and "weight" in _shown(linked)


def test_rows_their_own_table_names_or_the_question_picks_are_left_alone():
    """Not where the table has words of its own (a colour names what kind of car the
    row is well enough to be its label), where the rows are picked by their key (the
    question said whose), where the statement groups, or where the key is no other
    table's key (no reference: nothing is one-to-one with the row)."""
    own = _cars(extra=(col("colour", "text", ("red", "blue")),))
    assert with_labels(_HEAVIEST, own) == _HEAVIEST
    picked = "SELECT t0.weight AS weight FROM public.cars_data AS t0 WHERE t0.id = 3"
    assert with_labels(picked, _cars()) == picked
    grouped = (
        "SELECT t0.cylinders AS cylinders, COUNT(*) AS count FROM public.cars_data AS t0 "
        "GROUP BY t0.cylinders"
    )
    assert with_labels(grouped, _cars()) == grouped
    bare = TableInfo("public", "cars_data", columns=_DATA_COLUMNS, primary_key=("id",))
    unrelated = Catalog("car_1", (_NAMES, _MODELS, bare), joins=())
    assert with_labels(_HEAVIEST, unrelated) == _HEAVIEST


def _ticker(symbols: tuple[str, ...], names: tuple[str, ...]) -> TableInfo:
    return TableInfo(
        "public",
        "sbticker",
        columns=(
            col("sbtickerid", "character varying(20)"),
            col("sbtickersymbol", "character varying(10)", symbols),
            col("sbtickername", "character varying(100)", names),
            col("sbtickertype", "character varying(20)", ("etf", "stock")),
            col("sbtickerexchangecode", "character varying(10)", ("NQ", "NY", "NX")),
        ),
        primary_key=("sbtickerid",),
    )


_TRANSACTIONS = TableInfo(
    "public",
    "sbtransaction",
    columns=(
        col("sbtxid", "character varying(50)"),
        col("sbtxcustid", "character varying(20)"),
        col("sbtxtickerid", "character varying(20)"),
        col("sbtxshares", "numeric(10,2)"),
        col("sbtxtype", "character varying(20)", ("buy", "sell")),
    ),
    primary_key=("sbtxid",),
    foreign_keys=(
        ForeignKeyInfo(("sbtxtickerid",), "public.sbticker", ("sbtickerid",)),
        ForeignKeyInfo(("sbtxcustid",), "public.sbcustomer", ("sbcustid",)),
    ),
)
_CUSTOMERS = TableInfo(
    "public",
    "sbcustomer",
    columns=(
        col("sbcustid", "character varying(20)"),
        col("sbcustname", "character varying(100)", ("Ada", "Bo")),
        col("sbcustcountry", "character varying(50)", ("Canada", "USA")),
        col("sbcustjoindate", "date"),
    ),
    primary_key=("sbcustid",),
)
_SYMBOLS = ("AAPL", "MSFT", "VTI", "SPY", "QQQ")
_TICKER_NAMES = ("Apple Inc.", "Microsoft", "Vanguard Total", "SPDR S&P 500", "Invesco QQQ")


def test_a_ranking_of_tickers_shows_their_symbol_as_a_listing_does():
    """ "Which 4 tickers had the most shares traded?" groups transactions by ticker and
    shows each ticker by what names it: its name, and its symbol, a text key as varied
    as the name, as "Which 4 tickers have the highest average ..." shows it. A code of
    something else the ticker has (its exchange's) and a kind (its type) name no ticker."""
    broker = Catalog("broker", (_CUSTOMERS, _ticker(_SYMBOLS, _TICKER_NAMES), _TRANSACTIONS))
    ranked = linked_statement("Which 4 tickers had the most shares traded?", broker, TODAY)
    shown = _shown(ranked)
    assert "sbtickersymbol" in shown and "sbtickername" in shown
    assert "sbtickertype" not in shown and "sbtickerexchangecode" not in shown
    assert ranked.args["limit"] is not None
    assert "sbtickersymbol" in {e.name for e in ranked.args["group"].expressions}


def test_a_symbol_fewer_rows_share_than_a_name_is_no_label():
    """A "symbol" many tickers share (two values over five names) is a kind of row, not
    what it is called: the ranking shows the name alone."""
    broker = Catalog("broker", (_CUSTOMERS, _ticker(("A", "B"), _TICKER_NAMES), _TRANSACTIONS))
    ranked = linked_statement("Which 4 tickers had the most shares traded?", broker, TODAY)
    assert "sbtickersymbol" not in _shown(ranked)
    assert "sbtickername" in _shown(ranked)


def test_a_ranked_entity_asked_another_value_of_shows_its_key_then_its_name():
    """ "What type of ticker is the ticker with the most shares traded?" was composed
    name first, key after, where the ranking it spells out ("Which 4 tickers had the
    most shares traded?") and the follow-up asking it of that answer ("what type of
    ticker is that?") show the key, then the name: the same row read as another. A
    grouped entity shows its key before its names, whichever reader composed it; moving
    a column changes no row."""
    broker = Catalog("broker", (_CUSTOMERS, _ticker(_SYMBOLS, _TICKER_NAMES), _TRANSACTIONS))
    asked = "What type of ticker is the ticker with the most shares traded?"
    typed = _shown(linked_statement(asked, broker, TODAY))
    ranked = _shown(linked_statement("Which 4 tickers had the most shares traded?", broker, TODAY))
    assert typed[:3] == ["sbtickerid", "sbtickername", "sbtickertype"]
    assert ranked[:2] == typed[:2]
    name_first = (
        "SELECT t1.sbtickername AS sbtickername, t1.sbtickerid AS sbtickerid, "
        "SUM(t0.sbtxshares) AS total FROM public.sbtransaction AS t0 JOIN public.sbticker AS t1 "
        "ON t1.sbtickerid = t0.sbtxtickerid GROUP BY t1.sbtickerid, t1.sbtickername"
    )
    moved = sqlglot.parse_one(with_labels(name_first, broker), dialect="postgres")
    assert isinstance(moved, exp.Select)
    assert _shown(moved) == ["sbtickerid", "sbtickername", "total"]


def test_a_key_shown_first_or_named_by_position_is_not_moved():
    """A key already before its names, a key of another table than the names', and a
    statement whose GROUP BY or ORDER BY names columns by position (moving one would
    change what the position names) are left as they are."""
    broker = Catalog("broker", (_CUSTOMERS, _ticker(_SYMBOLS, _TICKER_NAMES), _TRANSACTIONS))
    for sql in (
        "SELECT t1.sbtickerid AS sbtickerid, t1.sbtickername AS sbtickername, "
        "SUM(t0.sbtxshares) AS total FROM public.sbtransaction AS t0 JOIN public.sbticker AS t1 "
        "ON t1.sbtickerid = t0.sbtxtickerid GROUP BY t1.sbtickerid, t1.sbtickername",
        "SELECT t1.sbtickername AS sbtickername, t1.sbtickerid AS sbtickerid, "
        "SUM(t0.sbtxshares) AS total FROM public.sbtransaction AS t0 JOIN public.sbticker AS t1 "
        "ON t1.sbtickerid = t0.sbtxtickerid GROUP BY 1, 2",
        "SELECT t1.sbtickername AS sbtickername, t0.sbtxid AS sbtxid FROM "
        "public.sbtransaction AS t0 JOIN public.sbticker AS t1 "
        "ON t1.sbtickerid = t0.sbtxtickerid GROUP BY t1.sbtickername, t0.sbtxid",
    ):
        assert with_labels(sql, broker) == sql
