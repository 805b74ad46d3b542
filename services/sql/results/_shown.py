"""Which columns a statement shows: one place, for every path that writes one.

A question linked outright and a follow-up built on an earlier statement ("only the ones
under thirty", "of those, which were built after 2000?") end in statements of the same
shapes, and a follow-up must show what its question spelled out shows, or the same rows
read as other rows. Both paths end here: the columns that chose a listing's rows
(``_evidence``: the ages a range kept), then the key and names that say whose each row is
(``_labels``: the key beside a name labelling another value, a grouped entity's key and
names). The linker applies it to the statement it composed; the follow-up step to the
statement it edited (``as_asked``), so an edit that adds a range shows the compared
column as the first question with that range does. Only columns are added, of rows
already returned: the rows stay the rows, and a statement already showing them is left as
it is.
"""

from __future__ import annotations

from services.sql.catalog import Catalog
from services.sql.results._evidence import with_deciding
from services.sql.results._labels import with_labels


def with_shown(sql: str, catalog: Catalog) -> str:
    """``sql`` showing the columns that chose its rows, then those that say whose each
    row is (unchanged text where it shows them already)."""
    return with_labels(with_deciding(sql, catalog), catalog)


def with_edit_shown(sql: str, catalog: Catalog) -> str:
    """An edited follow-up's ``sql`` showing what its edit brought in, and nothing else.

    The earlier statement's columns are what the user saw, whoever wrote it (the linker,
    a model, a confirmed answer): a limit, a swapped value or a filter on a value already
    shown keeps them as they were. Where the edit chose rows by a column the earlier
    answer did not show (a range added: "only the ones under thirty"), that column is
    shown as the question spelled out shows it, and then the names that say whose each
    value is (``_labels``: a key beside a name labelling another value)."""
    deciding = with_deciding(sql, catalog)
    return sql if deciding == sql else with_labels(deciding, catalog)
