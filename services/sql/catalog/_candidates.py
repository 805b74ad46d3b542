"""Join candidates from names: which ``child.column`` may reference ``parent.key``.

``child.column`` may reference ``parent.key`` (a single-column key: declared, UNIQUE, or
inferred) when their types are of one family and one of these holds:

- the column has the key's own name (``treatments.patient_id -> patients.patient_id``);
- the column is ``<parent>_id`` / ``<parent>id``, singular or of the name's last word
  (``coupons.merchant_id -> merchants.mid``);
- the column ends with the key's name once the prefix every table shares is dropped
  (``sbTransaction.sbTxCustId -> sbCustomer.sbCustId`` in an ``sb…`` schema; in a
  warehouse of many sources, the short prefix the parent shares with its siblings);
- the column, less an ``id`` ending, is the parent's name (``model_list.maker ->
  car_makers.id``, ``countries.continent -> continents.contid``);
- never a column whose name says it counts or sums (``course.num_semesters``, whose
  values 1..8 are all semester ids: a measure is no reference, whatever it holds);
- with the data only: the column's name holds the parent's name (``flights.sourceairport
  -> airports.airportcode``), or two text columns share a name and values (a city in two
  tables), the weakest kind; not when both are a handful of categories the catalog
  samples (a status, a device type: the same labels, no reference).

A catalog never checked against its data is joined by the names' candidates alone
(:func:`name_candidates`); ``_inference`` confirms the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.sql.catalog._catalog import Catalog, ColumnInfo, JoinInfo, JoinOrigin, TableInfo
from services.sql.words import common_prefix, measure_name, name_words, stem


def is_number(data_type: str) -> bool:
    """A numeric column type as the catalog reads ``information_schema`` types."""
    return data_type.startswith(
        ("smallint", "integer", "bigint", "numeric", "real", "double", "money")
    )


def type_family(data_type: str) -> str:
    if data_type.startswith(("smallint", "integer", "bigint", "numeric")):
        return "int"
    if data_type.startswith(("text", "character", "citext", "varchar")):
        return "text"
    if data_type == "uuid":
        return "uuid"
    return data_type


UNCHECKED = "names only (the data was not read)"
OVERLAP_EVIDENCE = "same name and shared values"


def single_keys(table: TableInfo) -> list[ColumnInfo]:
    """The table's single-column keys: its primary key (declared or inferred), then each
    one-column UNIQUE constraint."""
    keys = [table.primary_key] if len(table.primary_key) == 1 else []
    keys += [u for u in table.unique_keys if len(u) == 1 and u not in keys]
    return [c for (name,) in keys if (c := table.column(name)) is not None]


def name_candidates(catalog: Catalog) -> list[JoinInfo]:
    """Joins the names alone suggest, child column to a single-column key of the parent
    (what a catalog never checked against its data is joined by)."""
    return [info for info, data_only in join_candidates(catalog) if not data_only]


def join_candidates(catalog: Catalog) -> list[tuple[JoinInfo, bool]]:
    """Every candidate join, each with whether only the data can confirm it (a column
    whose name holds the parent's name; same-named text columns)."""
    prefixes = shared_prefixes([t.name for t in catalog.tables])
    found: list[tuple[JoinInfo, bool]] = []
    seen: set[tuple[str, str, str, str]] = set()

    def add(
        child: TableInfo, column: str, parent: TableInfo, key: str, why: str, *, data: bool
    ) -> None:
        mark = (child.qualified, column, parent.qualified, key)
        if mark not in seen:
            seen.add(mark)
            info = JoinInfo(
                child.qualified, (column,), parent.qualified, (key,), JoinOrigin.INFERRED, why
            )
            found.append((info, data))

    # every column by its name, in catalog and column order: a key is compared with each
    # name once, not with each column of each table
    holders: dict[str, list[tuple[int, TableInfo, ColumnInfo]]] = {}
    order = 0
    for child in catalog.tables:
        for column in child.columns:
            holders.setdefault(column.name.lower(), []).append((order, child, column))
            order += 1
    for parent in catalog.tables:
        keys = single_keys(parent)
        if not keys:
            continue
        words = name_words(parent.name)
        last = stem(words[-1]) if words else ""
        base = parent.name.lower()
        prefix = prefixes.get(parent.name, "").lower()
        if prefix and base.startswith(prefix):
            base = base[len(prefix) :]
        whole = stem(base)
        forms = {f"{whole}_id", f"{whole}id", f"{last}_id", f"{last}id"}
        for key in keys:
            core = key.name.lower()
            if prefix and core.startswith(prefix):
                core = core[len(prefix) :]
            family = type_family(key.data_type)
            named = [
                holder
                for name, found in holders.items()
                if _may_name(name, key, (forms, core), (whole, last))
                for holder in found
            ]
            for _, child, column in sorted(named, key=lambda holder: holder[0]):
                if child.qualified == parent.qualified or type_family(column.data_type) != family:
                    continue
                if measure_name(column.name):
                    continue  # "num_semesters" counts semesters, it names none
                why = _named_reference(column, key, (forms, core), child, (whole, last))
                if why:
                    add(child, column.name, parent, key.name, why, data=False)
                elif _holds_name(column.name, last, key):
                    holds = f"{column.name} holds {last}"
                    add(child, column.name, parent, key.name, holds, data=True)
    found += [(info, True) for info in _same_named(catalog, seen)]
    return found


# A prefix a group of tables shares within a wider catalog (a source's ``sb``, ``crm_``) is
# short; a longer shared start is a word of their names (``wallet_…``), not a prefix.
SOURCE_PREFIX_MAX = 4


def shared_prefixes(names: Sequence[str]) -> dict[str, str]:
    """Each table name's prefix: the one every name shares, or, where they share none, the
    short one its siblings share (names beginning with the same two letters, three or more
    of them, as ``common_prefix`` reads a group)."""
    every = common_prefix(list(names))
    if every:
        return dict.fromkeys(names, every)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name[:2].lower(), []).append(name)
    found: dict[str, str] = {}
    for group in groups.values():
        shared = common_prefix(group) if len(group) >= 3 else ""
        if 2 <= len(shared) <= SOURCE_PREFIX_MAX:
            found |= dict.fromkeys(group, shared)
    return found


