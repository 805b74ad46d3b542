"""Result-column names, the one place they are decided: products read a result by its
column names, so the linker and the intent compiler name the same things the same way.

A column keeps its own name (``company_id``), with its table's name in front when two
shown columns share it (``companies_name``, ``contacts_name``); an aggregate is named by
its function and column (``sum_amount``, ``count_distinct_customer_id``), a row count is
``count``; names are lower-case snake case of at most 60 characters.
"""

from __future__ import annotations

import re

_MAX_CHARS = 60


def snake(text: str) -> str:
    """``text`` as a lower-case snake-case name (``value`` when nothing is left)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:_MAX_CHARS] or "value"


def aggregate_name(function: str, column: str = "") -> str:
    """``sum_amount``, ``count_distinct_customer_id``; ``count`` for a row count."""
    prefix = {"COUNT_DISTINCT": "count_distinct", "COUNT_COL": "count"}.get(
        function.upper(), function.lower()
    )
    return f"{prefix}_{column}" if column else prefix


def shown_column_name(table: str, column: str, *, shared: bool) -> str:
    """A shown column's name: its own, or ``table_column`` when another shown column of
    another table has the same name."""
    return f"{table}_{column}" if shared else column


class NameClaims:
    """Distinct names for one result, claimed in column order: the first free choice, or
    the last one suffixed with the column's key."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def claim(self, key: str, *choices: str) -> str:
        label = "value"
        for choice in choices:
            label = snake(choice)
            if label not in self._taken:
                break
        else:
            label = f"{label}_{key}"
        self._taken.add(label)
        return label
