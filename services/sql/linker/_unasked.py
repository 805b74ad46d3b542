"""A listing shows a row's key by the label rule, whatever wording named the rows.

"Which museums did the visitors visit?" names its rows by the table ("museums"), read as
what names a museum: its key and its name (``_lookup.label_columns``); "Which museums did
the visitors with membership level 6 visit?" is read by the clause reader, which names a
museum by its name alone (``clauses._planning._labels``). The same shape of statement
(one table's rows, restricted through joins) showed the key for one wording and not
the other, so a follow-up and its question spelled out differed in columns by which
reader happened to link them.

Where the words did not ask for the key and the plan lists rows (no measure, no group,
no cut, no DISTINCT the words asked for), a key of numbers read only as a name (a row
number; a text key such as an airport's code is what the rows are said by, and
stays) is left out of
the plan and the statement as composed decides it (``results.with_labels``): shown
beside another value of the rows, or where a DISTINCT through joins would otherwise
merge two rows of one name; a listing of the names alone, or the same rows written as
a semi-join (``results.with_semijoins``), shows the names. The rows stay the rows: a
key the label rule does not add is one no DISTINCT depends on. A grouped plan keeps
it (its groups are the rows, told apart by their key), as does a cut (its ties)."""

from __future__ import annotations

from services.sql.catalog import is_number
from services.sql.linker._plan import Dim, Plan
from services.sql.linker._vocabulary import Col
from services.sql.results import name_columns


def naming_number(col: Col) -> bool:
    """Whether ``col`` is its table's one-column key holding numbers: a row number, which
    says whose a value is only beside it (the label rule's call), unlike a text key (an
    airport's ``faa``, a ticker's symbol) that the rows are said by."""
    return col.table.primary_key == (col.column.name,) and is_number(col.column.data_type)


def _names_alone(plan: Plan, key: Dim) -> bool:
    """Whether what else ``plan`` shows of the key's table is its names, as the label
    rule reads them (``results.name_columns``): a DISTINCT the joins need over names is
    one the label rule keys again, so no two rows of one name merge. Beside a title or
    a code (an album's ``title``: no name to the label rule), or beside names the
    question states, the key stays, as composed."""
    names = {n.lower() for n in name_columns(key.col.table)}
    others = [d for d in plan.dims if d is not key and d.col.table is key.col.table]
    # names the question states ("the instructor Mara") say nothing the key does not:
    # the key is what such a listing shows
    stated = {c.key for c, _ in plan.filters} | {c.key for group in plan.ors for c, _ in group}
    return bool(others) and all(
        not d.grain and d.col.column.name.lower() in names and d.col.key not in stated
        for d in others
    )


def without_unasked_keys(plan: Plan) -> None:
    """``plan`` without the keys read only as what names a listed row (in place), where
    the names of the same table are shown beside it and the plan is a plain listing."""
    if plan.measures or plan.having or plan.limit or plan.distinct or plan.entity is not None:
        return
    for at in reversed(range(len(plan.dims))):
        dim = plan.dims[at]
        if (
            not dim.naming_key
            or any(t == f"d{at}" for t, _ in plan.order)  # ordered by: kept as composed
            or not _names_alone(plan, dim)
        ):
            continue
        del plan.dims[at]
        plan.order = [
            (f"d{int(t[1:]) - 1}" if t.startswith("d") and int(t[1:]) > at else t, desc)
            for t, desc in plan.order
        ]