def _named_reference(
    column: ColumnInfo,
    key: ColumnInfo,
    key_names: tuple[set[str], str],
    child: TableInfo,
    parent_names: tuple[str, str],
) -> str:
    """Why the column's name says it references ``key``, or empty. ``key_names``: the
    ``<parent>_id`` forms and the key's name without the schema's shared prefix."""
    forms, core = key_names
    if child.primary_key == (column.name,) and column.name != key.name:
        return ""
    name = column.name.lower()
    if name == key.name.lower():
        if child.primary_key != (column.name,) or len(child.primary_key) > 1:
            return f"same name as the key {key.name}"
        return ""
    if name in forms:
        return f"{column.name} names the table"
    if len(core) >= 5 and name.endswith(core) and core not in ("id", "_id"):
        return f"{column.name} ends with the key's name"
    bare = name.removesuffix("_id").removesuffix("id").rstrip("_")
    if bare and len(bare) >= 3 and stem(bare) in parent_names:
        return f"{column.name} is the table's name"
    return ""


def _may_name(
    name: str, key: ColumnInfo, key_names: tuple[set[str], str], parent_names: tuple[str, str]
) -> bool:
    """Whether a column of this (lower-case) name could reference ``key`` by any rule of
    :func:`_named_reference` or :func:`_holds_name`, whatever table holds it."""
    forms, core = key_names
    if name == key.name.lower() or name in forms:
        return True
    if len(core) >= 5 and name.endswith(core) and core not in ("id", "_id"):
        return True
    bare = name.removesuffix("_id").removesuffix("id").rstrip("_")
    if bare and len(bare) >= 3 and stem(bare) in parent_names:
        return True
    return _holds_name(name, parent_names[1], key)


def _holds_name(column: str, last: str, key: ColumnInfo) -> bool:
    """``sourceairport`` holds ``airport``: a reference only the data can confirm."""
    name = column.lower()
    return len(last) >= 4 and last in name and name != key.name.lower()


def _same_named(catalog: Catalog, seen: set[tuple[str, str, str, str]]) -> list[JoinInfo]:
    """Text columns two tables share by name, neither a key of its table: joined when
    their values overlap (checked later), the child being the later table."""
    by_name: dict[str, list[tuple[int, int, TableInfo, ColumnInfo]]] = {}
    for i, table in enumerate(catalog.tables):
        for position, column in enumerate(table.columns):
            if type_family(column.data_type) == "text" and column.name not in table.primary_key:
                by_name.setdefault(column.name, []).append((i, position, table, column))
    found = []
    for holders in by_name.values():
        for k, (i, position, a, column) in enumerate(holders):
            for j, _, b, other in holders[k + 1 :]:
                if column.sample_values and other.sample_values:
                    # a few values both tables sample (a status, a type) are categories
                    # of each, not a reference from one to the other
                    continue
                if (b.qualified, column.name, a.qualified, column.name) in seen or (
                    a.qualified,
                    column.name,
                    b.qualified,
                    column.name,
                ) in seen:
                    continue
                info = JoinInfo(
                    b.qualified,
                    (column.name,),
                    a.qualified,
                    (column.name,),
                    JoinOrigin.INFERRED,
                    OVERLAP_EVIDENCE,
                )
                found.append((i, j, position, info))
    return [info for *_, info in sorted(found, key=lambda f: f[:3])]
