"""What a result looks like to a product: values encoded losslessly (``_values``), columns
named the same way everywhere (``_names``), and a chart chosen by fixed rules
(``_charts``), a ranking as it would run without its row cut (``_ranking``), and the
columns that chose a listing's rows shown beside what it asks (``_evidence``), and the
names of the rows it lists before it (``_labels``), a time grouping shown as a year's
number or a period's first day (``_periods``): these two read and edit a statement
one way (``_select``), and every path asks them in one place (``_shown``). A statement
that joins only to restrict the rows it shows is written as their having a match
(``_semijoin``), as a follow-up narrowing them is: one builder writes that sub-query for
both (``_exists``).
"""

from __future__ import annotations

from services.sql.results._charts import choose_chart
from services.sql.results._evidence import deciding_columns, show_deciding, with_deciding
from services.sql.results._exists import conjoined, exists
from services.sql.results._labels import (
    code_description,
    label_columns,
    name_columns,
    numbered_key,
    repeats,
    show_labels,
    with_labels,
)
from services.sql.results._names import NameClaims, aggregate_name, shown_column_name
from services.sql.results._pairs import with_pairs
from services.sql.results._periods import period_grain, period_node, period_sql, period_words
from services.sql.results._ranking import ranking_cut
from services.sql.results._select import own_tables
from services.sql.results._semijoin import as_asked, joined, semi_join, with_semijoins
from services.sql.results._shown import with_shown
from services.sql.results._values import (
    column_kind,
    decode,
    encode,
    encoded_size,
    fingerprint,
    register_loaders,
)

__all__ = [
    "NameClaims",
    "aggregate_name",
    "as_asked",
    "choose_chart",
    "code_description",
    "column_kind",
    "conjoined",
    "deciding_columns",
    "decode",
    "encode",
    "encoded_size",
    "exists",
    "fingerprint",
    "joined",
    "label_columns",
    "name_columns",
    "numbered_key",
    "own_tables",
    "period_grain",
    "period_node",
    "period_sql",
    "period_words",
    "ranking_cut",
    "register_loaders",
    "repeats",
    "semi_join",
    "show_deciding",
    "show_labels",
    "shown_column_name",
    "with_deciding",
    "with_labels",
    "with_pairs",
    "with_semijoins",
    "with_shown",
]
