"""Look-alike tables found from the structure, and the table each family means."""

from __future__ import annotations

from services.sql import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._families import (
    choose_canonical,
    describe_families,
    lookalike_groups,
    mark_lookalikes,
    needs_rows,
    referenced_tables,
    schema_sizes,
)

_SINGER = (
    ColumnInfo("singer_id", "integer", False),
    ColumnInfo("name", "text", True),
    ColumnInfo("age", "integer", True),
)
_CONCERT = (ColumnInfo("concert_id", "integer", False), ColumnInfo("singer_id", "integer", True))


def _table(name: str, columns: tuple[ColumnInfo, ...] = _SINGER, **kwargs: object) -> TableInfo:
    schema, _, bare = name.rpartition(".")
    return TableInfo(schema or "public", bare, columns=columns, **kwargs)  # type: ignore[arg-type]


def _groups(*tables: TableInfo) -> list[list[str]]:
    return [[t.qualified for t in group] for group in lookalike_groups(tables)]


def test_copies_share_columns_and_the_noun_with_warehouse_parts():
    tables = [
        _table("singer"),
        _table("stg_singer"),
        _table("singer_archive"),
        _table("singer_2019"),
        _table("archive.singer"),
        _table("raw_concert_singer_singer_emea"),  # a copy loaded under a source's name
        _table("concert", _CONCERT),
    ]
    assert _groups(*tables) == [
        [
            "public.singer",
            "public.stg_singer",
            "public.singer_archive",
            "public.singer_2019",
            "archive.singer",
            "public.raw_concert_singer_singer_emea",
        ]
    ]


def test_the_same_columns_under_other_nouns_are_not_copies():
    # settings and options: one shape, two things (no name holds the other's words)
    assert _groups(_table("tbl_settings"), _table("tbl_options")) == []
    # the columns differ: a table and its summary share a noun, not their rows
    summary = _table("singer_summary", (ColumnInfo("age", "integer", True),))
    assert _groups(_table("singer"), summary) == []


def test_affixes_are_learned_from_the_copies_a_warehouse_keeps():
    # "stg" and "2021" make copies of orders; so they make copies of customers too, though
    # no plain "customers" table is here; suppliers and products share a shape and "stg",
    # but not a noun.
    orders = (ColumnInfo("order_id", "integer", False),)
    tables = [
        _table("orders", orders),
        _table("stg_orders", orders),
        _table("orders_2021", orders),
        _table("stg_customers"),
        _table("customers_2021"),
        _table("stg_suppliers", _CONCERT),
        _table("stg_products", _CONCERT),
    ]
    assert _groups(*tables) == [
        ["public.orders", "public.stg_orders", "public.orders_2021"],
        ["public.stg_customers", "public.customers_2021"],
    ]


def test_the_canonical_table_is_referenced_then_plainly_named_then_public_then_larger():
    singer, archived = _table("singer"), _table("archive.singer")
    staged = _table("stg_singer")
    concert = _table(
        "concert",
        _CONCERT,
        foreign_keys=(ForeignKeyInfo(("singer_id",), "archive.singer", ("singer_id",)),),
    )
    catalog = Catalog("w", (singer, archived, staged, concert))
    sizes = schema_sizes(catalog.tables)
    members = [archived, singer, staged]

    def chosen(referenced: set[str], rows: dict[str, int]) -> tuple[str, str]:
        family = choose_canonical(members, referenced=referenced, schema_sizes=sizes, rows=rows)
        return family.canonical.qualified, family.reason

    assert referenced_tables(catalog) == {"archive.singer"}
    assert chosen(referenced_tables(catalog), {}) == (
        "archive.singer",
        "other tables reference it",
    )
    assert chosen(set(), {}) == ("public.singer", "it is in the default schema")
    # with nothing else to tell them apart, the one holding more rows
    twins = [_table("stg_singer"), _table("raw_singer")]
    assert needs_rows(twins, referenced=set(), schema_sizes=sizes)
    assert not needs_rows(members, referenced=set(), schema_sizes=sizes)
    family = choose_canonical(
        twins,
        referenced=set(),
        schema_sizes=sizes,
        rows={"public.stg_singer": 3, "public.raw_singer": 7},
    )
    assert (family.canonical.name, family.reason) == ("raw_singer", "it holds the most rows")


def test_marked_copies_say_which_table_they_copy_and_why():
    members = [_table("singer"), _table("singer_archive")]
    catalog = Catalog("w", tuple(members))
    family = choose_canonical(members, referenced=set(), schema_sizes={}, rows={})
    marked = mark_lookalikes(catalog, [family])
    copy = marked.table("singer_archive")
    assert copy is not None and copy.lookalike_of == "public.singer"
    assert "its name is the plain noun" in copy.lookalike_evidence
    assert marked.table("singer").lookalike_of == ""  # type: ignore[union-attr]
    assert describe_families(marked) == [
        "look-alikes of public.singer (its name is the plain noun): public.singer_archive"
    ]


def test_a_word_that_is_a_whole_table_name_is_never_an_affix():
    # a source named after its tables ("concert_singer") makes "singer" an extra word of
    # a concert copy and "concert" one of a singer copy; both are still nouns, so the
    # singers' and the concerts' statistics (one shape) stay apart
    stats = (ColumnInfo("year", "integer", False), ColumnInfo("total", "numeric", True))
    tables = [
        _table("singer"),
        _table("stg_concert_singer", _SINGER),
        _table("concert", _CONCERT),
        _table("stg_singer_concert", _CONCERT),
        _table("singer_stats", stats),
        _table("concert_stats", stats),
    ]
    assert _groups(*tables) == [
        ["public.singer", "public.stg_concert_singer"],
        ["public.concert", "public.stg_singer_concert"],
    ]
