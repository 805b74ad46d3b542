"""The nouns of a follow-up placed on the schema: which words a table's name or a
column's spells, which tables a table's rows refer to, and what names a table's rows
when they are shown grouped.

Both the follow-ups that rework an earlier statement (``_followup``) and those about the
rows it read (``_rows``) place the user's nouns; one reading of them keeps the two from
drifting apart, so "per car maker" and "which car makers …" name the same table.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, Catalog, TableInfo
from services.sql.conversation._statement import readable
from services.sql.gate import identifier
from services.sql.linker import entity_columns
from services.sql.words import STOP_WORDS, name_words, stem, word_match


def content_words(text: str) -> list[str]:
    """The words of ``text`` that can name something (stop words dropped), as a name's
    words are read, so a user's phrase and a table's name compare word for word."""
    return [w for w in name_words(text) if w not in STOP_WORDS]


def spelled_share(words: list[str], column: str) -> float:
    """How fully ``words`` spell a column's name (1.0: each word matches a name word)."""
    names = name_words(column)
    if not words or not names:
        return 0.0

    def match(word: str, name: str) -> float:
        return 1.0 if stem(word) == stem(name) else word_match(word, name)

    return sum(max(match(w, n) for n in names) for w in words) / len(words)


def covers(words: list[str], name: str) -> bool:
    """Whether ``words`` spell every word of a name (nothing of it left unsaid)."""
    return spelled_share(content_words(name), " ".join(words)) >= 0.99


def names_table(words: list[str], table: TableInfo, catalog: Catalog) -> bool:
    """Whether ``words`` say the table itself ("car maker" → ``car_makers``), so a
    regroup by them groups its rows (by key, shown by what names them), not the values of
    one column that happens to be called as the table is (``car_makers.maker``)."""
    name = readable(table, catalog)
    return spelled_share(words, name) >= 0.99 and covers(words, name)


def references_of(
    table: TableInfo, catalog: Catalog
) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """(local columns, referenced table, its columns): declared keys, then the joins the
    catalog inferred from the data (a warehouse that declares none)."""
    found = [(fk.columns, fk.referenced_table, fk.referenced_columns) for fk in table.foreign_keys]
    for join in catalog.joins or ():
        if join.child == table.qualified:
            found.append((join.child_columns, join.parent, join.parent_columns))
    return found


def shown_entity(table: TableInfo, alias: str) -> tuple[list[exp.Column], list[exp.Column]] | None:
    """(the columns shown, the key grouped by besides) for rows of ``table`` under
    ``alias``: what names each row and its one-column key, by the rule the linker shows
    a grouped entity by (``linker.entity_columns``), so "and per continent?" shows what
    "How many cars does each continent have?" shows. A table keyed by a code and named
    by nothing else is shown by its code; None where nothing but a number key names a
    row (no label to group by)."""
    columns = entity_columns(table)
    keyed = len(table.primary_key) == 1
    names = columns[1:] if keyed else columns
    key = [exp.column(identifier(table.primary_key[0]), table=identifier(alias))] if keyed else []
    if not names:
        column = table.column(table.primary_key[0]) if keyed else None
        if column is None or not column.data_type.startswith(TEXT_TYPES):
            return None
        return key, key
    return [exp.column(identifier(n), table=identifier(alias)) for n in names], key
